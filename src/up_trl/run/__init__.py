"""What a run writes and watches in its output folder: checkpoints, callbacks, the model card, plots; and the opt-in
parts (`parts`: the public names and one-line use of what goes beyond UP, all attached by `up-trl train`).

- `job`: the main job `up-trl train` runs once its input is checked; `preflight`: the output folder and what a
  previous run left there, held under the run's lock, before any model loads;
- `folder`: the files a run writes (`RUN_FILES`), refusing to overwrite a previous run, interrupted-run notes;
- `lock`: one run per output folder (filelock's `FileLock`); `checkpoint_complete`: a checkpoint is marked complete
  last, and resume takes the newest complete one; `rollout_checkpoint`: TRL's buffered rollout batch saved with each
  checkpoint; `resume_settings`: a resume trains with this run's optimizer settings; `unscorable`:
  `up/unscorable_frac`;
- `callbacks`: the non-finite step guard, the emergency checkpoint, metrics.jsonl, progress; `collapse_warning`:
  `CollapseWarningCallback`, the early warning of an entropy runaway, a reward collapse or a dead state;
- `card`: the model card; `names`: the objective's name for it; `plots`: the metrics figure.
"""
