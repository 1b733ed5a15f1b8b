"""Staleness sweep: UP against its parent as each rollout batch is reused for more optimizer updates.

    python benchmarks/staleness_sweep.py            # 3 pairs x 5 levels x 5 seeds x 2 configs = 150 runs, 2 workers
    python benchmarks/staleness_sweep.py --quick    # smoke run: the DAPO pair, levels 1 and 4, 1 seed, 8 steps

The task, model, warm start, reward and every other setting are those of `sample_efficiency.py` (both take them
from `bench.py`): 16 prompts "a+b=", reward 1 when the reply starts with a, a 2-layer Qwen2 warm-started to random
digits, lr 1e-3, 300 optimizer steps. The rollout batch is fixed (16 prompts x 8 generations = 128 completions) and
the total number of optimizer steps is fixed (300); only how many updates each rollout batch feeds changes:

| updates per rollout | per_device_train_batch_size | steps_per_generation | num_iterations | rollouts in 300 steps |
|---|---|---|---|---|
| 1  | 128 | 1 | 1 | 300 |
| 2  | 64  | 2 | 1 | 150 |
| 4  | 32  | 4 | 1 | 75 (= sample_efficiency.py's default) |
| 8  | 32  | 4 | 2 | 38 |
| 16 | 32  | 4 | 4 | 19 (= its --num_iterations 4) |

Levels 1-4 split the batch into mini-batches (each sample used once, so the mini-batch shrinks 128 -> 32);
levels 4-16 add passes over the same 4 mini-batches. Only a mini-batch of 128 allows a single update per batch
of 128; keeping 32 at every level would need a different rollout batch. With 1 update the data is on-policy:
TRL then skips the old-log-prob pass, the ratio is exactly 1, and UP's gradient equals its parent's, so the
sweep checks that every logged loss, reward and accuracy of the pair coincide there, seed by seed.

Writes results.json (per-run records), curves.parquet (their per-step curves; `bench.read_results` reads both),
table.md and staleness.png under --output_dir (default outputs/benchmarks/staleness, outside
the source tree; the published sweep: --output_dir benchmarks/results/staleness); the last printed line is a JSON
summary. A finished sweep keeps no runs.partial.jsonl: --resume and --report_only then read results.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import (
    LEVELS,
    cached_warm_start,
    describe_machine,
    init_worker,
    mean_std,
    open_partial,
    read_results,
    run_one,
    save_png,
    updates_per_rollout,
    write_results,
)

PAIRS = [("DAPO", "UP-DAPO"), ("GRPO", "UP-GRPO"), ("GSPO", "UP-GSPO")]
# Compared at 1 update per rollout, every logged step. Rewards and accuracies must be equal; the loss within float32
# rounding: UP sums its positive-advantage tokens in a term of their own, so the order of the additions differs.
TOLERANCE = {"accuracy_curve": 0.0, "reward_curve": 0.0, "loss_curve": 1e-6}


def run_pair(job: tuple) -> list[dict]:
    """Parent and UP, same warm start, seed, data order and level: only `up_mode` differs."""
    pair, level, seed, settings = job
    args = argparse.Namespace(**settings)
    base, tokenizer = cached_warm_start(seed)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in pair:
            run = run_one(name, seed, base, tokenizer, args, tmp, **LEVELS[level])
            # The same stretch of training at every level (a mean over the last 3 logged rollouts would span 3 steps
            # at 1 update per rollout but 48 at 16): every rollout batch logged in the last `final_window` steps.
            window = [v for step, v in run["accuracy_curve"] if step > args.max_steps - args.final_window]
            run.update(
                level=level,
                pair=pair[0],
                final_accuracy_last3_rollouts=run["final_accuracy"],
                final_accuracy=statistics.fmean(window),
            )
            runs.append(run)
    return runs


def max_abs_difference(a: list, b: list) -> float:
    """Largest |a - b| over two logged curves [(step, value), ...]; inf when their steps differ."""
    if [s for s, _ in a] != [s for s, _ in b]:
        return float("inf")
    return max((abs(x - y) for (_, x), (_, y) in zip(a, b)), default=0.0)


def on_policy_check(runs: list[dict]) -> dict:
    """At 1 update per rollout, each pair's curves per seed: the largest difference and whether they coincide."""
    rows = []
    for parent, up in PAIRS:
        for p in [r for r in runs if r["level"] == 1 and r["config"] == parent]:
            u = next((r for r in runs if r["level"] == 1 and r["config"] == up and r["seed"] == p["seed"]), None)
            if u is None:
                continue
            diff = {key: max_abs_difference(p[key], u[key]) for key in TOLERANCE}
            first = next((s for (s, x), (_, y) in zip(p["accuracy_curve"], u["accuracy_curve"]) if x != y), None)
            rows.append(
                {
                    "pair": parent,
                    "seed": p["seed"],
                    "max_abs_difference": diff,
                    "first_step_accuracy_differs": first,
                    "coincide": all(diff[k] <= TOLERANCE[k] for k in TOLERANCE),
                }
            )
    return {
        "checked": len(rows),
        "coincide": sum(r["coincide"] for r in rows),
        "tolerance": TOLERANCE,
        "per_seed": rows,
    }


