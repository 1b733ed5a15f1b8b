"""Opt-in speed-ups that are not UP: `shared_prompt` (each distinct prompt of a batch computed once, in training's
scoring forwards, an opt-in part of `up_trl.run.parts`, and in `up-trl eval`'s generation)."""
