"""Collapse: a parent objective, its UP version and UP with each candidate guard, side by side on paired seeds
(same warm start, seed and data; only the objective differs), counting collapsed and runaway runs.

    python benchmarks/collapse.py --setting stress --output_dir benchmarks/results/collapse_stress     # 90 runs
    python benchmarks/collapse.py --setting toy --output_dir benchmarks/results/collapse_toy           # 180 runs
    python benchmarks/collapse.py --setting smollm2 --output_dir benchmarks/results/collapse_smollm2   # 9 runs
    python benchmarks/collapse.py --setting toy --seeds 0 --updates_per_rollout 4 --configs DAPO UP-DAPO  # one pair

Writes results.json (one record per run: config, seed, level, final_accuracy, final_entropy, collapsed, runaway,
the early warning's step), curves.parquet (every curve logged, or only the setting's `kept_curves`), table.md and
collapse.png under --output_dir (default outputs/collapse, which git ignores); runs.partial.jsonl holds each finished
run with all its curves (--resume goes on from it, --report_only rewrites the outputs). The last line printed is a
JSON summary: per config and level, runs, collapsed, final accuracy mean and std.

The pre-registered settings, rules and goals (PRE-REGISTRATION, committed in this docstring at afae796 before the
first study's full runs, and PRE-REGISTRATION 2, at 7480703 before the safe-UP runs) are in the docstring of
benchmarks/collapse_settings.py, beside the tables they describe. The committed "toy" and "stress" records (420 and
210 runs) also hold four guards that left the API (collapse_settings.RECORDED_ONLY_GUARDS): commit 05756b0 is the last
that can rerun them; `--report_only` still rewrites those reports from the records.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

from bench import describe_machine, git_commit, open_partial
from bench import init_worker as _init_worker
from collapse_report import (  # (re-exported: the tests read collapse.warning_report)
    distinct_failures,
    forecast_report,
    goal,
    markdown,
    measured_wins,
    plot,
    read_report,
    replay_warning,
    summarise,
    warning_report,
    write_report,
)
from collapse_settings import (  # the study's configs and settings
    COLLAPSE_ACCURACY,
    COLLAPSE_ENTROPY,
    CONFIGS,
    LEVELS,
    LOW_ENTROPY,
    REPORT_ORDER,
    RUNAWAY_MARGIN,
    SETTING_TEXT,
    SETTINGS,
    SMOLLM2,
)
from toy_runs import TOY_ACCURACY, is_collapsed, is_runaway, judge, toy_run, toy_trainer, warm_start_tail  # noqa: F401


def _toy_job(job):
    name, seed, level, settings = job
    return toy_run(name, seed, level, settings)


def smollm2_run(job: dict) -> dict:
    """One SmolLM2-135M run through `up-trl train` (real_model.py's pairs and flags, plus the config's guard flags),
    then `up-trl eval` on the held-out problems; measures from its metrics.jsonl (`judge`, on the training reward)."""
    import shutil

    from real_model_runs import score, train_argv

    from up_trl.cli import train
    from up_trl.run.card import read_metrics

    name, seed, s = job["config"], job["seed"], job["settings"]
    family = name.split(" + ")[0].removeprefix("UP-")
    run_dir = Path(s["output_dir"]) / "runs" / f"{name.replace(' ', '_').replace('+', 'plus')}-seed{seed}"
    argv = train_argv(s, family, "off" if name == family else "asymmetric", seed, str(run_dir))
    argv += [
        part
        for k, v in CONFIGS[name].items()
        if k == "up_positive_min_prob"  # the rare clip, UP's one guard
        for part in (f"--{k}", str(v))
    ]
    start = time.perf_counter()
    train(argv)
    minutes = round((time.perf_counter() - start) / 60, 2)
    after = score(str(run_dir), run_dir / "eval", s)
    for weights in run_dir.glob("*.safetensors"):
        weights.unlink()
    logs = read_metrics(run_dir / "metrics.jsonl")
    shutil.rmtree(run_dir / "eval", ignore_errors=True)
    record = {
        "config": name,
        "seed": seed,
        "level": SMOLLM2["updates_per_rollout"],
        "train_minutes": minutes,
        "commit": s.get("commit"),
    }
    record.update(judge(logs, s["max_steps"], accuracy_key="reward", initial_steps=4, final_window=8))
    record["eval"] = {k: after[k] for k in (f"avg@{s['k']}", "pass@4") if k in after}
    record["warning"] = replay_warning(logs)  # the callback ran inside `up-trl train`: its rule, on the same logs
    record["low_entropy"] = record["final_entropy"] < LOW_ENTROPY
    return record


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setting", choices=list(SETTINGS), default="toy")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), help="default: the setting's")
    parser.add_argument("--seeds", nargs="+", type=int, help="default: the setting's")
    parser.add_argument(
        "--updates_per_rollout", nargs="+", type=int, choices=list(LEVELS), help="default: the setting's"
    )
    parser.add_argument("--max_steps", type=int, help="default: the setting's")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--tail_length", type=int, default=None, help="stress task: tail tokens (exploration)")
    parser.add_argument("--tail_noise", type=float, default=None, help="stress task: rare-token rate (exploration)")
    parser.add_argument("--workers", type=int, default=2, help="processes, one torch thread each")
    parser.add_argument(
        "--model_from_path",
        action="store_true",
        help="every arm loads the warm start from a saved folder (needed for beta > 0; the safe_* settings always do)",
    )
    parser.add_argument("--resume", action="store_true", help="reuse the runs in output_dir/runs.partial.jsonl")
    parser.add_argument("--report_only", action="store_true", help="--resume, run nothing: rewrite the outputs")
    parser.add_argument("--output_dir", default="outputs/collapse")
    args = parser.parse_args(argv)
    setting = dict(SETTINGS[args.setting])
    configs = args.configs or setting["configs"]
    seeds = args.seeds if args.seeds is not None else setting["seeds"]
    levels = args.updates_per_rollout or setting["levels"]
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = {**setting, "max_steps": args.max_steps or setting["max_steps"], "learning_rate": args.learning_rate}
    settings["model_from_path"] = settings.get("model_from_path") or args.model_from_path
    for key in ("tail_length", "tail_noise"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    settings.pop("configs"), settings.pop("seeds"), settings.pop("levels")
    twins = settings.pop("twins", None)
    kept_curves = settings.pop("kept_curves", None)  # None: every curve the runs logged
    if args.setting == "smollm2":
        from up_trl.models.offline import smollm2_path

        settings.update(SMOLLM2, model=smollm2_path(), output_dir=str(out))
    if args.setting == "smollm2" and args.learning_rate != 1e-3:
        parser.error("--learning_rate: the smollm2 setting runs real_model.py's 3e-5; it takes no other value")
    commit = git_commit()  # the code the runs start from (recorded in each run too)
    settings["commit"] = commit
    jobs = [(name, seed, level) for seed in seeds for level in levels for name in configs]
    partial, runs = open_partial(out, args.resume or args.report_only)
    if args.report_only and not runs and (out / "results.json").exists():  # a committed folder keeps results only
        runs = read_report(out)["runs"]
    for run in runs:  # records from before runs kept their beta: the config's (a recorded-only guard's: 0)
        run.setdefault("beta", CONFIGS.get(run["config"], {}).get("beta", 0.0))
    done = {(r["config"], r["seed"], r["level"]) for r in runs}
    jobs = [] if args.report_only else [j for j in jobs if j not in done]
    machine = describe_machine(args.workers)
    start = time.perf_counter()
    print(f"{len(runs)} runs read, {len(jobs)} to go", flush=True)

    def record(run):
        runs.append(run)
        with partial.open("a") as f:
            f.write(json.dumps(run) + "\n")
        flags = " ".join(k.upper() for k in ("collapsed", "runaway") if run[k])
        print(
            f"[{time.perf_counter() - start:6.0f} s] {run['config']:30s} @{run['level']:3d} seed {run['seed']} "
            f"acc {run['final_accuracy']:.3f} H {run['initial_entropy']:.2f}->{run['final_entropy']:.2f} "
            f"warning {run['warning']} {flags}",
            flush=True,
        )

    if jobs and args.setting == "smollm2":
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # Not multiprocessing.Pool: its daemonic workers cannot start the reward's own process pool (real_model.py).
        with ProcessPoolExecutor(args.workers, mp_context=mp.get_context("fork"), initializer=_init_worker) as pool:
            futures = [
                pool.submit(smollm2_run, {"config": n, "seed": seed, "settings": settings}) for n, seed, _ in jobs
            ]
            for future in as_completed(futures):
                record(future.result())
    elif jobs:
        with multiprocessing.get_context("fork").Pool(args.workers, initializer=_init_worker) as pool:
            for run in pool.imap_unordered(_toy_job, [(n, s, lv, settings) for n, s, lv in jobs]):
                record(run)
    runs.sort(key=lambda r: (r["level"], REPORT_ORDER.index(r["config"]), r["seed"]))
    rows = summarise(runs, REPORT_ORDER)
    wins = measured_wins(rows)
    wall = round(time.perf_counter() - start, 1)
    commits = sorted({str(r.get("commit")) for r in runs})  # the runs' own (None: recorded before runs kept it)
    config_table = {c: CONFIGS[c] for c in configs}
    if args.report_only and (out / "results.json").exists():  # the runs' own wall time, machine and configs
        stored = json.loads((out / "results.json").read_text())
        wall, machine, commits = stored["wall_seconds"], stored["machine"], stored.get("run_commits", commits)
        config_table = stored.get("configs", config_table)
    header = (
        f"Setting {args.setting!r} ({SETTING_TEXT[args.setting]}); seeds {min(seeds)}-{max(seeds)}, paired "
        f"(same warm start, seed and data; only the objective differs). Collapsed: final accuracy < "
        f"{COLLAPSE_ACCURACY} or final entropy > {COLLAPSE_ENTROPY} nats; entropy runaway: final entropy > "
        f"initial + {RUNAWAY_MARGIN} nat; warned (live): the warning callback as it ran (the toy and stress "
        f"runs ran its first rule); warned: the shipped rule (collapse_warning.CollapseRule) replayed on the "
        f"run's logged curves. Machine: {machine}; commit "
        f"{', '.join(commits)}; wall {wall / 60:.0f} min."
    )
    report = {
        "command": "python benchmarks/collapse.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "commit": git_commit(),
        "run_commits": commits,
        "wall_seconds": wall,
        "setting": args.setting,
        "settings": {k: v for k, v in settings.items() if k != "output_dir"},
        "configs": config_table,
        "summary": rows,
        "measured_wins": wins,
        "goal": goal(rows, wins, runs, twins),
        "warning_report": warning_report(runs),
        "runs": runs,
    }
    report["forecast_report"] = forecast_report(runs)
    report["distinct_failures"] = distinct_failures(runs)
    write_report(out, report, kept_curves)
    (out / "table.md").write_text(markdown(rows, header))
    title = f"{args.setting}: {SETTING_TEXT[args.setting]}; seeds {min(seeds)}-{max(seeds)}"
    plot(runs, out / "collapse.png", title, REPORT_ORDER)
    print(markdown(rows, header))
    print(
        json.dumps(
            {
                f"{r['config']} @ {r['level']}": {
                    "runs": r["runs"],
                    "collapsed": r["collapsed"],
                    "final_accuracy_mean": round(r["final_accuracy_mean"], 4),
                    "final_accuracy_std": round(r["final_accuracy_std"], 4),
                }
                for r in rows
            }
        ),
        flush=True,
    )
    return report


if __name__ == "__main__":
    main()
