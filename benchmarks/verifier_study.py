"""Study B: does UP learn a consistently wrong verifier's mistakes faster than its clipped parent? (the referee's
falsifier, benchmarks/results/study_b_verifier/PREREGISTRATION.md).

    python benchmarks/verifier_study.py --output_dir benchmarks/results/study_b_verifier     # 90 runs, 2 workers
    python benchmarks/verifier_study.py --seeds 300 --noise 0.3 --max_steps 8 --output_dir /tmp/vs --allow_dirty

On the collapse study's toy task (16 prompts "a+b=", the gold is a; 16 updates per rollout batch, 300 steps, lr 1e-3)
each config trains against a verifier that is wrong on a fraction `noise` of (prompt, answer) pairs, the same pairs
in every arm of a seed (`noisy_verifier.ConsistentlyWrongVerifier`, keyed by the seed). Logged at weight 0: the true
accuracy and the share of samples the verifier wrongly rewards. Writes results.json at --output_dir's top (one
record per run: config, seed, commit, noise, true_accuracy, wrongly_rewarded_share, entropies, collapsed, runaway),
pip_freeze.txt once, table.md and verifier_study.png; a stopped study goes on from results.json when run again.
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

from bench import cached_warm_start, describe_machine, first_char, git_commit, init_worker, save_png
from bench import make_rewards as true_rewards
from noisy_verifier import ConsistentlyWrongVerifier
from toy_runs import TOY_ACCURACY, judge, toy_trainer

CONFIGS = ["DAPO", "UP-DAPO", "UP-DAPO + rare clip"]
NOISE = [0.0, 0.1, 0.3]
SEEDS = list(range(300, 310))  # no committed run used them
LEVEL, MAX_STEPS, LEARNING_RATE, FINAL_WINDOW = 16, 300, 1e-3, 50
WRONG_KEY = "rewards/wrongly_rewarded/mean"


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
    wrong = [h[WRONG_KEY] for h in logs if h.get("step", 0) > last and isinstance(h.get(WRONG_KEY), (int, float))]
    return {
        "config": config,
        "seed": seed,
        "commit": s["commit"],
        "noise": noise,
        "true_accuracy": measures["final_accuracy"],
        "wrongly_rewarded_share": statistics.fmean(wrong),
        "initial_entropy": measures["initial_entropy"],
        "final_entropy": measures["final_entropy"],
        "collapsed": measures["collapsed"],
        "runaway": measures["runaway"],
        "seconds": round(time.perf_counter() - start, 1),
    }


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
        "| noise | config | runs | true accuracy | wrongly rewarded share | accuracy - DAPO (2 SE; won/lost) "
        "| wrong share - DAPO (2 SE; won/lost) | runaway | collapsed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for noise in sorted({r["noise"] for r in records}):
        for config in CONFIGS:
            rs = [r for r in records if r["noise"] == noise and r["config"] == config]
            if not rs:
                continue
            cells = []
            for key in ("true_accuracy", "wrongly_rewarded_share"):
                d = paired(records, config, noise, key) if config != "DAPO" else None
                cells.append("" if d is None else f"{d['mean']:+.3f} (±{d['two_se']:.3f}; {d['won']}/{d['lost']})")
            acc = statistics.fmean(r["true_accuracy"] for r in rs)
            wrong = statistics.fmean(r["wrongly_rewarded_share"] for r in rs)
            lines.append(
                f"| {noise:g} | {config} | {len(rs)} | {acc:.3f} | {wrong:.3f} | {cells[0]} | {cells[1]} "
                f"| {sum(r['runaway'] for r in rs)} | {sum(r['collapsed'] for r in rs)} |"
            )
    return "\n".join(lines) + "\n"


def plot(records: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for i, config in enumerate(CONFIGS):
        for ax, key in zip(axes, ("true_accuracy", "wrongly_rewarded_share")):
            xs, ys, es = [], [], []
            for noise in sorted({r["noise"] for r in records}):
                vals = [r[key] for r in records if r["noise"] == noise and r["config"] == config]
                if vals:
                    xs.append(noise + (i - 1) * 0.006)
                    ys.append(statistics.fmean(vals))
                    es.append(2 * statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else 0)
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=config)
    axes[0].set(xlabel="verifier noise p", ylabel="final true accuracy", title="accuracy under the true reward")
    axes[1].set(xlabel="verifier noise p", ylabel="share of samples", title="wrongly rewarded samples, final")
    axes[0].legend(fontsize=8)
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
    results = out / "results.json"
    records = json.loads(results.read_text())["runs"] if results.exists() else []
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
        results.write_text(json.dumps({**report, "runs": ordered}, indent=1) + "\n")
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
    if records:
        plot(records, out / "verifier_study.png")
    print(table(order(records)))
    return order(records)


if __name__ == "__main__":
    main()
