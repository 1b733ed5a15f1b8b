"""The paired study on the search's testbed (issue 55, item 3): DAPO against UP-DAPO with the rare clip on
SmolLM2-135M-Instruct, scored on arithmetic's held-out test split; pre-registered in
benchmarks/results/testbed_study/PLAN.md before its first run.

    python benchmarks/testbed_study.py --workers 2 --threads 1 --time_limit_minutes 150 --resume \\
        --output_dir benchmarks/results/testbed_study      # one chunk: starts no run it cannot finish in time
    python benchmarks/testbed_study.py --quick --allow_dirty --candidate addN3-lr1e-5-u2 \\
        --output_dir /tmp/testbed_study_quick              # smoke run: 2 steps, 1 seed, a tiny eval

The testbed is the candidate that benchmarks/results/testbed_search/results.json names (`testbed`, the search
finished); the study refuses to start without one. Every run takes that candidate's settings (task, learning rate,
updates per rollout batch, LoRA, 304 prompt draws) and differs only in its objective (ARMS): DAPO as the search ran
it, and UP on it with the rare clip (`up_positive_min_prob` 0.05, the `up_dapo` recipe's "UP + safe"); plain UP-DAPO
is the third arm, run only once the primary pairs are complete. The base model and every run are scored by
`up-trl eval` on the same TEST problems with the same sampling seed.

Seeds: SEEDS (10, reserved for this study since the search's plan), each seed run under every arm: a pair shares its
seed, so its training problems and sampling stream start the same. Order: the base model, then seed by seed the
primary arms, then the third arm seed by seed. The rules (`paired`, `analysis`) are the plan's; the runner is the
search's (`testbed.run_in_pool`, `--resume`, the code commit in every record, a clean tree). The last line
printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

from bench import PARTIAL_FILE, RESULTS_FILE, describe_machine, mean_std, read_results, write_results
from testbed import (
    CANDIDATES,
    STUDY_SEEDS,
    TASKS,
    check_stored,
    code_commit,
    job_of,
    keep,
    run_in_pool,
    settings_of,
    stored,
)

SEARCH_RESULTS = Path(__file__).resolve().parent / "results/testbed_search/results.json"  # read, never written
SEEDS = STUDY_SEEDS[:10]  # 500-509; 510-519 stay unused (a replication's)
PRIMARY = ("DAPO", "UP-DAPO + rare clip")  # control, treatment
THIRD = "UP-DAPO"
# Each arm's objective on top of the candidate's settings (DAPO's loss settings, as the search and the dapo recipe).
ARMS: dict[str, dict] = {
    "DAPO": {"up_mode": "off"},
    "UP-DAPO + rare clip": {"up_mode": "asymmetric", "up_positive_min_prob": 0.05},
    "UP-DAPO": {"up_mode": "asymmetric"},
}
BASE = "base"
# The held-out problems: the first 256 of arithmetic's test split shuffled by eval seed 42, k=4 samples each at
# temperature 1 (1,024 samples: the issue asks for problems x k >= 800). Never seen in training or in the search.
TEST = {"benchmark_split": "test", "benchmark_limit": 256, "k": 4, "eval_seed": 42}
ALPHA = 0.05  # a difference is "detected" when the exact two-sided sign-flip p is below this


def arm_of(record: dict) -> str:
    """The arm of a record (the base model's evaluation is BASE)."""
    return record["arm"]


def sign_flip_p(diffs: list[float]) -> float | None:
    """Exact two-sided p of the paired sign-flip (permutation) test of mean(diffs) = 0: the share of the 2^n sign
    assignments whose |mean| is at least the observed one. None for fewer than 2 pairs.

    >>> sign_flip_p([0.1, 0.2, 0.3])  # every sign pattern but the two extremes has a smaller |mean|
    0.25
    >>> sign_flip_p([0.1, -0.1])
    1.0
    """
    if len(diffs) < 2:
        return None
    observed = abs(sum(diffs)) - 1e-12  # float sums of the same values in another order
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, diffs))) >= observed
        for signs in itertools.product((1, -1), repeat=len(diffs))
    )
    return hits / 2 ** len(diffs)


