"""The pilot that chooses the real-model study's testbed (issue 48): a setting where the parent (DAPO) learns.

    python benchmarks/testbed_pilot.py --output_dir benchmarks/results/testbed_pilot   # about 1 hour, 2 cores

SmolLM2-135M-Instruct, offline, trained with DAPO (configs as benchmarks/real_model.py's "DAPO") on one candidate
setting after another (CANDIDATES, in their order), PILOT_SEEDS each (seeds no study uses), every model scored on the
arithmetic task's dev split (never trained on, never the study's test split) with the same problems and sampling
seed as the base model. A candidate meets the condition when the mean over its seeds of (DAPO's dev avg@k minus the
base model's) exceeds 2 SE of that mean (SE = SD of the differences / sqrt(seeds)) and no run collapsed by the
collapse study's rules (final training reward < 0.05 or final entropy > 3.0 nats). The chosen testbed is the first
candidate in order that meets it; if none does, none is chosen. Jobs run in candidate order on --workers processes
and none starts after --time_limit_minutes, so a later candidate may be partly run: every finished run is reported.
Each finished job is appended to runs.partial.jsonl (--resume picks up from it); writes results.json (one record per
run: candidate, config, seed, commit, dev avg@k, final reward and entropy, collapsed), curves.parquet and table.md;
the last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from bench import describe_machine, git_commit, init_worker, mean_std, open_partial, write_results
from real_model_runs import run_job

PILOT_SEEDS = (900, 901, 902)  # no study uses them
# Shared by every candidate: the real-model studies' reuse (4 optimizer steps per rollout batch, 2 passes each: 8
# updates per rollout batch), the offline default's length and sampling, DAPO's clip and dual clip.
SHARED = {
    "dataset": "arithmetic",
    "benchmark": "arithmetic",
    "benchmark_split": "dev",
    "per_device_train_batch_size": 8,
    "steps_per_generation": 4,
    "num_iterations": 2,
    "max_completion_length": 64,
    "delta": 3.0,
    "eval_seed": 42,
    "eval_batch_size": 64,
    "keep_models": False,
}
# In the order they are tried. mul1 first: the one real setting where DAPO learned before (real_model_seeds, on
# the test split: 0.184 -> 0.648 avg@16); mul with 2 worked examples next (1-digit x 2-digit: 12-19% right with
# none, learning_signal); then the times table with one worked example. k x dev problems about 300 to 450.
CANDIDATES: dict[str, dict] = {
    "mul1-0shot-32steps": {"arithmetic_ops": ["mul1"], "arithmetic_few_shot": 0, "max_steps": 32, "k": 32},
    "mul-2shot-32steps": {"arithmetic_ops": ["mul"], "arithmetic_few_shot": 2, "max_steps": 32, "k": 8},
    "mul1-1shot-32steps": {"arithmetic_ops": ["mul1"], "arithmetic_few_shot": 1, "max_steps": 32, "k": 32},
}


def verdict(base: float | None, runs: list[dict], k: int, seeds: int = len(PILOT_SEEDS)) -> dict:
    """The condition for one candidate from its base model's dev avg@k and its finished DAPO runs."""
    diffs = [r["after"][f"avg@{k}"] - base for r in runs] if base is not None else []
    n = len(diffs)
    mean, sd = mean_std(diffs)
    se = sd / n**0.5 if n > 1 else None  # one seed has no spread to measure
    collapsed = sum(bool(r["collapsed"]) for r in runs)
    complete = n == seeds
    return {
        "seeds": n,
        "mean_gain": mean,
        "two_se": None if se is None else 2 * se,
        "collapsed": collapsed,
        "complete": complete,
        "meets": complete and se is not None and mean > 2 * se and collapsed == 0,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    parser.add_argument("--workers", type=int, default=2, help="processes, one torch thread each")
    parser.add_argument("--time_limit_minutes", type=float, default=55, help="start no new job after this")
    parser.add_argument("--resume", action="store_true", help="reuse the runs in output_dir/runs.partial.jsonl")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 2 steps, 2 problems, k 2")
    parser.add_argument("--output_dir", default="outputs/benchmarks/testbed_pilot")
    args = parser.parse_args(argv)
    from up_trl.models.offline import smollm2_path

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = PILOT_SEEDS[:1] if args.quick else PILOT_SEEDS
    commit, machine, start = git_commit(), describe_machine(args.workers), time.perf_counter()
    deadline = time.time() + args.time_limit_minutes * 60
    settings = {}
    for name in args.candidates:
        s = {**SHARED, **CANDIDATES[name], "model": smollm2_path(), "commit": commit, "output_dir": str(out / name)}
        if args.quick:
            s |= {"max_steps": 2, "k": 2, "max_completion_length": 16, "benchmark_limit": 2}
        settings[name] = {"benchmark_limit": 10**6, **s}
    jobs = [
        {
            "settings": settings[name],
            "deadline": deadline,
            "pair": pair,
            "config": config,
            "up_mode": mode,
            "seed": seed,
        }
        for name in args.candidates
        for pair, config, mode, seed in [(None, "before", None, None), *(("DAPO", "DAPO", "off", s) for s in seeds)]
    ]
    partial, runs = open_partial(out, args.resume)
    done = {(r["candidate"], r["config"], r["seed"]) for r in runs}
    jobs = [j for j in jobs if (Path(j["settings"]["output_dir"]).name, j["config"], j["seed"]) not in done]

    def record(job: dict, run: dict) -> None:
        if run.get("skipped"):
            return
        run = {"candidate": Path(job["settings"]["output_dir"]).name, **run}
        run.pop("settings", None)
        runs.append(run)
        with partial.open("a") as f:
            f.write(json.dumps(run) + "\n")
        k = job["settings"]["k"]
        print(
            f"[{(time.perf_counter() - start) / 60:6.1f} min] {run['candidate']} {run['config']} seed "
            f"{run['seed']}: dev avg@{k} {run['after'][f'avg@{k}']:.3f}",
            flush=True,
        )

    with ProcessPoolExecutor(
        args.workers, mp_context=multiprocessing.get_context("fork"), initializer=init_worker
    ) as pool:
        futures = {pool.submit(run_job, job): job for job in jobs}
        for future in as_completed(futures):
            try:
                record(futures[future], future.result())
            except Exception as exc:  # one failed run must not lose the others
                print(f"FAILED: {futures[future]['config']} seed {futures[future]['seed']}: {exc!r}", flush=True)

    report = {
        "command": "python benchmarks/testbed_pilot.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "commit": commit,
        "wall_minutes": round((time.perf_counter() - start) / 60, 1),
        "seeds": list(seeds),
        "candidates": {},
        "runs": runs,
    }
    for name in args.candidates:
        k = settings[name]["k"]
        base = next((r["after"][f"avg@{k}"] for r in runs if r["candidate"] == name and r["config"] == "before"), None)
        mine = [r for r in runs if r["candidate"] == name and r["config"] == "DAPO"]
        report["candidates"][name] = {
            "settings": {key: v for key, v in settings[name].items() if key not in ("model", "output_dir")},
            "base_avg": base,
            **verdict(base, mine, k, len(seeds)),
        }
    chosen = next((n for n, c in report["candidates"].items() if c["meets"]), None)
    report["chosen"] = chosen
    write_results(out, report)  # results.json (one line per run), curves.parquet (training reward, entropy)
    if all(c["complete"] for c in report["candidates"].values()):
        partial.unlink(missing_ok=True)
    (out / "table.md").write_text(table(report))
    print(table(report))
    print(json.dumps({"chosen": chosen, "wall_minutes": report["wall_minutes"]}), flush=True)
    return report


def table(report: dict) -> str:
    def num(v, fmt="{:.3f}"):
        return "-" if v is None else fmt.format(v)

    lines = [
        f"Testbed pilot: DAPO on SmolLM2-135M-Instruct, seeds {report['seeds']}, scored on the arithmetic dev split. "
        f"Commit {report['commit']}; machine: {report['machine']}; wall {report['wall_minutes']} min.",
        "",
        "| candidate | k | dev problems | base avg@k | DAPO avg@k per seed | mean gain | 2 SE | collapsed | meets |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in report["candidates"].items():
        k = c["settings"]["k"]
        mine = [r for r in report["runs"] if r["candidate"] == name]
        problems = next((r["after"].get("problems") for r in mine), None)
        per_seed = ", ".join(
            f"{r['after'][f'avg@{k}']:.3f}"
            for r in sorted((r for r in mine if r["config"] == "DAPO"), key=lambda r: r["seed"])
        )
        lines.append(
            f"| {name} | {k} | {num(problems, '{}')} | {num(c['base_avg'])} | {per_seed or '-'} | "
            f"{num(c['mean_gain'], '{:+.3f}')} | {num(c['two_se'])} | {c['collapsed']} | "
            f"{'yes' if c['meets'] else 'no' if c['complete'] else 'not run in full'} |"
        )
    chosen, unfinished = report["chosen"], [n for n, c in report["candidates"].items() if not c["complete"]]
    if chosen:
        verdict_line = f"Chosen testbed: {chosen}."
    elif unfinished:  # not measured is not "none found"
        verdict_line = f"No candidate met the condition so far; not run in full: {', '.join(unfinished)}. Not decided."
    else:
        verdict_line = "No candidate met the condition: no testbed found."
    lines += ["", verdict_line]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
