"""The testbed search (issue 55): settings where the parent (DAPO) learns on SmolLM2-135M-Instruct, searched on the
arithmetic dev split before any paired study; pre-registered in benchmarks/results/testbed_search/PLAN.md.

    python benchmarks/testbed_search.py --workers 1 --threads 1 --time_limit_minutes 120 --resume \\
        --output_dir benchmarks/results/testbed_search          # one chunk: starts no run it cannot finish in time
    python benchmarks/testbed_search.py --quick --allow_dirty --output_dir /tmp/testbed_search_quick   # smoke run

DAPO only (benchmarks/real_model_runs.py's "DAPO": token-level clip 0.2 / 0.28, dual clip delta 3.0), one candidate
(CANDIDATES: a task setting from TASKS, a learning rate, updates per rollout batch, LoRA or not) after another. Stage 1
trains every candidate with STAGE1_SEEDS; when stage 1 is complete, the two best candidates by mean dev gain / SD of
the gains (`stage2_choice`) get STAGE2_SEEDS too, and `verdict` says over their 5 seeds whether one is a testbed: the
mean dev gain over the base model exceeds 2 SE, at least 4 of 5 seeds gain, no run collapsed (final training reward
< 0.05 or final entropy > 3.0 nats, the collapse study's rules). Every model, each task's base model included, is
scored by `up-trl eval` on the same dev problems (EVAL) with the same sampling seed; the test split is left for the
study, and so are STUDY_SEEDS. The task settings, candidates and the runner's machinery are in testbed.py, which
the study shares.

Runs go one at a time to --workers fresh processes of --threads torch threads; none starts unless its estimate says
it ends within --time_limit_minutes. Each finished run is appended to runs.partial.jsonl and results.json, table.md
and curves.parquet are rewritten after each, so a stopped search loses only the run in flight: --resume goes on from
results.json and runs.partial.jsonl, and refuses a record made with other settings or at another commit of the code
(src/, benchmarks/*.py, pyproject.toml; results do not count). A search starts only from a clean code tree (else
--allow_dirty, whose records say "+dirty"). The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench import PARTIAL_FILE, describe_machine, mean_std, write_results
from testbed import (
    CANDIDATES,
    EVAL,
    STUDY_SEEDS,
    TASKS,
    check_stored,
    code_commit,
    job_name,
    job_of,
    keep,
    run_in_pool,
    settings_of,
    stored,
)

STAGE1_SEEDS = (910, 911)  # no earlier run used them (0-29, 42, 100-109, 300-309, 900-902)
STAGE2_SEEDS = (912, 913, 914)
STAGE2_CANDIDATES = 2
SD_FLOOR = 0.02  # the stage-2 ranking divides by max(SD of the 2 gains, this): two equal gains are not infinitely sure
# The budget's sizes (PLAN.md, "Budget"; base/timing.json): seconds per optimizer step averaged over a rollout batch
# (its generation included), by task and updates per rollout batch, and LoRA's; minutes per dev evaluation. A run
# not yet timed in full is estimated at SAFETY x steps x step + eval.
STEP_SECONDS = {
    ("add-3shot-numonly", 2): 11.2,
    ("add-3shot-numonly", 4): 13.0,
    ("add-3shot", 2): 16.6,
    ("add-3shot", 4): 18.0,
}
LORA_STEP_SECONDS = {"add-3shot-numonly": 19.5}
EVAL_MINUTES = {"add-3shot-numonly": 5.0, "add-3shot": 6.0}
SAFETY = 1.2


def prompt_draws(s: dict) -> int:
    """Prompts a run draws: rollout batches (max_steps / updates per batch) x prompts per batch."""
    updates = s["steps_per_generation"] * s["num_iterations"]
    per_batch = s["per_device_train_batch_size"] * s["steps_per_generation"] // s["num_generations"]
    return s["max_steps"] // updates * per_batch


def estimate_minutes(name: str, runs: list[dict]) -> float:
    """How long a job will take: 1.1 x the slowest finished job of the same candidate (or task's base model), else
    SAFETY x the timed sizes."""
    mine = [r for r in runs if job_name(r) == name and r["config"] == ("before" if name in TASKS else "DAPO")]
    if mine:
        return 1.1 * max(r.get("train_minutes", 0) + r["eval_minutes"] for r in mine)
    if name in TASKS:
        return SAFETY * EVAL_MINUTES[name]
    c = CANDIDATES[name]
    updates = c["steps_per_generation"] * c["num_iterations"]
    step = LORA_STEP_SECONDS[c["task"]] if c["lora_r"] else STEP_SECONDS[c["task"], updates]
    return SAFETY * (c["max_steps"] * step / 60 + EVAL_MINUTES[c["task"]])


# --- the rules ------------------------------------------------------------------------------------------------------


def gains(runs: list[dict], name: str) -> list[float]:
    """A candidate's dev gains over its task's base model, one per finished seed, in seed order."""
    return [r["gain"] for r in sorted((r for r in runs if r.get("candidate") == name), key=lambda r: r["seed"])]


def stage2_choice(runs: list[dict], names: list[str]) -> list[str]:
    """The candidates stage 2 goes on with: of those with every stage-1 seed finished, a positive mean gain and no
    collapsed run, the STAGE2_CANDIDATES best by mean gain / max(SD of the gains, SD_FLOOR), ties in CANDIDATES order.

    >>> g = [("a", 910, .1), ("a", 911, .3), ("b", 910, .05), ("b", 911, .06), ("c", 910, -.1), ("c", 911, .4)]
    >>> runs = [{"candidate": c, "seed": s, "gain": g, "collapsed": False} for c, s, g in g]
    >>> stage2_choice(runs, ["a", "b", "c"])
    ['b', 'a']
    """
    score = {}
    for name in names:
        mine = [r for r in runs if r.get("candidate") == name and r["seed"] in STAGE1_SEEDS]
        mean, sd = mean_std([r["gain"] for r in mine])
        if len(mine) == len(STAGE1_SEEDS) and mean > 0 and not any(r["collapsed"] for r in mine):
            score[name] = mean / max(sd, SD_FLOOR)
    return sorted(score, key=lambda n: (-score[n], names.index(n)))[:STAGE2_CANDIDATES]


def verdict(runs: list[dict], name: str) -> dict:
    """The condition a testbed meets, over its STAGE1_SEEDS + STAGE2_SEEDS runs: mean dev gain > 2 SE (SE = SD of
    the gains / sqrt(seeds)), at least 4 of 5 seeds gain (> 0), no run collapsed.

    >>> runs = [{"candidate": "a", "seed": 910 + i, "gain": g, "collapsed": False} for i, g in
    ...         enumerate([0.1, 0.12, 0.08, 0.11, -0.01])]
    >>> v = verdict(runs, "a"); (v["seeds"], v["gained"], v["meets"])
    (5, 4, True)
    """
    mine = [r for r in runs if r.get("candidate") == name]
    g = [r["gain"] for r in mine]
    n = len(g)
    mean, sd = mean_std(g)
    se = sd / n**0.5 if n > 1 else None
    gained = sum(x > 0 for x in g)
    collapsed = sum(bool(r["collapsed"]) for r in mine)
    complete = n == len(STAGE1_SEEDS) + len(STAGE2_SEEDS)
    meets = complete and mean > 2 * se and gained >= 4 and collapsed == 0
    fresh, _ = mean_std([r["gain"] for r in mine if r["seed"] in STAGE2_SEEDS])  # beside it: seeds that chose nothing
    return {
        "seeds": n,
        "mean_gain": mean,
        "sd": sd,
        "two_se": None if se is None else 2 * se,
        "gained": gained,
        "collapsed": collapsed,
        "complete": complete,
        "meets": meets,
        "stage2_mean_gain": fresh,
    }


def next_jobs(runs: list[dict], names: list[str], seeds1, seeds2) -> list[tuple[str, int | None]]:
    """The (candidate or task, seed) jobs still to run, in order: the tasks' base models, stage 1 seed by seed, then
    (once stage 1 is complete) stage 2's candidates seed by seed."""
    done = {(job_name(r), r["seed"]) for r in runs}
    tasks = list(dict.fromkeys(CANDIDATES[n]["task"] for n in names))
    stage1 = [(t, None) for t in tasks] + [(n, s) for s in seeds1 for n in names]
    todo = [j for j in stage1 if j not in done]
    if todo:
        return todo
    return [(n, s) for s in seeds2 for n in stage2_choice(runs, names) if (n, s) not in done]


def record_of(
    name: str, seed: int | None, result: dict, runs: list[dict], stage: int | None, commit: str | None
) -> dict:
    """One results.json record: what the issue asks of each run (candidate, seed, commit, learning_rate,
    steps_per_generation, num_iterations, dev figures), its base model's, final reward and entropy, collapsed."""
    s = result["settings"]
    k = s["k"]
    if name in TASKS:
        return {"task": name, "commit": commit, "dev_avg": result["after"][f"avg@{k}"], **result}
    base = next(r for r in runs if r.get("task") == CANDIDATES[name]["task"] and r["config"] == "before")
    dev = result["after"][f"avg@{k}"]
    return {
        "candidate": name,
        "stage": stage,
        "seed": seed,
        "commit": commit,
        "task": CANDIDATES[name]["task"],
        **{key: s[key] for key in ("learning_rate", "steps_per_generation", "num_iterations", "lora_r", "max_steps")},
        "updates_per_rollout_batch": s["steps_per_generation"] * s["num_iterations"],
        "rollout_batch_completions": s["per_device_train_batch_size"] * s["steps_per_generation"],
        "prompt_draws": prompt_draws(s),
        "dev_problems": result["after"].get("problems"),
        "k": k,
        "dev_avg": dev,
        "dev_pass": result["after"].get(f"pass@{k}"),
        "base_avg": base["dev_avg"],
        "base_pass": base["after"].get(f"pass@{k}"),
        "gain": round(dev - base["dev_avg"], 4),
        **result,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1, help="processes (one fresh process per run)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--time_limit_minutes", type=float, default=110, help="start no run that would end later")
    parser.add_argument("--resume", action="store_true", help="go on from output_dir's results and partial file")
    parser.add_argument("--report_only", action="store_true", help="rewrite results.json and table.md, run nothing")
    parser.add_argument("--allow_dirty", action="store_true", help="run from a code tree with uncommitted changes")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 2 candidates, 1 seed each, 2 steps, tiny eval"
    )
    parser.add_argument("--output_dir", default="outputs/benchmarks/testbed_search")
    args = parser.parse_args(argv)
    from up_trl.models.offline import smollm2_path

    commit = code_commit()
    if commit and commit.endswith("+dirty") and not (args.allow_dirty or args.report_only):
        sys.exit(
            "the code (src/, benchmarks/*.py, pyproject.toml) has uncommitted changes: commit them first, "
            "so that every record names the code it ran (or --allow_dirty to try the runner out)."
        )
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    first_of_each_task: dict[str, str] = {}
    for name, c in CANDIDATES.items():
        first_of_each_task.setdefault(c["task"], name)
    names = list(first_of_each_task.values())[:2] if args.quick else list(CANDIDATES)
    seeds1, seeds2 = (STAGE1_SEEDS[:1], ()) if args.quick else (STAGE1_SEEDS, STAGE2_SEEDS)
    model = smollm2_path()
    settings = {n: settings_of(n, model, out) for n in [*TASKS, *names]}
    for s in settings.values():
        s["commit"] = commit
        if args.quick:
            s |= {"k": 2, "benchmark_limit": 2, "max_completion_length": 16}
            s |= {"max_steps": 2} if "max_steps" in s else {}
    runs = stored(out, args.resume or args.report_only)
    check_stored(runs, settings, commit)
    machine = describe_machine(args.workers) + (f" ({args.threads} torch threads each)" if args.threads != 1 else "")
    start, deadline = time.perf_counter(), time.time() + args.time_limit_minutes * 60
    command = "python benchmarks/testbed_search.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def save() -> dict:
        report = summary(runs, names, commit, machine, command, seeds1, seeds2, settings[names[0]])
        write_results(out, report)  # results.json (one line per run), curves.parquet (training reward, entropy)
        (out / "table.md").write_text(table(report))
        return report

    def finish(name: str, seed: int | None, result: dict) -> None:
        stage = None if seed is None else 1 if seed in seeds1 else 2
        rec = record_of(name, seed, result, runs, stage, commit)
        minutes = (time.perf_counter() - start) / 60
        keep(out, runs, rec, save, f"[{minutes:6.1f} min] {name} seed {seed}: dev {rec['dev_avg']:.3f}")

    if not args.report_only:
        run_in_pool(
            args.workers,
            args.threads,
            deadline,
            todo=lambda: next_jobs(runs, names, seeds1, seeds2),
            estimate=lambda name: 1.0 if args.quick else estimate_minutes(name, runs),
            job=lambda name, seed: job_of(settings[name], deadline, seed, "DAPO", "off"),
            finish=finish,
        )
    report = save()
    if report["finished"]:
        (out / PARTIAL_FILE).unlink(missing_ok=True)
    print(table(report))
    print(
        json.dumps(
            {
                "stage": report["stage"],
                "testbed": report["testbed"],
                "finished": report["finished"],
                "runs": len(runs),
                "wall_minutes": round((time.perf_counter() - start) / 60, 1),
            }
        ),
        flush=True,
    )
    return report


