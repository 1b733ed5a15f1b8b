"""Opt-in speed-ups that are not UP, apart from the UP trainers so that a reader of UP can skip them.

- `shared_prompt`: each distinct prompt of a batch computed once, in the trainers' scoring forwards and in
  `up-trl eval`'s generation;
- `trainers`: `SharedPromptUPGRPOTrainer` and `SharedPromptUPRLOOTrainer`, the UP trainers with that saving
  (`up-trl train --share_prompt_prefix true`).
"""
