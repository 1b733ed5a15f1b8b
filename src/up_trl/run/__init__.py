"""The run layer: what `up-trl train` does around the trainer, grouped by what happens to a run. Each module imports
only those listed above it (and any lower layer of the package: data, models, rewards, trainers, ...), never one
below it.

- `checkpoints`: a checkpoint's completion marks, resume from the newest complete one; the rollout batch in every
  checkpoint and the run's own optimizer settings on resume (two opt-in mixins);
- `folder`: the output folder: its lock (one run at a time), its run record, what overwriting removes, what to resume;
- `preflight`: the checks before any model loads (the folder, held under its lock; the data size; async GRPO's GPU);
- `card`: the run's model card and its plot;
- `callbacks`: the job's own (metrics.jsonl, the run record, each checkpoint marked complete last and old ones deleted
  after, a graceful stop, a step's random states, signs of life);
- `parts`: the opt-in parts, public, one line each where they apply (`with_parts`, `attach_parts`);
- `ending`: how a run ends: early, saying why; crashed, with an emergency checkpoint and one line (a failed save's
  own); launched with others, together;
- `job`: the job itself (`run_job`): the data, the rewards, the trainer with its parts, training, what it writes.
"""
