"""Opt-in speed-ups that are not UP: `shared_prompt` (each distinct prompt of a batch computed once, in training's
scoring forwards and `up-trl eval`'s generation) and `trainers` (the UP trainers with it, `--share_prompt_prefix`)."""
