"""What the testbed search (testbed_search.py) and the paired study on its testbed (testbed_study.py) share, as a
helper module (no `__main__`): the search's task settings and candidates, a run's settings, the code commit every
record names, the stored runs a resumed chunk goes on from, and the pool of fresh worker processes that runs the jobs.
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from functools import partial
from pathlib import Path

from bench import PARTIAL_FILE, RESULTS_FILE, read_results
from real_model_runs import run_job, run_settings

STUDY_SEEDS = tuple(range(500, 520))  # reserved for the paired study: no search run uses them
NUMBER_ONLY = "Answer with the number only."

# The dev problems every model of a task is scored on: the first 192 of arithmetic's dev split shuffled by eval seed
# 42, k=4 samples each at temperature 1 (as trained), the task's prompt and completion length.
EVAL = {
    "benchmark": "arithmetic",
    "benchmark_split": "dev",
    "benchmark_limit": 192,
    "k": 4,
    "eval_seed": 42,
    "eval_batch_size": 32,
}
# Every run: DAPO on minibatches of one group (8 completions of one prompt), so a run's prompt draws are
# max_steps / num_iterations; a constant learning rate (the quickstart recipe's), no KL.
SHARED = {
    **EVAL,
    "dataset": "arithmetic",
    "delta": 3.0,
    "num_generations": 8,
    "per_device_train_batch_size": 8,
    "keep_models": False,
}
# The task settings of the search: the two with the most reward spread among those that passed the base filter
# (PLAN.md: base dev accuracy 0.10-0.60, spread in >= 40% of groups; base/ holds each measurement). They share the
# 3 worked examples and differ in the system turn and the completion length.
TASKS: dict[str, dict] = {
    "add-3shot-numonly": {
        "arithmetic_ops": ["add"],
        "arithmetic_few_shot": 3,
        "system_prompt": NUMBER_ONLY,
        "max_completion_length": 32,
    },
    "add-3shot": {
        "arithmetic_ops": ["add"],
        "arithmetic_few_shot": 3,
        "system_prompt": "none",  # no system turn of ours: SmolLM2's template adds its default one
        "max_completion_length": 48,
    },
}
PROMPT_DRAWS = 304  # per run: at least 300 (the pilot's runs saw about 16)


def candidate(task: str, learning_rate: float, updates: int, iterations: int = 1, lora_r: int | None = None) -> dict:
    """A candidate's settings: `updates` optimizer steps per rollout batch, `iterations` passes over it
    (steps_per_generation = updates / iterations), long enough for PROMPT_DRAWS prompt draws."""
    return {
        "task": task,
        "learning_rate": learning_rate,
        "steps_per_generation": updates // iterations,
        "num_iterations": iterations,
        "lora_r": lora_r,
        "max_steps": PROMPT_DRAWS * iterations,
    }


CANDIDATES: dict[str, dict] = {
    "addN3-lr1e-5-u2": candidate("add-3shot-numonly", 1e-5, 2),
    "addN3-lr1e-5-u4": candidate("add-3shot-numonly", 1e-5, 4),
    "addN3-lr3e-6-u2": candidate("add-3shot-numonly", 3e-6, 2),
    "addN3-lr3e-6-u4": candidate("add-3shot-numonly", 3e-6, 4),
    "addN3-lora16-lr1e-4-u2": candidate("add-3shot-numonly", 1e-4, 2, lora_r=16),
    "add3-lr1e-5-u2": candidate("add-3shot", 1e-5, 2),
    "add3-lr1e-5-u4": candidate("add-3shot", 1e-5, 4),
    "add3-lr3e-6-u2": candidate("add-3shot", 3e-6, 2),
}


def settings_of(name: str, model: str, out: Path) -> dict:
    """The `real_model_runs.run_job` settings of a candidate's runs, or of a task's base-model evaluation."""
    if name in TASKS:
        return {**SHARED, **TASKS[name], "model": model, "output_dir": str(out / name)}
    c = CANDIDATES[name]
    return {**SHARED, **TASKS[c["task"]], **c, "model": model, "output_dir": str(out / name)}


# --- the code's commit ----------------------------------------------------------------------------------------------

CODE_PATHS = ("src", "benchmarks/*.py", "pyproject.toml")  # what a run's numbers depend on; results are not code


def code_commit() -> str | None:
    """The last commit that changed the code (CODE_PATHS), "+dirty" when the code differs from it; None outside git.
    Results committed later do not change it, so a search goes on across chunks."""
    root = Path(__file__).resolve().parents[1]

    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        commit = git("log", "-1", "--format=%H", "--", *CODE_PATHS)
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def comparable(settings: dict) -> dict:
    """A run's settings as --resume compares them: the model by its folder's name (the cache folder moves)."""
    return {**settings, "model": Path(settings["model"]).name} if "model" in settings else settings


# --- the runner -----------------------------------------------------------------------------------------------------


def init(threads: int) -> None:
    """A fresh worker process: `threads` torch threads, transformers' errors only."""
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(threads)
    hf_logging.set_verbosity_error()


