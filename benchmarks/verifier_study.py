"""Study B: does UP learn a consistently wrong verifier's mistakes faster than its clipped parent? (the referee's
falsifier, benchmarks/results/study_b_verifier/PREREGISTRATION.md).

    python benchmarks/verifier_study.py --output_dir benchmarks/results/study_b_verifier     # 90 runs, 2 workers
    python benchmarks/verifier_study.py --seeds 300 --noise 0.3 --max_steps 8 --output_dir /tmp/vs --allow_dirty

On the collapse study's toy task (16 prompts "a+b=", the gold is a; 16 updates per rollout batch, 300 steps, lr 1e-3)
each config trains against a verifier that is wrong on a fraction `noise` of (prompt, answer) pairs, the same pairs
in every arm of a seed (`noisy_verifier.ConsistentlyWrongVerifier`, keyed by the seed). Logged at weight 0: the true
accuracy and the share of samples the verifier wrongly rewards. Writes results.json at --output_dir's top (one
record per run: config, seed, commit, noise, true_accuracy, wrongly_rewarded_share, wrongly_rewarded_auc, entropies,
collapsed, runaway), the per-rollout curves in curves.parquet, pip_freeze.txt once, table.md and verifier_study.png
(the wrongly-rewarded share's curves); a stopped study goes on from results.json when run again.
Runs start only at a clean commit (`git diff --quiet` on tracked files) unless --allow_dirty (for trying it out).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import (
    RESULTS_FILE,
    cached_warm_start,
    describe_machine,
    first_char,
    git_commit,
    init_worker,
    read_results,
    save_png,
    write_results,
)
from bench import make_rewards as true_rewards
from noisy_verifier import ConsistentlyWrongVerifier
from toy_runs import TOY_ACCURACY, judge, toy_trainer

CONFIGS = ["DAPO", "UP-DAPO", "UP-DAPO + rare clip"]
NOISE = [0.0, 0.1, 0.3]
SEEDS = list(range(300, 310))  # no committed run used them
LEVEL, MAX_STEPS, LEARNING_RATE, FINAL_WINDOW = 16, 300, 1e-3, 50
WRONG_KEY = "rewards/wrongly_rewarded/mean"
# The primary measures (final: the last FINAL_WINDOW steps), then the secondary one (speed: the area over the run).
MEASURES = ("true_accuracy", "wrongly_rewarded_share", "wrongly_rewarded_auc")


def rewards(noise: float, seed: int):
    """(functions, weights): the wrong verifier (trained on), the true accuracy and the wrongly-rewarded mark (logged
    at weight 0)."""
    (true_accuracy,), _ = true_rewards("none", seed)
    verifier = ConsistentlyWrongVerifier(true_accuracy, noise, key=seed, answer=first_char)
    return [verifier, true_accuracy, verifier.wrongly_rewarded], [1.0, 0.0, 0.0]


def run(job: tuple[str, int, float, dict]) -> dict:
    """One run: `config` on the toy task against the verifier of `noise`, from the seed's warm start."""
    import copy
    import tempfile

    config, seed, noise, s = job
    base, _ = cached_warm_start(seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        settings = {"task": "toy", "max_steps": s["max_steps"], "learning_rate": LEARNING_RATE}
        trainer = toy_trainer(config, seed, LEVEL, settings, tmp, copy.deepcopy(base), rewards=rewards(noise, seed))
        trainer.train()
    logs = trainer.state.log_history
    measures = judge(logs, s["max_steps"], accuracy_key=TOY_ACCURACY, final_window=min(FINAL_WINDOW, s["max_steps"]))
    last = s["max_steps"] - min(FINAL_WINDOW, s["max_steps"])
    wrong_curve = [[h["step"], h[WRONG_KEY]] for h in logs if isinstance(h.get(WRONG_KEY), (int, float))]
    return {
        "config": config,
        "seed": seed,
        "commit": s["commit"],
        "noise": noise,
        "true_accuracy": measures["final_accuracy"],
        "wrongly_rewarded_share": statistics.fmean(v for step, v in wrong_curve if step > last),
        "wrongly_rewarded_auc": area(wrong_curve),
        "initial_entropy": measures["initial_entropy"],
        "final_entropy": measures["final_entropy"],
        "collapsed": measures["collapsed"],
        "runaway": measures["runaway"],
        "seconds": round(time.perf_counter() - start, 1),
        "wrongly_rewarded_curve": wrong_curve,
        "true_accuracy_curve": measures["curves"][TOY_ACCURACY],
        "entropy_curve": measures["curves"]["entropy"],
    }


def area(curve: list[list[float]]) -> float:
    """The area under a per-rollout curve [[step, value], ...] over the run, per step: the mean of its values, one per
    rollout batch (the batches are evenly spaced, so this is the trapezoid-free area divided by the run's length).

    >>> area([[1, 0.0], [17, 0.5], [33, 1.0]])
    0.5
    """
    return statistics.fmean(v for _, v in curve)


def paired(records: list[dict], config: str, noise: float, key: str) -> dict | None:
    """`config` minus DAPO on `key`, seed by seed: mean, 2 SE, won / lost / tied, seeds."""
    by = {(r["config"], r["seed"]): r[key] for r in records if r["noise"] == noise}
    diffs = [
        by[(config, s)] - by[("DAPO", s)]
        for s in sorted({s for _, s in by})
        if (config, s) in by and ("DAPO", s) in by
    ]
    if not diffs:
        return None
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
    return {
        "mean": statistics.fmean(diffs),
        "two_se": 2 * se,
        "won": sum(d > 0 for d in diffs),
        "lost": sum(d < 0 for d in diffs),
        "seeds": len(diffs),
    }


def table(records: list[dict]) -> str:
    lines = [
        "| noise | config | runs | true accuracy | wrongly rewarded share | wrongly rewarded area "
        "| accuracy - DAPO (2 SE; won/lost/tied) | wrong share - DAPO (2 SE; won/lost/tied) "
        "| wrong area - DAPO (2 SE; won/lost/tied) | runaway | collapsed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for noise in sorted({r["noise"] for r in records}):
        for config in CONFIGS:
            rs = [r for r in records if r["noise"] == noise and r["config"] == config]
            if not rs:
                continue
            cells = []
            for key in MEASURES:
                d = paired(records, config, noise, key) if config != "DAPO" else None
                if d is None:
                    cells.append("")
                    continue
                tied = d["seeds"] - d["won"] - d["lost"]
                cells.append(f"{d['mean']:+.3f} (±{d['two_se']:.3f}; {d['won']}/{d['lost']}/{tied})")
            means = " | ".join(f"{statistics.fmean(r[key] for r in rs):.3f}" for key in MEASURES)
            lines.append(
                f"| {noise:g} | {config} | {len(rs)} | {means} | {' | '.join(cells)} "
                f"| {sum(r['runaway'] for r in rs)} | {sum(r['collapsed'] for r in rs)} |"
            )
    return "\n".join(lines) + "\n"


def plot(records: list[dict], path: Path) -> None:
    """Per noise level (columns): the wrongly-rewarded share (top) and the true accuracy (bottom) per rollout batch,
    each config's mean over its seeds with a band of 2 SE."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    noises = sorted({r["noise"] for r in records})
    fig, axes = plt.subplots(2, len(noises), figsize=(3.6 * len(noises), 5.6), squeeze=False, sharex=True)
    for col, noise in enumerate(noises):
        for config in CONFIGS:
            rs = [r for r in records if r["noise"] == noise and r["config"] == config]
            for row, key in enumerate(("wrongly_rewarded_curve", "true_accuracy_curve")):
                by_step: dict[int, list[float]] = {}
                for r in rs:
                    for step, value in r[key]:
                        by_step.setdefault(step, []).append(value)
                steps = sorted(s for s, v in by_step.items() if len(v) == len(rs))
                if not rs or not steps:
                    continue
                mean = [statistics.fmean(by_step[s]) for s in steps]
                half = [2 * statistics.stdev(by_step[s]) / math.sqrt(len(rs)) if len(rs) > 1 else 0 for s in steps]
                ax = axes[row][col]
                (line,) = ax.plot(steps, mean, label=config)
                lower = [m - h for m, h in zip(mean, half)]
                upper = [m + h for m, h in zip(mean, half)]
                ax.fill_between(steps, lower, upper, color=line.get_color(), alpha=0.15)
        axes[0][col].set(title=f"verifier wrong on p = {noise:g} of pairs", ylabel="wrongly rewarded share")
        axes[1][col].set(xlabel="optimizer step", ylabel="true accuracy")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", default="outputs/verifier_study")
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument("--noise", nargs="+", type=float, default=NOISE)
    parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
    parser.add_argument("--max_steps", type=int, default=MAX_STEPS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--allow_dirty", action="store_true", help="run with uncommitted changes (not for the study)")
    args = parser.parse_args(argv)
    commit = git_commit()
    if not args.allow_dirty and (commit is None or commit.endswith("+dirty")):
        parser.error(f"the study runs at a clean commit (now: {commit}): commit first, or pass --allow_dirty")
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = read_results(out)["runs"] if (out / RESULTS_FILE).exists() else []
    done = {(r["config"], r["seed"], r["noise"]) for r in records}
    if not (out / "pip_freeze.txt").exists():
        freeze = subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=False)
        (out / "pip_freeze.txt").write_text(freeze.stdout)
    s = {"max_steps": args.max_steps, "commit": commit}
    jobs = [
        (c, seed, p, s) for seed in args.seeds for p in args.noise for c in args.configs if (c, seed, p) not in done
    ]
    machine = describe_machine(args.workers)
    print(f"{len(jobs)} runs to do ({len(done)} done) on {machine}", flush=True)

    def order(runs: list[dict]) -> list[dict]:
        return sorted(runs, key=lambda r: (r["noise"], r["seed"], CONFIGS.index(r["config"])))

    def write() -> None:
        ordered = order(records)
        report = {
            "machine": machine,
            "command": "python benchmarks/verifier_study.py " + " ".join(argv or sys.argv[1:]),
        }
        write_results(out, {**report, "runs": ordered})  # the curves into curves.parquet
        (out / "table.md").write_text(table(ordered))

    if args.workers > 1 and len(jobs) > 1:
        with multiprocessing.get_context("spawn").Pool(args.workers, initializer=init_worker) as pool:
            for record in pool.imap_unordered(run, jobs):
                records.append(record)
                write()  # each finished run kept: a stopped study goes on from here
                print(json.dumps({k: record[k] for k in ("config", "seed", "noise", "true_accuracy")}), flush=True)
    else:
        init_worker()
        for job in jobs:
            records.append(run(job))
            write()
    write()
    records = read_results(out)["runs"]  # as kept on disk (curves in float32), in the table's order
    if records:
        plot(records, out / "verifier_study.png")
    print(table(records))
    return records


if __name__ == "__main__":
    main()
