"""What a run writes and watches in its output folder: checkpoints, callbacks, the model card, plots.

- `collapse_warning`: `CollapseWarningCallback`, the early warning of an entropy runaway, a reward collapse or a
  dead state (on by default in the UP trainers; only logs unless `up_stop_on_collapse`).
"""
