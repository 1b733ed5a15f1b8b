"""A real-model comparison on CPU: SmolLM2-135M-Instruct (offline) trained with a parent objective (DAPO, GSPO) and
with UP on it, paired seed by seed, each trained model scored with `up-trl eval` on held-out problems.

    python benchmarks/real_model.py --dataset arithmetic --arithmetic_ops add --arithmetic_few_shot 2 \\
        --benchmark arithmetic --benchmark_limit 200 --k 4 --pass_k 4 --pairs DAPO GSPO --seeds 0 1 2 \\
        --per_device_train_batch_size 8 --steps_per_generation 4 --num_iterations 2 --max_steps 32 \\
        --max_completion_length 48 --workers 2 --output_dir benchmarks/results/real_model_add200   # the docs
    python benchmarks/real_model.py --quick --output_dir /tmp/real_model_quick            # smoke run, minutes
    python benchmarks/real_model.py                       # one DAPO pair, seed 42, GSM8K train -> GSM8K test
    python benchmarks/real_model.py --dataset arithmetic --benchmark arithmetic --benchmark_limit 50 --k 4 \\
        --max_completion_length 64 --max_steps 12 --delta none --eval_batch_size 8 --workers 1 \\
        --output_dir benchmarks/results/real_model_arithmetic   # the single-seed run's settings (it had 2 torch
                                                                  # threads in one process: close, not bitwise)

In a pair only `--up_mode` differs (off vs asymmetric): same model, seed, data order, prompts and flags. The pairs
use the recipes' clip values (configs/recipes/{dapo,gspo}.yaml): DAPO token-level, epsilon 0.2 / 0.28; GSPO
sequence-level (loss_type grpo), epsilon 3e-4 / 4e-4; both with the dual clip delta 3.0. Every model, the base
model ("before") included, is scored on the same problems with the same sampling seed (--eval_seed). Runs go to
--workers processes of one torch thread each, seed by seed, DAPO first, so a stopped run still holds complete
pairs; each finished run is appended to runs.partial.jsonl (--resume picks up from it, --report_only rewrites the
outputs from it; a finished study removes it, and both then read results.json), so a killed study loses at most
the runs in flight. Writes results.json (one record per run: config, seed, the commit it ran at, the held-out avg@k
and pass@k, final training reward and entropy by the collapse study's rules, minutes), curves.parquet (each run's
training reward and entropy per step), table.md and curves.png under --output_dir (default
outputs/benchmarks/real_model, outside the source tree); the last line printed is a JSON summary.
benchmarks/real_model_report.py computes a pre-registered study's measures from those files.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from bench import (
    describe_machine,
    git_commit,
    init_worker,
    mean_std,
    open_partial,
    read_results,
    save_png,
    write_results,
)
from real_model_runs import (  # noqa: F401 (the tests read them here)
    PAIRS,
    UP_MODES,
    config_name,
    eval_few_shot,
    run_job,
    run_settings,
    score,
    train_argv,
)

# Settings a stored run may lack (it predates them), with the value it ran with.
SETTINGS_BEFORE_STORED = {"arithmetic_few_shot": 0, "benchmark_split": "test", "up_positive_min_prob": None}


def stored_runs(report: dict) -> list[dict]:
    """The run records of a results.json, the base model's evaluation as its "before" record, as --resume reads them
    from runs.partial.jsonl."""
    before = []
    if report.get("before") is not None:
        before = [
            {
                "pair": None,
                "config": "before",
                "up_mode": None,
                "seed": None,
                "settings": run_settings(report["settings"]),
                "after": report["before"],
            }
        ]
    return [*before, *report["runs"]]


def summarise(
    runs: list[dict], pairs: list[str], k: int, pass_k: int | None = None, settings: dict | None = None
) -> list[dict]:
    """Per pair: each seed with both runs finished (parent, UP, UP - parent on avg@k and pass@k), mean ± std over
    those seeds, and how often UP's avg@k was above, equal to or below its parent's."""
    metrics = (f"avg@{k}", f"pass@{pass_k or k}")
    rows = []
    for pair in pairs:
        mine = {(r["config"], r["seed"]): r["after"] for r in runs if r["pair"] == pair and "after" in r}
        up_config = config_name(pair, "asymmetric", settings)
        seeds = sorted(s for c, s in mine if c == pair and (up_config, s) in mine)
        per_seed = []
        for seed in seeds:
            parent, up = mine[(pair, seed)], mine[(up_config, seed)]
            per_seed.append(
                {
                    "seed": seed,
                    **{m: {"parent": parent[m], "up": up[m], "difference": up[m] - parent[m]} for m in metrics},
                }
            )
        diffs = [row[metrics[0]]["difference"] for row in per_seed]
        stats = {
            m: {side: mean_std([row[m][side] for row in per_seed]) for side in ("parent", "up", "difference")}
            for m in metrics
        }
        rows.append(
            {
                "pair": pair,
                "up_config": up_config,
                "paired_seeds": len(seeds),
                "per_seed": per_seed,
                "mean_std": stats,
                "up_won": sum(d > 0 for d in diffs),
                "ties": sum(d == 0 for d in diffs),
                "up_lost": sum(d < 0 for d in diffs),
            }
        )
    return rows


def short_summary(rows: list[dict], before: dict | None, k: int) -> dict:
    """The last printed line's numbers: the base model's avg@k, each pair's mean avg@k (parent, UP), UP's wins."""
    avg = f"avg@{k}"
    summary: dict = {f"before {avg}": before and before[avg]}
    for row in rows:
        means = [row["mean_std"][avg][side][0] for side in ("parent", "up")]
        summary[row["pair"]] = {
            f"{avg} parent, UP": [None if m is None else round(m, 4) for m in means],
            "UP won": f"{row['up_won']} of {row['paired_seeds']} seeds",
        }
    return summary


def markdown(rows: list[dict], k: int, before: dict | None, header: str, pass_k: int | None = None) -> str:
    def pm(value):
        mean, std = value
        return "-" if mean is None else f"{mean:.3f} ± {std:.3f}"

    avg, pas = f"avg@{k}", f"pass@{pass_k or k}"
    lines = [header, ""]
    if before:
        lines += [f"Base model (before training): {avg} {before[avg]:.3f}, {pas} {before[pas]:.3f}.", ""]
    for row in rows:
        parent, up = row["pair"], row["up_config"]
        lines += [
            f"### {parent} vs {up}",
            "",
            f"| seed | {parent} {avg} | {up} {avg} | UP - parent | {parent} {pas} | {up} {pas} | UP - parent |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in row["per_seed"]:
            cells = [f"{r[m]['parent']:.3f} | {r[m]['up']:.3f} | {r[m]['difference']:+.3f}" for m in (avg, pas)]
            lines.append(f"| {r['seed']} | {' | '.join(cells)} |")
        stats = row["mean_std"]
        cells = [f"{pm(stats[m]['parent'])} | {pm(stats[m]['up'])} | {pm(stats[m]['difference'])}" for m in (avg, pas)]
        lines += [
            f"| mean ± std | {' | '.join(cells)} |",
            "",
            f"UP won {row['up_won']} of {row['paired_seeds']} seeds on {avg} (tied {row['ties']}, "
            f"lost {row['up_lost']}).",
            "",
        ]
    return "\n".join(lines)


def plot(runs: list[dict], pairs: list[str], path: Path, dataset: str, settings: dict | None = None) -> None:
    """Training reward vs step, one panel per pair: parent blue, UP red, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(pairs), figsize=(5 * len(pairs), 3.8), sharey=True, squeeze=False)
    for ax, pair in zip(axes[0], pairs):
        up_config = config_name(pair, "asymmetric", settings)
        for config, color in ((pair, "tab:blue"), (up_config, "tab:red")):
            for i, run in enumerate(r for r in runs if r["config"] == config and r.get("reward_curve")):
                steps, values = zip(*run["reward_curve"])
                ax.plot(steps, values, color=color, alpha=0.7, marker=".", label=config if i == 0 else None)
        ax.set_title(f"{pair} vs {up_config}")
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel(f"training reward ({dataset}), one line per seed")
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="gsm8k", help="training set (an up_trl.data name)")
    parser.add_argument("--arithmetic_ops", nargs="+", default=["mul1"], help="arithmetic only: mul1, mul, add, sub")
    parser.add_argument("--arithmetic_few_shot", type=int, default=0, help="arithmetic only: worked examples")
    parser.add_argument("--benchmark", default="gsm8k", help="an `up-trl eval` benchmark (its held-out split)")
    parser.add_argument(
        "--benchmark_split",
        default="test",
        choices=["test", "dev"],
        help="arithmetic only: the held-out split scored (dev: for a pilot choosing settings, never a result)",
    )
    parser.add_argument("--benchmark_limit", type=int, default=50, help="held-out problems scored")
    parser.add_argument("--k", type=int, default=4, help="samples per test problem")
    parser.add_argument("--pass_k", type=int, help="the table's pass@ (default: k); e.g. pass@4 estimated from k=16")
    parser.add_argument("--pairs", nargs="+", default=["DAPO"], choices=list(PAIRS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[42], help="training seeds")
    parser.add_argument("--eval_seed", type=int, default=42, help="the one sampling seed of every evaluation")
    parser.add_argument("--eval_batch_size", type=int, default=64, help="prompts per generate() call in eval")
    parser.add_argument("--max_steps", type=int, default=30)
    parser.add_argument(
        "--max_completion_length",
        type=int,
        help="also eval's max_new_tokens (default: 64 for the arithmetic dataset, as the offline default, else 192)",
    )
    parser.add_argument("--per_device_train_batch_size", type=int, default=16)
    parser.add_argument("--steps_per_generation", type=int, default=2)
    parser.add_argument("--num_iterations", type=int, default=1)
    parser.add_argument(
        "--delta",
        type=lambda v: None if v == "none" else float(v),
        default=3.0,
        help="dual clip of both pairs, as in the recipes ('none': off)",
    )
    parser.add_argument(
        "--up_positive_min_prob",
        type=float,
        help="UP's runs only: the rare clip (as the up_dapo recipe, 0.05); names them 'UP-<pair> + rare clip'",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes, one torch thread each")
    parser.add_argument("--time_limit_minutes", type=float, help="start no new run after this; report what finished")
    parser.add_argument("--resume", action="store_true", help="reuse the runs in output_dir/runs.partial.jsonl")
    parser.add_argument("--report_only", action="store_true", help="--resume, run nothing: rewrite the outputs")
    parser.add_argument("--keep_models", action="store_true", help="keep each trained model's weights")
    parser.add_argument("--quick", action="store_true", help="1 seed, DAPO only, 2 steps, 4 problems, k 2, 16 tokens")
    parser.add_argument("--output_dir", default="outputs/benchmarks/real_model")
    args = parser.parse_args(argv)
    if args.max_completion_length is None:
        args.max_completion_length = 64 if args.dataset == "arithmetic" else 192
    if args.quick:
        args.seeds, args.pairs, args.max_steps, args.benchmark_limit = args.seeds[:1], ["DAPO"], 2, 4
        args.k, args.max_completion_length = 2, 16
    from up_trl.evaluation.evaluate import check_benchmarks
    from up_trl.evaluation.pass_at_k import default_ks
    from up_trl.models.offline import smollm2_path

    check_benchmarks(  # fails now, not after the first run
        [args.benchmark], args.k, args.arithmetic_ops, eval_few_shot(vars(args)), args.benchmark_split
    )
    if args.arithmetic_few_shot and args.dataset != "arithmetic":
        parser.error(f"--arithmetic_few_shot {args.arithmetic_few_shot} needs --dataset arithmetic.")
    if (args.pass_k or args.k) not in default_ks(args.k):
        parser.error(f"--pass_k {args.pass_k}: eval reports pass@ for {default_ks(args.k)} with --k {args.k}.")
    pairs = [p for p in PAIRS if p in args.pairs]  # DAPO first
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = {**vars(args), "model": smollm2_path(), "commit": git_commit()}
    machine = describe_machine(args.workers)
    start = time.perf_counter()
    deadline = time.time() + (float("inf") if args.time_limit_minutes is None else args.time_limit_minutes * 60)
    base = {"settings": settings, "deadline": deadline}
    jobs = [{**base, "pair": None, "config": "before", "up_mode": None, "seed": None}]
    jobs += [
        {**base, "pair": p, "config": config_name(p, mode, settings), "up_mode": mode, "seed": seed}
        for seed in args.seeds
        for p in pairs
        for mode in UP_MODES
    ]
    if args.report_only:
        args.resume, jobs = True, []
    partial, runs = open_partial(out, args.resume)
    if args.resume and not runs and (out / "results.json").exists():  # a finished study keeps no partial file
        runs = stored_runs(
            read_results(out) if (out / "curves.parquet").exists() else json.loads((out / "results.json").read_text())
        )
        partial.write_text("".join(json.dumps(r) + "\n" for r in runs))  # what a stop from here on keeps
    if args.resume:
        for run in runs:  # a run stored with other settings would be paired or reported as if it had these
            stored = {**SETTINGS_BEFORE_STORED, **run.get("settings", {})}
            differ = {k: v for k, v in stored.items() if run_settings(settings).get(k) != v}
            if differ:
                raise SystemExit(
                    f"{partial}: {run['config']} seed {run['seed']} ran with {differ}; pass the same "
                    "flags to --resume / --report_only, or use another --output_dir."
                )
        done = {(r["config"], r["seed"]) for r in runs}
        jobs = [job for job in jobs if (job["config"], job["seed"]) not in done]
        print(f"resuming: {len(runs)} jobs read from {partial}, {len(jobs)} to go", flush=True)

    def record(run: dict) -> None:
        if run.get("skipped"):
            return
        runs.append(run)
        with partial.open("a") as f:
            f.write(json.dumps(run) + "\n")
        minutes = f"train {run['train_minutes']} min, " if "train_minutes" in run else ""
        print(
            f"[{(time.perf_counter() - start) / 60:6.1f} min] {run['config']} seed {run['seed']}: "
            f"avg@{args.k} {run['after'][f'avg@{args.k}']:.3f} ({minutes}eval {run['eval_minutes']} min)",
            flush=True,
        )

    if args.workers > 1 and len(jobs) > 1:
        # Not multiprocessing.Pool: its workers are daemonic, and a daemonic process cannot start the reward's own
        # worker processes (math-verify's pebble pool); a run hung that way. Jobs start in order as workers free.
        fork = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(args.workers, mp_context=fork, initializer=init_worker) as pool:
            futures = {pool.submit(run_job, job): job for job in jobs}
            for future in as_completed(futures):
                try:
                    record(future.result())
                except Exception as exc:  # one failed run must not lose the others: report it, keep going
                    print(f"FAILED: {futures[future]['config']} seed {futures[future]['seed']}: {exc!r}", flush=True)
    else:
        init_worker()
        for job in jobs:
            record(run_job(job))

    before = next((r["after"] for r in runs if r["config"] == "before"), None)
    runs = sorted((r for r in runs if r["config"] != "before"), key=lambda r: (r["seed"], r["pair"], r["config"]))
    finished = {(r["config"], r["seed"]) for r in runs}
    missing = [
        f"{config_name(p, m, settings)} seed {s}"
        for s in args.seeds
        for p in pairs
        for m in UP_MODES
        if (config_name(p, m, settings), s) not in finished
    ]
    if missing:
        print(f"INCOMPLETE: {len(missing)} runs missing: {', '.join(missing)}", flush=True)
    rows = summarise(runs, pairs, args.k, args.pass_k, settings)
    wall = round((time.perf_counter() - start) / 60, 1)
    if args.report_only and (out / "results.json").exists():  # the runs' own wall time and machine, not this rewrite's
        wall, machine = (json.loads((out / "results.json").read_text())[k] for k in ("wall_minutes", "machine"))
    shots = f", {args.arithmetic_few_shot} worked examples" if args.arithmetic_few_shot else ""
    ops = f" (ops {' '.join(args.arithmetic_ops)}{shots})" if "arithmetic" in (args.dataset, args.benchmark) else ""
    problems = (before or {}).get("problems", args.benchmark_limit)
    header = (
        f"SmolLM2-135M-Instruct trained on {args.dataset}{ops} for {args.max_steps} steps (batch "
        f"{args.per_device_train_batch_size}, steps_per_generation {args.steps_per_generation}, num_iterations "
        f"{args.num_iterations}, delta {args.delta}), scored on {problems} held-out {args.benchmark} problems"
        f"{' (dev split)' if args.benchmark_split == 'dev' else ''}, "
        f"k={args.k}, "
        f"temperature 1, eval seed {args.eval_seed}. Paired: only up_mode differs"
        f"{'' if args.up_positive_min_prob is None else f' (and UP has the rare clip {args.up_positive_min_prob})'}"
        f". Machine: {machine}; "
        f"wall {wall} min."
    )
    report = {
        "command": "python benchmarks/real_model.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "wall_minutes": wall,
        "complete": not missing,
        "missing": missing,
        "model": "SmolLM2-135M-Instruct",
        "pairs": {p: PAIRS[p] for p in pairs},
        "settings": {k: v for k, v in settings.items() if k != "output_dir"},
        "before": before,
        "summary": rows,
        "runs": runs,
    }
    write_results(out, report)  # results.json (one line per run), curves.parquet
    table = markdown(rows, args.k, before, header, args.pass_k)
    (out / "table.md").write_text(table)
    plot(runs, pairs, out / "curves.png", args.dataset, settings)
    if not missing:
        partial.unlink(missing_ok=True)  # complete: results.json holds every run, the base model's as "before"
    print(table)
    print(
        json.dumps(
            {"machine": machine, "wall_minutes": wall, "complete": not missing, **short_summary(rows, before, args.k)}
        ),
        flush=True,
    )
    return report


if __name__ == "__main__":
    main()