def paired(runs: list[dict], treatment: str, control: str, key: str, seeds=SEEDS) -> dict:
    """`key` of `treatment` minus `control`, seed by seed over the seeds where both finished: mean, SD, 2 SE, the exact
    sign-flip p, how many seeds favour the treatment, and whether a difference is detected (p < ALPHA, all of `seeds`
    paired)."""
    by_arm = {arm: {r["seed"]: r[key] for r in runs if r.get("arm") == arm} for arm in (treatment, control)}
    both = sorted(set(by_arm[treatment]) & set(by_arm[control]))
    diffs = [by_arm[treatment][s] - by_arm[control][s] for s in both]
    mean, sd = mean_std(diffs)
    p = sign_flip_p(diffs)
    complete = set(seeds) <= set(both)
    return {
        "pairs": len(diffs),
        "diffs": [round(d, 4) for d in diffs],
        "mean": mean,
        "sd": sd,
        "two_se": None if len(diffs) < 2 else 2 * sd / len(diffs) ** 0.5,
        "treatment_better": sum(d > 0 for d in diffs),
        "p": p,
        "complete": complete,
        "detected": complete and p is not None and p < ALPHA,
    }


def against_base(runs: list[dict], arm: str) -> dict:
    """An arm's test gain over the base model: mean, SD, 2 SE, seeds that gained; its collapses and runaways."""
    mine = [r for r in runs if r.get("arm") == arm]
    g = [r["gain"] for r in mine]
    mean, sd = mean_std(g)
    return {
        "seeds": len(g),
        "mean_gain": mean,
        "sd": sd,
        "two_se": None if len(g) < 2 else 2 * sd / len(g) ** 0.5,
        "gained": sum(x > 0 for x in g),
        "collapsed": sum(bool(r["collapsed"]) for r in mine),
        "runaway": sum(bool(r["runaway"]) for r in mine),
        "final_entropy": mean_std([r["final_entropy"] for r in mine])[0],
        "reward_area": mean_std([r["reward_area"] for r in mine])[0],
    }


def analysis(runs: list[dict], seeds=SEEDS) -> dict:
    """The plan's analysis: the primary paired test-accuracy difference; the secondaries (each arm against the base
    model, the paired area under the training-reward curve, the third arm against DAPO, collapses)."""
    treatment, control = PRIMARY[1], PRIMARY[0]
    return {
        "primary": paired(runs, treatment, control, "test_avg", seeds),
        "reward_area": paired(runs, treatment, control, "reward_area", seeds),
        "third_vs_control": paired(runs, THIRD, control, "test_avg", seeds),
        "third_area_vs_control": paired(runs, THIRD, control, "reward_area", seeds),
        "arms": {arm: against_base(runs, arm) for arm in ARMS},
    }


def reward_area(curve: list[list[float]]) -> float:
    """The area under the training-reward curve per logged point: the mean of the logged rewards (TRL logs the
    reward once per rollout batch, at its first step).

    >>> reward_area([[1, 0.0], [2, 0.5], [3, 1.0]])
    0.5
    """
    return sum(v for _, v in curve) / len(curve)


def next_jobs(runs: list[dict], seeds, third: bool) -> list[tuple[str, int | None]]:
    """The (arm, seed) jobs still to run, in order: the base model (seed None), the primary arms seed by seed, then
    (once every primary pair is done, and only with `third`) the third arm seed by seed."""
    done = {(r.get("arm", BASE), r["seed"]) for r in runs}
    primary = [(BASE, None)] + [(arm, s) for s in seeds for arm in PRIMARY]
    todo = [j for j in primary if j not in done]
    if todo or not third:
        return todo
    return [(THIRD, s) for s in seeds if (THIRD, s) not in done]


def record_of(arm: str, seed: int | None, result: dict, runs: list[dict], candidate: str, commit: str | None) -> dict:
    """One results.json record: arm, seed, commit, the candidate's settings that define it, test figures, the base
    model's, the gain, the training-reward area, final reward and entropy, collapsed and runaway."""
    s = result["settings"]
    k = s["k"]
    if arm == BASE:
        return {"arm": BASE, "commit": commit, "test_avg": result["after"][f"avg@{k}"], **result}
    base = next(r for r in runs if r.get("arm") == BASE)
    test = result["after"][f"avg@{k}"]
    return {
        "arm": arm,
        "seed": seed,
        "commit": commit,
        "candidate": candidate,
        **{key: s[key] for key in ("learning_rate", "steps_per_generation", "num_iterations", "lora_r", "max_steps")},
        "test_problems": result["after"].get("problems"),
        "k": k,
        "test_avg": test,
        "test_pass": result["after"].get(f"pass@{k}"),
        "base_avg": base["test_avg"],
        "gain": round(test - base["test_avg"], 4),
        "reward_area": round(reward_area(result["reward_curve"]), 4),
        **result,
    }


def settings_for(candidate: str, model: str, out: Path) -> dict[str, dict]:
    """Each job's `run_job` settings: the candidate's (search) with the TEST problems, plus each arm's objective."""
    common = {**settings_of(candidate, model, out), **TEST}
    task = settings_of(CANDIDATES[candidate]["task"], model, out)
    return {BASE: {**task, **TEST}, **{arm: {**common, **extra} for arm, extra in ARMS.items()}}


