"""The run layer: what `up-trl train` does around the trainer. Each module imports only those listed above it (and
any lower layer of the package: data, models, rewards, trainers, ...), never one below it.

- `checkpoints`: completion marks, the newest complete checkpoint; the rollout batch and settings on resume (mixins);
- `folder`: the output folder: its lock (one run at a time), its run record, what overwriting removes, what to resume;
- `card`: the run's model card and its plot;
- `callbacks`: the job's own (metrics.jsonl, the run record, checkpoint marks, a graceful stop, signs of life);
- `parts`: the opt-in parts, public, one line each where they apply (`with_parts`, `attach_parts`);
- `ending`: how a run ends: early saying why, crashed with one line (a failed save's own), launched, together;
- `job`: the job itself (`run_job`): its checks before any model loads (the folder under its lock, the data size,
  async GRPO's GPU), the data, the rewards, the trainer with its parts, training, what it writes.
"""