def summary(runs, names, commit, machine, command, seeds1, seeds2, first: dict) -> dict:
    """The search so far: each candidate's stage-1 figures, the stage-2 choice, each stage-2 verdict, the testbed."""
    stage1_done = not next_jobs(runs, names, seeds1, ())
    choice = stage2_choice(runs, names) if stage1_done else None
    candidates = {}
    for name in names:
        g = gains(runs, name)
        mean, sd = mean_std(g)
        candidates[name] = {
            **{k: v for k, v in CANDIDATES[name].items()},
            "seeds": len(g),
            "gains": g,
            "mean_gain": mean,
            "sd": sd,
            "collapsed": sum(bool(r["collapsed"]) for r in runs if r.get("candidate") == name),
        }
        if choice is not None and name in choice:
            candidates[name]["verdict"] = verdict(runs, name)
    verdicts = {n: c["verdict"] for n, c in candidates.items() if "verdict" in c}
    meeting = [n for n, v in verdicts.items() if v["meets"]]
    testbed = max(meeting, key=lambda n: verdicts[n]["mean_gain"] / max(verdicts[n]["two_se"], 1e-9), default=None)
    finished = stage1_done and all(v["complete"] for v in verdicts.values())
    return {
        "command": command,
        "machine": machine,
        "commit": commit,
        "seeds": {"stage1": list(seeds1), "stage2": list(seeds2), "reserved_for_study": list(STUDY_SEEDS)},
        "eval": {key: first[key] for key in EVAL},  # as run (--quick: smaller)
        "stage": 2 if stage1_done else 1,
        "stage2_choice": choice,
        "testbed": testbed,
        "finished": finished,
        "candidates": candidates,
        "base": {r["task"]: {"dev_avg": r["dev_avg"], **r["after"]} for r in runs if r["config"] == "before"},
        "runs": runs,
    }