def job_name(record: dict) -> str:
    """The job a record is of: its candidate, or the task of a base model's evaluation."""
    return record.get("candidate", record.get("task"))


def stored(out: Path, resume: bool, name_of=job_name) -> list[dict]:
    """The runs a resumed search goes on from: results.json's, then runs.partial.jsonl's not already there
    (a run is its `name_of(record)` and seed)."""
    if not resume:
        (out / PARTIAL_FILE).unlink(missing_ok=True)
        return []
    runs = read_results(out)["runs"] if (out / RESULTS_FILE).exists() else []
    seen = {(name_of(r), r["seed"]) for r in runs}
    if (out / PARTIAL_FILE).exists():
        for line in (out / PARTIAL_FILE).read_text().splitlines():
            r = json.loads(line) if line.strip() else None
            if r and (name_of(r), r["seed"]) not in seen:
                runs.append(r)
                seen.add((name_of(r), r["seed"]))
    return runs


def check_stored(runs: list[dict], settings: dict[str, dict], commit: str | None, name_of=job_name) -> None:
    """Refuse to go on from a run made with other settings or another code commit than this search's."""
    for r in runs:
        name = name_of(r)
        if name not in settings:
            sys.exit(
                f"{name!r} (seed {r['seed']}) in the stored runs is not a candidate of this search: "
                "use another --output_dir."
            )
        want, have = comparable(run_settings(settings[name])), comparable(r["settings"])
        if want != have:
            diff = {k: have.get(k) for k in set(want) | set(have) if want.get(k) != have.get(k)}
            sys.exit(f"{name} seed {r['seed']} was run with other settings {diff}: use another --output_dir.")
        if r["commit"] != commit:
            sys.exit(
                f"{name} seed {r['seed']} was run at code commit {r['commit']}, this is {commit}: run the "
                "search from a worktree of that commit, or start it again in another --output_dir."
            )


def job_of(settings: dict, deadline: float, seed: int | None, config: str, up_mode: str | None) -> dict:
    """`run_job`'s argument: a training run of `config` (paired with DAPO's run of its seed), or with seed None the
    base model's evaluation."""
    base = seed is None
    return {
        "settings": settings,
        "deadline": deadline,
        "pair": None if base else "DAPO",
        "config": "before" if base else config,
        "up_mode": None if base else up_mode,
        "seed": seed,
    }


def keep(out: Path, runs: list[dict], record: dict, save, said: str) -> None:
    """A finished run's record: appended to `runs` and to runs.partial.jsonl (what --resume reads if the chunk stops
    before results.json is written again), then `save()`d and `said` with its gain over the base model."""
    runs.append(record)
    with (out / PARTIAL_FILE).open("a") as f:
        f.write(json.dumps(record) + "\n")
    save()
    gain = f" (gain {record['gain']:+.3f}, collapsed {record['collapsed']})" if record["seed"] is not None else ""
    print(said + gain, flush=True)


def run_in_pool(workers: int, threads: int, deadline: float, todo, estimate, job, finish, failures=None) -> None:
    """Run the jobs `todo()` returns, in order, on `workers` fresh processes of `threads` torch threads, until none is
    left or none left can end by `deadline` (`estimate(name)` minutes). A job is (name, seed); seed None is a base
    model's evaluation, which every training job waits for (not started beside it: it is scored against it).
    `job(name, seed)` is `run_job`'s argument, `finish(name, seed, result)` keeps a finished result. A failed job is
    said, appended to `failures` ({"name", "seed", "error"}) and skipped, so one failure loses no other run; a failed
    base evaluation stops what is left (no run could be scored against it)."""
    failed: set = set()
    stopped = False
    context = multiprocessing.get_context("spawn")  # a fresh process per run: no memory carried between runs
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=partial(init, threads), max_tasks_per_child=1
    ) as pool:
        running: dict = {}
        while True:
            left = [j for j in todo() if j not in failed and j not in running.values()]
            while left and len(running) < workers and not stopped:
                if any(s is None for _, s in running.values()):  # a base evaluation runs: the rest waits for it
                    break
                # the first job in order that can end in time (every job left is needed: order saves no work)
                fits = [j for j in left if time.time() + estimate(j[0]) * 60 <= deadline]
                if not fits or (fits[0][1] is not None and any(s is None for _, s in left)):
                    said = ", ".join(f"{n} seed {s} ~{estimate(n):.0f} min" for n, s in left[:3])
                    print(f"stopping: no job left ends within the time limit ({said}, ...)", flush=True)
                    stopped = True
                    break
                left.remove(fits[0])
                running[pool.submit(run_job, job(*fits[0]))] = fits[0]
            if not running:
                return
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name, seed = running.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # one failed run must not lose the others
                    print(f"FAILED: {name} seed {seed}: {exc!r}", flush=True)
                    if failures is not None:
                        failures.append({"name": name, "seed": seed, "error": repr(exc)[:300]})
                    failed.add((name, seed))
                    stopped |= seed is None  # no base model figures: no run of its task can be scored
                    continue
                if result.get("skipped"):  # past the deadline when it would have started
                    failed.add((name, seed))
                    continue
                finish(name, seed, result)