def summarise(runs: list[dict], levels: list[int], pairs: list[tuple]) -> list[dict]:
    """Per pair and level: mean ± std final accuracy, seeds past the threshold, median steps, UP's paired wins."""
    rows = []
    for parent, up in pairs:
        for level in levels:
            row = {"pair": parent, "updates_per_rollout": level}
            by_seed = {}
            for role, name in (("parent", parent), ("up", up)):
                mine = [r for r in runs if r["level"] == level and r["config"] == name]
                if not mine:
                    break
                reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]
                mean, std = mean_std([r["final_accuracy"] for r in mine])
                row[role] = {
                    "config": name,
                    "seeds": len(mine),
                    "final_accuracy_mean": mean,
                    "final_accuracy_std": std,
                    "reached": len(reached),
                    "steps_to_threshold_median": statistics.median(reached) if reached else None,
                }
                by_seed[role] = {r["seed"]: r["final_accuracy"] for r in mine}
            else:
                paired = sorted(set(by_seed["parent"]) & set(by_seed["up"]))
                diffs = [by_seed["up"][s] - by_seed["parent"][s] for s in paired]
                row["paired_seeds"] = len(paired)
                row["up_won"] = sum(d > 0 for d in diffs)
                row["ties"] = sum(d == 0 for d in diffs)
                row["up_lost"] = sum(d < 0 for d in diffs)
                row["final_accuracy_difference_mean"] = statistics.fmean(diffs) if diffs else None
                rows.append(row)
    return rows