def the_testbed() -> str | None:
    """The candidate the finished search names as its testbed, else None."""
    if not SEARCH_RESULTS.exists():
        return None
    report = json.loads(SEARCH_RESULTS.read_text())
    return report.get("testbed") if report.get("finished") else None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1, help="processes (one fresh process per run)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--time_limit_minutes", type=float, default=110, help="start no run that would end later")
    parser.add_argument("--resume", action="store_true", help="go on from output_dir's results and partial file")
    parser.add_argument("--report_only", action="store_true", help="rewrite results.json and table.md, run nothing")
    parser.add_argument("--allow_dirty", action="store_true", help="run from a code tree with uncommitted changes")
    parser.add_argument("--third_arm", action="store_true", help="once the primary pairs are done, run plain UP-DAPO")
    parser.add_argument(
        "--candidate", help="only with --quick: the candidate to smoke-run (the study takes the search's)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 2 steps, tiny eval")
    parser.add_argument("--output_dir", default="outputs/benchmarks/testbed_study")
    args = parser.parse_args(argv)
    from up_trl.models.offline import smollm2_path

    candidate = args.candidate if args.quick else the_testbed()
    if args.candidate and not args.quick:
        sys.exit("--candidate is for --quick: the study runs the testbed the finished search names.")
    if candidate not in CANDIDATES:
        sys.exit(
            f"no testbed: {SEARCH_RESULTS} does not name one (the search is not finished, or found none); "
            "the plan runs the study only on the search's testbed."
        )
    commit = code_commit()
    if commit and commit.endswith("+dirty") and not (args.allow_dirty or args.report_only):
        sys.exit(
            "the code (src/, benchmarks/*.py, pyproject.toml) has uncommitted changes: commit them first, "
            "so that every record names the code it ran (or --allow_dirty to try the runner out)."
        )
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = SEEDS[:1] if args.quick else SEEDS
    settings = settings_for(candidate, smollm2_path(), out)
    for s in settings.values():
        s["commit"] = commit
        if args.quick:
            s |= {"k": 2, "benchmark_limit": 2, "max_completion_length": 16}
            s |= {"max_steps": 2} if "max_steps" in s else {}
    runs = stored(out, args.resume or args.report_only, name_of=arm_of)
    failures = read_results(out).get("failures", []) if (out / RESULTS_FILE).exists() and runs else []
    check_stored(runs, settings, commit, name_of=arm_of)
    machine = describe_machine(args.workers) + (f" ({args.threads} torch threads each)" if args.threads != 1 else "")
    start, deadline = time.perf_counter(), time.time() + args.time_limit_minutes * 60
    command = "python benchmarks/testbed_study.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def save() -> dict:
        report = summary(runs, candidate, commit, machine, command, seeds, settings[PRIMARY[0]], args.third_arm)
        report["failures"] = failures  # runs that raised (rerun by the next --resume): the table's notes
        write_results(out, report)  # results.json (one line per run), curves.parquet (training reward, entropy)
        (out / "table.md").write_text(table(report))
        return report

    def finish(arm: str, seed: int | None, result: dict) -> None:
        rec = record_of(arm, seed, result, runs, candidate, commit)
        minutes = (time.perf_counter() - start) / 60
        keep(out, runs, rec, save, f"[{minutes:6.1f} min] {arm} seed {seed}: test {rec['test_avg']:.3f}")

    if not args.report_only:
        run_in_pool(
            args.workers,
            args.threads,
            deadline,
            todo=lambda: next_jobs(runs, seeds, args.third_arm),
            estimate=lambda arm: 1.0 if args.quick else estimate_minutes(arm, runs, candidate),
            job=lambda arm, seed: job_of(
                settings[arm], deadline, seed, arm, None if seed is None else ARMS[arm]["up_mode"]
            ),
            finish=finish,
            failures=failures,
        )
    report = save()
    if report["finished"]:
        (out / PARTIAL_FILE).unlink(missing_ok=True)
    print(table(report))
    primary = report["analysis"]["primary"]
    wall = round((time.perf_counter() - start) / 60, 1)
    print(json.dumps({"finished": report["finished"], "runs": len(runs), "primary": primary, "wall_minutes": wall}))
    return report


