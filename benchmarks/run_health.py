"""What a healthy run and an entropy runaway look like in the metrics a tracker shows: the tables of
docs/tracking.md, read from committed curves (no training).

    python benchmarks/run_health.py benchmarks/results

The runaway: the first collapse study's stress task (16 updates per rollout batch, a reward-irrelevant tail), seed 0,
DAPO against plain UP-DAPO and UP-DAPO with the rare clip (collapse_stress/curves.parquet). The healthy run: the
offline default, `up-trl train` (offline_default/metrics.jsonl), its first and last rollout batch (2 optimizer steps
each: the reward is logged at the first, UP's off-policy metrics at the second; each cell the mean of what was
logged). The runaway's cells are the values logged at the step named (the UP metrics every 25 steps).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

RUNAWAY_METRICS = ("entropy", "up/would_clip_frac", "up/positive_abs_log_ratio_mean")
RUNAWAY_STEPS = (1, 51, 101, 201, 276)
RUNAWAY_CONFIGS = ("DAPO", "UP-DAPO", "UP-DAPO + rare clip")
HEALTHY_METRICS = ("reward", "entropy", "completions/mean_length", "completions/clipped_ratio", "up/would_clip_frac")


def runaway_table(results: Path, seed: int = 0) -> str:
    curves = pd.read_parquet(results / "collapse_stress" / "curves.parquet")
    lines = ["| run | metric | " + " | ".join(f"step {s}" for s in RUNAWAY_STEPS) + " |", "|---|---|" + "---|" * 5]
    for config in RUNAWAY_CONFIGS:
        run = curves[(curves.config == config) & (curves.seed == seed)]
        for metric in RUNAWAY_METRICS:
            cells = [run[run.step == s][f"{metric}_curve"].mean() for s in RUNAWAY_STEPS]
            lines.append(f"| {config} | `{metric}` | " + " | ".join(f"{v:.2f}" for v in cells) + " |")
    return "\n".join(lines)


def healthy_table(results: Path) -> str:
    lines = (results / "offline_default" / "metrics.jsonl").read_text().splitlines()
    logged = pd.DataFrame([json.loads(line) for line in lines]).query("train_runtime != train_runtime")  # not NaN
    first, last = (logged[logged.step.isin(steps)] for steps in ((1, 2), (logged.step.max() - 1, logged.step.max())))
    table = [f"| metric | steps 1-2 | steps {last.step.min()}-{last.step.max()} |", "|---|---|---|"]
    table += [f"| `{m}` | {first[m].mean():.2f} | {last[m].mean():.2f} |" for m in HEALTHY_METRICS]
    return "\n".join(table)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", type=Path, help="the committed results folder")
    results = parser.parse_args(argv).results_dir
    print(healthy_table(results), runaway_table(results), sep="\n\n")


if __name__ == "__main__":
    main()
