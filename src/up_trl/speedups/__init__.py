"""Opt-in speed-ups that are not UP, apart from the UP trainers: `shared_prompt` (each distinct prompt of a batch
computed once, in training's scoring forwards and `up-trl eval`'s generation) and `trainers` (the UP trainers with
that saving, `up-trl train --share_prompt_prefix true`).
"""