def markdown(rows: list[dict], args, machine: str, seeds: list[int]) -> str:
    def acc(side):
        return f"{side['final_accuracy_mean']:.3f} ± {side['final_accuracy_std']:.3f}"

    def steps(side):
        median = side["steps_to_threshold_median"]
        return f"{median:.0f}" if median is not None else f"> {args.max_steps}"

    lines = [
        f"Toy task of sample_efficiency.py ({args.num_prompts} prompts, rollout batch of {args.num_prompts} x 8 = "
        f"{args.num_prompts * 8} completions, {args.max_steps} optimizer steps at every level, lr "
        f"{args.learning_rate}); seeds {', '.join(map(str, seeds))} of {len(args.seeds)} asked, paired (same warm "
        f"start, seed and data; only up_mode differs; each row's seed count is in its 5th column). Final accuracy: "
        f"mean true accuracy of the rollout batches of the last {args.final_window} steps. Machine: {machine}.",
        "",
        f"| pair | updates per rollout | parent: final accuracy | UP: final accuracy | seeds ≥ {args.threshold} "
        "(parent / UP) | median steps to it (parent / UP) | UP won / tied / lost (paired seeds, final accuracy) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        p, u = row["parent"], row["up"]
        lines.append(
            f"| {p['config']} vs {u['config']} | {row['updates_per_rollout']} | {acc(p)} | {acc(u)} | "
            f"{p['reached']}/{p['seeds']} / {u['reached']}/{u['seeds']} | {steps(p)} / {steps(u)} | "
            f"{row['up_won']} / {row['ties']} / {row['up_lost']} |"
        )
    return "\n".join(lines) + "\n"


def plot(runs: list[dict], levels: list[int], pairs: list[tuple], path: Path, args) -> None:
    """Top: final true accuracy; bottom: steps to the threshold (seeds that never reached it drawn above the
    top line). Lines are means (top) or medians over the seeds that reached it (bottom); dots are seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(pairs), figsize=(4.4 * len(pairs), 6.4), sharex=True, squeeze=False)
    never = args.max_steps * 1.08
    for col, pair in enumerate(pairs):
        for k, (name, color) in enumerate(zip(pair, ("tab:blue", "tab:red"))):
            offset = 0.94 if k == 0 else 1.06  # dodge the two configs' dots apart on the log axis
            finals, medians = [], []
            for level in levels:
                mine = [r for r in runs if r["level"] == level and r["config"] == name]
                acc = [r["final_accuracy"] for r in mine]
                reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]
                finals.append(mean_std(acc))
                medians.append(statistics.median(reached) if reached else None)
                axes[0][col].scatter([level * offset] * len(acc), acc, s=12, color=color, alpha=0.5)
                shown = [r["steps_to_threshold"] if r["steps_to_threshold"] is not None else never for r in mine]
                axes[1][col].scatter([level * offset] * len(shown), shown, s=12, color=color, alpha=0.5, marker="o")
            mean = [m if m is not None else float("nan") for m, _ in finals]
            std = [s if s is not None else float("nan") for _, s in finals]
            axes[0][col].plot(levels, mean, color=color, label=f"{name} (mean ± std)")
            axes[0][col].fill_between(
                levels, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], color=color, alpha=0.15
            )
            axes[1][col].plot(
                levels,
                [m if m is not None else float("nan") for m in medians],
                color=color,
                label=f"{name} (median of seeds that reached it)",
            )
        axes[0][col].set_title(f"{pair[0]} vs {pair[1]}")
        axes[0][col].legend(fontsize=7)
        axes[1][col].legend(fontsize=7, loc="lower right")
        axes[1][col].axhline(args.max_steps, color="grey", lw=0.8, ls="--")
        axes[1][col].text(levels[0], never, "never reached", fontsize=7, va="bottom")
        axes[1][col].set_xlabel("optimizer updates per rollout batch")
        for row in (0, 1):
            axes[row][col].set_xscale("log", base=2)
            axes[row][col].set_xticks(levels, [str(level) for level in levels])
            axes[row][col].grid(alpha=0.3)
    axes[0][0].set_ylabel("final true accuracy")
    axes[1][0].set_ylabel(f"steps to accuracy ≥ {args.threshold}")
    fig.suptitle(
        f"UP vs parent as rollouts get staler: up to {len({r['seed'] for r in runs})} seeds, "
        f"{args.max_steps} steps per run, dots = seeds"
    )
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=[p for p, _ in PAIRS], choices=[p for p, _ in PAIRS])
    parser.add_argument("--levels", nargs="+", type=int, default=list(LEVELS), choices=list(LEVELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--max_steps", type=int, default=300)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--threshold", type=float, default=0.3, help="3x the starting accuracy of about 0.1")
    parser.add_argument("--final_window", type=int, default=50, help="final accuracy: mean over these last steps")
    parser.add_argument("--workers", type=int, default=2, help="processes, one torch thread each")
    parser.add_argument("--time_limit_minutes", type=float, help="start no new run after this; report what finished")
    parser.add_argument("--resume", action="store_true", help="reuse the runs in output_dir/runs.partial.jsonl")
    parser.add_argument("--report_only", action="store_true", help="--resume, run nothing: rewrite the outputs")
    parser.add_argument("--quick", action="store_true", help="the DAPO pair, levels 1 and 4, 1 seed, 8 steps")
    parser.add_argument("--output_dir", default="outputs/benchmarks/staleness")
    args = parser.parse_args(argv)
    if args.quick:
        args.pairs, args.levels, args.seeds, args.max_steps = ["DAPO"], [1, 4], args.seeds[:1], 8
    args.num_prompts, args.corruption, args.num_iterations = 16, "none", 1  # what bench.run_one reads
    pairs = [p for p in PAIRS if p[0] in args.pairs]
    settings = {
        k: getattr(args, k)
        for k in (
            "num_prompts",
            "corruption",
            "num_iterations",
            "max_steps",
            "learning_rate",
            "threshold",
            "final_window",
        )
    }
    # Seed by seed, so that a sweep stopped by --time_limit_minutes still covers every level with its first seeds.
    jobs = [(pair, level, seed, settings) for seed in args.seeds for level in sorted(args.levels) for pair in pairs]
    machine = describe_machine(args.workers)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if args.report_only:
        args.resume, jobs = True, []
    partial, runs = open_partial(out, args.resume)
    if args.resume and not runs and (out / "results.json").exists():  # a finished sweep keeps no partial file
        runs = read_results(out)["runs"]
        partial.write_text("".join(json.dumps(r) + "\n" for r in runs))  # what a stop from here on keeps
    if args.resume:
        done = {(r["pair"], r["level"], r["seed"]) for r in runs}
        jobs = [job for job in jobs if (job[0][0], job[1], job[2]) not in done]
        print(f"resuming: {len(runs)} runs read from {partial}, {len(jobs)} pairs of runs to go", flush=True)
    limit = args.time_limit_minutes * 60 if args.time_limit_minutes else float("inf")

    def record(pair_runs):
        runs.extend(pair_runs)
        with partial.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in pair_runs)
        for r in pair_runs:
            print(
                f"[{time.perf_counter() - start:7.0f} s] level {r['level']:2d} seed {r['seed']} {r['config']:8s} "
                f"final accuracy {r['final_accuracy']:.3f} steps to {args.threshold}: {r['steps_to_threshold']} "
                f"({r['seconds']} s)",
                flush=True,
            )

    if args.workers > 1:
        context = multiprocessing.get_context("fork")  # the children inherit this module, however it was loaded
        with context.Pool(args.workers, initializer=init_worker) as pool:
            for pair_runs in pool.imap_unordered(run_pair, jobs):
                record(pair_runs)
                if time.perf_counter() - start > limit:
                    pool.terminate()  # the runs in flight are dropped; the report says what is missing
                    break
    else:
        init_worker()
        for job in jobs:
            record(run_pair(job))
            if time.perf_counter() - start > limit:
                break
    runs.sort(key=lambda r: (r["pair"], r["level"], r["seed"], r["config"]))

    levels = sorted(args.levels)
    finished = {(r["pair"], r["level"], r["seed"]) for r in runs}
    missing = [
        f"{p[0]}@{level} seed {seed}"
        for p in pairs
        for level in levels
        for seed in args.seeds
        if (p[0], level, seed) not in finished
    ]
    if missing:
        print(
            f"INCOMPLETE: stopped after {args.time_limit_minutes} min; {len(missing)} pairs of runs missing",
            flush=True,
        )
    rows = summarise(runs, levels, pairs)
    check = on_policy_check(runs)
    table = markdown(rows, args, machine, sorted({r["seed"] for r in runs}))
    wall = round(time.perf_counter() - start, 1)
    if args.report_only and (out / "results.json").exists():  # the sweep's own wall time, not this rewrite's
        wall = json.loads((out / "results.json").read_text())["wall_seconds"]
    report = {
        "command": "python benchmarks/staleness_sweep.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "wall_seconds": wall,
        "complete": not missing,
        "missing": missing,
        "levels": {str(k): {**LEVELS[k], "updates_per_rollout": updates_per_rollout(LEVELS[k])} for k in levels},
        "settings": {k: v for k, v in vars(args).items() if k != "output_dir"},
        "on_policy_check": check,
        "summary": rows,
        "runs": runs,
    }
    write_results(out, report)  # results.json (the per-run records) and curves.parquet (their curves)
    (out / "table.md").write_text(table)
    plot(runs, levels, pairs, out / "staleness.png", args)
    if not missing:
        partial.unlink(missing_ok=True)  # complete: results.json and curves.parquet hold every run
    print(table)
    if check["coincide"] != check["checked"]:
        print(
            f"ON-POLICY CHECK FAILED: UP and its parent differ at 1 update per rollout "
            f"({check['checked'] - check['coincide']} of {check['checked']} pairs)",
            flush=True,
        )
    short = {
        "machine": machine,
        "wall_seconds": wall,
        "runs": len(runs),
        "complete": not missing,
        "on_policy_coincide": f"{check['coincide']}/{check['checked']}",
        "on_policy_max_loss_difference": max(
            (r["max_abs_difference"]["loss_curve"] for r in check["per_seed"]), default=None
        ),
        "final_accuracy": {
            f"{row['pair']}@{row['updates_per_rollout']}": [
                round(row["parent"]["final_accuracy_mean"], 3),
                round(row["up"]["final_accuracy_mean"], 3),
                f"UP won/tied/lost {row['up_won']}/{row['ties']}/{row['up_lost']}",
            ]
            for row in rows
        },
    }
    print(json.dumps(short), flush=True)
    return report


if __name__ == "__main__":
    main()
