"""Sample efficiency: UP against its parents, side by side, on a sparse-reward task a tiny model learns on CPU.

    python benchmarks/sample_efficiency.py                          # 8 configurations x 5 seeds (~10 min, 2 cores)
    python benchmarks/sample_efficiency.py --quick                  # 1 seed, 40 steps: a smoke run
    python benchmarks/sample_efficiency.py --corruption flip20      # reward hacking: 20% of labels flipped
    python benchmarks/sample_efficiency.py --corruption shortcut --configs DAPO UP-DAPO "UP-DAPO + guard"  # rare clip
    python benchmarks/sample_efficiency.py --configs RLOO UP-RLOO AsyncGRPO UP-AsyncGRPO   # the other trainers

The task: a prompt "a+b=" (16 fixed digit pairs by default); the reward is 1 when the reply's first character is
the digit a, else 0. The model is a 2-layer Qwen2 built in code, warm-started by a few supervised steps to answer
with one random digit, so a correct answer starts as a rare token (about 1 in 10) and most groups of 8 completions
hold one or two correct replies: the regime where the clip caps a rare correct token's Probability Capacity.
Rollouts are reused off-policy as in the paper: 4 mini-batch updates per rollout batch (steps_per_generation=4).
The RLOO pair (UPRLOOTrainer) is off-policy the same way; the async GRPO pair (UPAsyncGRPOTrainer, in-process
sampler) trains each sample once, off-policy because its sampler lags the policy (CONFIGS and ASYNC_* in bench.py).

Writes results.json (per-run records), curves.parquet (their per-step curves; `bench.read_results` reads both),
curves.png and table.md under --output_dir (per corruption; default
outputs/benchmarks/sample_efficiency, outside the source tree; the published runs name benchmarks/results/...), and
prints the table.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench import (
    ASYNC_CONFIGS,
    CONFIGS,
    async_refusal,
    plot_seed_band,
    run_one,
    save_png,
    warm_start,
    write_results,
)

# The default set is the published one; the rare clip ("UP-DAPO + guard") and the RLOO / async pairs are run by naming
# them with --configs.
DEFAULT_CONFIGS = [
    name for name in CONFIGS if name not in ("UP-DAPO + guard", "RLOO", "UP-RLOO", "AsyncGRPO", "UP-AsyncGRPO")
]
PAIRS_TO_PLOT = [
    ("DAPO", "UP-DAPO"),
    ("GRPO", "UP-GRPO"),
    ("GSPO", "UP-GSPO"),
    ("RLOO", "UP-RLOO"),
    ("AsyncGRPO", "UP-AsyncGRPO"),
    ("UP-DAPO", "UP both signs (ablation)", "DAPO eps_high=inf (ablation)", "UP-DAPO + guard"),
]


def summarise(runs: list[dict], names: list[str], args) -> list[dict]:
    rows = []
    for name in names:
        mine = [r for r in runs if r["config"] == name]
        reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]

        def mean_std(key, mine=mine):
            values = [r[key] for r in mine if r[key] is not None]
            if not values:
                return None, None
            return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)

        row = {"config": name, "seeds": len(mine), "reached": len(reached)}
        row["steps_to_threshold_median"] = statistics.median(reached) if reached else None
        hacked = [r["steps_to_training_reward_0.9"] for r in mine if r["steps_to_training_reward_0.9"] is not None]
        row["steps_to_training_reward_0.9_median"] = statistics.median(hacked) if hacked else None
        row["reached_training_reward_0.9"] = len(hacked)
        for key in (
            "final_accuracy",
            "max_grad_norm",
            "final_entropy",
            "capacity_clipped_mean",
            "capacity_up_mean",
            "would_clip_frac_mean",
        ):
            row[key], row[key + "_std"] = mean_std(key)
        rows.append(row)
    return rows


def markdown(rows: list[dict], args, machine: str) -> str:
    def fmt(row, key, digits=3):
        if row[key] is None:
            return "n/a"
        std = row.get(key + "_std")
        return f"{row[key]:.{digits}f} ± {std:.{digits}f}" if std is not None else f"{row[key]:.{digits}f}"

    lines = [
        f"Task: answer a to the prompt a+b=, sparse 0/1 reward ({args.corruption} corruption), tiny Qwen2 "
        f"warm-started to random digits; {args.num_prompts} prompts, {args.max_steps} optimizer steps, "
        f"{4 * args.num_iterations} updates per rollout batch of 128; "
        f"{len(args.seeds)} seeds; lr {args.learning_rate}. Machine: {machine}.",
        "",
        f"| config | final true accuracy | steps to accuracy ≥ {args.threshold} (median; reached) | max grad norm "
        "| final entropy | capacity, clipped rule | capacity, UP rule | positive tokens past the clip |",
        "|---|---|---|---|---|---|---|---|",
    ]
    if args.corruption != "none":
        lines[2] += " training reward ≥ 0.9 at step (median; reached) |"
        lines[3] += "---|"
    for row in rows:
        steps = row["steps_to_threshold_median"]
        steps = f"{steps:.0f}" if steps is not None else f"> {args.max_steps}"
        hacked = row["steps_to_training_reward_0.9_median"]
        hacked = f"{hacked:.0f}" if hacked is not None else f"> {args.max_steps}"
        hacked = (
            f" {hacked} ({row['reached_training_reward_0.9']}/{row['seeds']}) |" if args.corruption != "none" else ""
        )
        lines.append(
            f"| {row['config']} | {fmt(row, 'final_accuracy')} | {steps} ({row['reached']}/{row['seeds']}) | "
            f"{fmt(row, 'max_grad_norm', 2)} | {fmt(row, 'final_entropy', 2)} | "
            f"{fmt(row, 'capacity_clipped_mean', 4)} | {fmt(row, 'capacity_up_mean', 3)} | "
            f"{fmt(row, 'would_clip_frac_mean', 3)} |" + hacked
        )
    return "\n".join(lines) + "\n"


def plot(runs: list[dict], names: list[str], path: Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [[n for n in group if n in names] for group in PAIRS_TO_PLOT]
    panels = [p for p in panels if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), sharey=True, squeeze=False)
    for ax, group in zip(axes[0], panels):
        for name in group:
            plot_seed_band(ax, runs, name)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("true accuracy (rollout batch)")
    fig.suptitle(f"UP vs parents, sparse reward ({args.corruption}), mean ± std over {len(args.seeds)} seeds")
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS, choices=list(CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--num_prompts", type=int, default=16, help="distinct prompts (at least 16)")
    parser.add_argument("--max_steps", type=int, default=300)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--num_iterations", type=int, default=1, help="extra passes over each rollout batch")
    parser.add_argument("--threshold", type=float, default=0.3, help="3x the starting accuracy of about 0.1")
    parser.add_argument("--corruption", choices=["none", "flip20", "shortcut"], default="none")
    parser.add_argument("--quick", action="store_true", help="1 seed, 40 steps")
    parser.add_argument("--output_dir", default="outputs/benchmarks/sample_efficiency")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.max_steps = args.seeds[:1], 40
    if set(args.configs) & set(ASYNC_CONFIGS) and async_refusal(args.corruption, args.num_iterations):
        parser.error(async_refusal(args.corruption, args.num_iterations))
    torch.set_num_threads(1)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()

    machine = f"{platform.machine()} CPU, {torch.get_num_threads()} torch thread, torch {torch.__version__}"
    out = Path(args.output_dir) / args.corruption
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            base, tokenizer = warm_start(seed)
            for name in args.configs:  # every configuration on the same warm start, in one process
                runs.append(run_one(name, seed, base, tokenizer, args, tmp))
                r = runs[-1]
                print(
                    f"seed {seed} {name:30s} final accuracy {r['final_accuracy']:.3f} "
                    f"steps to {args.threshold}: {r['steps_to_threshold']} ({r['seconds']} s)",
                    flush=True,
                )
    rows = summarise(runs, args.configs, args)
    table = markdown(rows, args, machine)
    report = {
        "command": "python benchmarks/sample_efficiency.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "wall_seconds": round(time.perf_counter() - start, 1),
        "settings": {k: v for k, v in vars(args).items() if k != "output_dir"},
        "summary": rows,
        "runs": runs,
    }
    write_results(out, report)  # results.json (the per-run records) and curves.parquet (their curves)
    (out / "table.md").write_text(table)
    plot(runs, args.configs, out / "curves.png", args)
    print(table)
    return report


if __name__ == "__main__":
    main()