def table(report: dict) -> str:
    def num(v, fmt="{:.3f}"):
        return "-" if v is None else fmt.format(v)

    lines = [
        f"Testbed search: DAPO on SmolLM2-135M-Instruct, scored on {report['eval']['benchmark_limit']} arithmetic dev "
        f"problems, k={report['eval']['k']}, eval seed {report['eval']['eval_seed']}. Code commit {report['commit']}; "
        f"machine: {report['machine']}. Plan: PLAN.md beside this table.",
        "",
        "| task | base dev avg@k | base pass@k |",
        "|---|---|---|",
        *[
            f"| {t} | {b['dev_avg']:.3f} | {num(b.get('pass@' + str(report['eval']['k'])))} |"
            for t, b in report["base"].items()
        ],
        "",
        "| candidate | task | lr | updates / rollout (spg x iters) | LoRA r | seeds | dev gain per seed | mean gain "
        "| SD | collapsed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in report["candidates"].items():
        lines.append(
            f"| {name} | {c['task']} | {c['learning_rate']:g} | {c['steps_per_generation'] * c['num_iterations']} "
            f"({c['steps_per_generation']} x {c['num_iterations']}) | {c['lora_r'] or '-'} | {c['seeds']} | "
            f"{', '.join(f'{g:+.3f}' for g in c['gains']) or '-'} | {num(c['mean_gain'], '{:+.3f}')} | "
            f"{num(c['sd'])} | {c['collapsed']} |"
        )
    lines.append("")
    if report["stage"] == 1:
        lines.append("Stage 1 not complete: no stage-2 choice yet. Not decided.")
    else:
        lines.append(f"Stage 2 goes on with: {', '.join(report['stage2_choice']) or 'none (no candidate qualified)'}.")
        for name in report["stage2_choice"]:
            v = report["candidates"][name]["verdict"]
            lines.append(
                f"- {name}: {v['seeds']} seeds, mean gain {num(v['mean_gain'], '{:+.3f}')}, 2 SE {num(v['two_se'])}, "
                f"{v['gained']} gained, {v['collapsed']} collapsed (mean gain of the 3 stage-2 seeds alone "
                f"{num(v['stage2_mean_gain'], '{:+.3f}')}): "
                + ("meets the condition" if v["meets"] else "does not meet it" if v["complete"] else "not run in full")
            )
        if report["testbed"]:
            lines.append(f"\nTestbed found: {report['testbed']}.")
        elif report["finished"]:
            lines.append("\nNo candidate met the condition: no testbed found.")
        else:
            lines.append("\nNot decided: stage 2 not run in full.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
