"""Opt-in speed-ups that are not UP, apart from the trainers' UP path so that a reader of UP can skip them.

- `shared_prompt`: each distinct prompt of a batch computed once (`share_prompt_prefix`, off by default), in the
  trainers' forwards and in `up-trl eval`'s generation.
"""