def estimate_minutes(arm: str, runs: list[dict], candidate: str) -> float:
    """How long a job will take: 1.1 x the slowest finished training run of the study (any arm: they share every
    size) or of the search's candidate, its evaluation scaled from the search's dev problems to TEST's; a base model's
    evaluation 1.2 x the search's, scaled the same."""
    search = json.loads(SEARCH_RESULTS.read_text())["runs"] if SEARCH_RESULTS.exists() else []
    scale = TEST["benchmark_limit"] / 192  # the search scored 192 dev problems, at the same k
    if arm == BASE:
        mine = [r for r in runs if r.get("arm") == BASE]
        if mine:
            return 1.1 * max(r["eval_minutes"] for r in mine)
        task = CANDIDATES[candidate]["task"]
        return (
            1.2
            * scale
            * max(
                (r["eval_minutes"] for r in search if r.get("task") == task and r["config"] == "before"), default=6.0
            )
        )
    mine = [r["train_minutes"] + r["eval_minutes"] for r in runs if r.get("arm") in ARMS]
    theirs = [r["train_minutes"] + scale * r["eval_minutes"] for r in search if r.get("candidate") == candidate]
    return 1.1 * max(mine or theirs or [240.0])


def summary(runs, candidate, commit, machine, command, seeds, first: dict, third: bool) -> dict:
    """The study so far: the analysis, the candidate's settings, the seeds, whether it is finished."""
    left = next_jobs(runs, seeds, third)
    return {
        "command": command,
        "machine": machine,
        "commit": commit,
        "candidate": candidate,
        "candidate_settings": CANDIDATES[candidate],
        "task_settings": TASKS[CANDIDATES[candidate]["task"]],
        "arms": ARMS,
        "primary_arms": {"control": PRIMARY[0], "treatment": PRIMARY[1]},
        "seeds": list(seeds),
        "eval": {key: first[key] for key in ("benchmark", *TEST)},  # as run (--quick: smaller)
        "finished": not left,
        "primary_finished": not [j for j in left if j[0] != THIRD],
        "analysis": analysis(runs, seeds),
        "runs": runs,
    }


def table(report: dict) -> str:
    """The study's table: each arm against the base model, then the paired differences, then the verdict."""

    def num(v, fmt="{:.3f}"):
        return "-" if v is None else fmt.format(v)

    a, e = report["analysis"], report["eval"]
    base = next((r["test_avg"] for r in report["runs"] if r.get("arm") == BASE), None)
    lines = [
        f"Paired study on the testbed {report['candidate']}: SmolLM2-135M-Instruct, scored on {e['benchmark_limit']} "
        f"arithmetic {e['benchmark_split']} problems, k={e['k']}, eval seed {e['eval_seed']}; base model avg@k "
        f"{num(base)}. Code commit {report['commit']}; machine: {report['machine']}. Plan: PLAN.md beside this table.",
        "",
        "| arm | seeds | mean gain over base | 2 SE | seeds gained | collapsed | runaway | final entropy "
        "| training-reward area |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, s in a["arms"].items():
        lines.append(
            f"| {arm} | {s['seeds']} | {num(s['mean_gain'], '{:+.3f}')} | {num(s['two_se'])} | {s['gained']} | "
            f"{s['collapsed']} | {s['runaway']} | {num(s['final_entropy'])} | {num(s['reward_area'])} |"
        )
    lines += ["", "| paired difference | pairs | mean | 2 SE | favour the first | sign-flip p | per seed |"]
    lines.append("|---|---|---|---|---|---|---|")
    for label, key in (
        (f"test avg@k: {PRIMARY[1]} - {PRIMARY[0]} (primary)", "primary"),
        (f"training-reward area: {PRIMARY[1]} - {PRIMARY[0]}", "reward_area"),
        (f"test avg@k: {THIRD} - {PRIMARY[0]}", "third_vs_control"),
        (f"training-reward area: {THIRD} - {PRIMARY[0]}", "third_area_vs_control"),
    ):
        d = a[key]
        lines.append(
            f"| {label} | {d['pairs']} | {num(d['mean'], '{:+.4f}')} | {num(d['two_se'], '{:.4f}')} | "
            f"{d['treatment_better']} | {num(d['p'])} | {', '.join(f'{x:+.3f}' for x in d['diffs']) or '-'} |"
        )
    p = a["primary"]
    lines += [
        "",
        *(f"Note: {f['name']} seed {f['seed']} failed ({f['error']}); rerun." for f in report.get("failures", [])),
    ]
    if not p["complete"] or p["p"] is None:
        lines.append(f"Primary not decided: {p['pairs']} of {len(report['seeds'])} pairs finished.")
    elif p["detected"]:
        lines.append(f"Primary: a difference detected (p = {p['p']:.3f} < {ALPHA}), mean {p['mean']:+.4f}.")
    else:
        lines.append(
            f"Primary: no difference detected (p = {p['p']:.3f}, mean {p['mean']:+.4f}, 2 SE {p['two_se']:.4f}); "
            "not evidence that there is none."
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
