"""The collapse warning's rescue, measured (PRE-REGISTRATION 3 in collapse_settings.py): a run that reaches the dead
state is stopped by the warning, then resumed from the last checkpoint before the warning's step, unchanged (the
control), with beta 0.05, and with beta 0.05 and half the learning rate (pre-registered), and, added after, with
a new rollout batch only and with half the learning rate only (EXPLORATORY); each resumed run goes on to 300 steps.

    python benchmarks/collapse_rescue.py --output_dir benchmarks/results/collapse_rescue            # seed 4
    python benchmarks/collapse_rescue.py --seeds 100 101 --output_dir outputs/rescue                # other seeds

The toy task at 4 updates per rollout, UP-DAPO and UP-GRPO, every arm from a saved warm start (TRL loads the
reference from it once beta > 0), a checkpoint every 5 steps. Writes results.json (one record per run: the first
run's warning step and checkpoint, each resume's final accuracy, collapsed, and the steps from the resume to the
first step from which the true accuracy stays at or above 0.05) under --output_dir; the last line printed is its
summary. A seed whose first run the dead-state warning does not stop is reported as such, with nothing resumed.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from pathlib import Path

from bench import cached_warm_start, describe_machine, git_commit
from collapse_settings import COLLAPSE_ACCURACY, CONFIGS
from toy_runs import TOY_ACCURACY, judge, toy_trainer

LEVEL, MAX_STEPS, SAVE_EVERY = 4, 300, 5
RESUMES = {"unchanged": {}, "beta 0.05": {"beta": 0.05}, "beta 0.05, lr / 2": {"beta": 0.05, "learning_rate": 5e-4}}
# Not pre-registered, added after the first rescue runs to tell the parts of the advice apart: a resume with beta > 0
# draws a new rollout batch at its next step (the checkpoint's has no reference log-probs), so "new batch only" keeps
# beta at 1e-6 (a KL too small to act) to measure the fresh batch alone; "lr / 2" is the advice's other half, alone.
EXPLORATORY = {"new batch only": {"beta": 1e-6}, "lr / 2": {"learning_rate": 5e-4}}


def make_trainer(name: str, seed: int, model_dir: str, output_dir: str, stop_on_collapse: bool, **overrides):
    """collapse.toy_trainer for `name` on the toy task from the warm start saved in `model_dir`, with a checkpoint
    every SAVE_EVERY steps; `overrides` change the config (a resume's settings)."""
    overrides = dict(overrides)  # RESUMES' dicts stay as they are
    settings = {"task": "toy", "max_steps": MAX_STEPS, "learning_rate": overrides.pop("learning_rate", 1e-3)}
    return toy_trainer(
        name,
        seed,
        LEVEL,
        settings,
        output_dir,
        model_dir,
        save_strategy="steps",
        save_steps=SAVE_EVERY,
        up_stop_on_collapse=stop_on_collapse,
        **overrides,
    )


def recovered_at(curve: list[list[float]], after: int) -> int | None:
    """The first logged step after `after` from which the accuracy never falls below the collapse bound again."""
    later = [(s, v) for s, v in curve if s > after]
    for i, (step, _) in enumerate(later):
        if all(v >= COLLAPSE_ACCURACY for _, v in later[i:]):
            return step
    return None


def rescue(name: str, seed: int, commit: str | None) -> dict:
    from up_trl.trainers.collapse_warning import CollapseWarningCallback

    base, _ = cached_warm_start(seed)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = str(Path(tmp) / "warm_start")
        copy.deepcopy(base).save_pretrained(model_dir)
        first = make_trainer(name, seed, model_dir, str(Path(tmp) / "first"), stop_on_collapse=True)
        start = time.perf_counter()
        first.train()
        warning = next(cb for cb in first.callback_handler.callbacks if isinstance(cb, CollapseWarningCallback))
        fired = warning.rule.fired and list(warning.rule.fired[:2])
        record = {
            "config": name,
            "seed": seed,
            "level": LEVEL,
            "commit": commit,
            "warning": fired,
            "stopped_at": first.state.global_step,
        }
        record["first_run"] = judge(
            first.state.log_history,
            first.state.global_step,
            accuracy_key=TOY_ACCURACY,
            final_window=min(50, first.state.global_step),
        )
        record["first_run"].pop("curves")
        checkpoints = [s for s in range(SAVE_EVERY, fired[0], SAVE_EVERY)] if fired else []
        if not fired or fired[1] != "dead state" or not checkpoints:
            record["resumes"] = None  # no dead state to rescue, or no checkpoint before it
            record["seconds"] = round(time.perf_counter() - start, 1)
            return record
        before = checkpoints[-1]  # the last checkpoint strictly before the warning's step
        record["resumed_from"] = before
        record["resumes"] = {}
        for label, overrides in {**RESUMES, **EXPLORATORY}.items():
            out = Path(tmp) / label.replace(" ", "_").replace("/", "")
            trainer = make_trainer(name, seed, model_dir, str(out), stop_on_collapse=False, **overrides)
            trainer.train(resume_from_checkpoint=str(Path(tmp) / "first" / f"checkpoint-{before}"))
            measures = judge(trainer.state.log_history, MAX_STEPS, accuracy_key=TOY_ACCURACY)
            at = recovered_at(measures["curves"][TOY_ACCURACY], before)
            record["resumes"][label] = {
                "final_accuracy": measures["final_accuracy"],
                "collapsed": measures["collapsed"],
                "recovered_at": at,
                "steps_to_recover": None if at is None else at - before,
                "accuracy_curve": measures["curves"][TOY_ACCURACY],
            }
        record["seconds"] = round(time.perf_counter() - start, 1)
    return record


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", nargs="+", type=int, default=[4])
    parser.add_argument("--configs", nargs="+", default=["UP-DAPO", "UP-GRPO"], choices=list(CONFIGS))
    parser.add_argument("--output_dir", default="outputs/collapse_rescue")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    commit = git_commit()
    runs = [rescue(name, seed, commit) for seed in args.seeds for name in args.configs]
    report = {
        "command": "python benchmarks/collapse_rescue.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": describe_machine(1),
        "commit": commit,
        "runs": runs,
    }
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=1) + "\n")
    summary = {
        f"{r['config']} seed {r['seed']}": {"warning": r["warning"], "resumed_from": r.get("resumed_from")}
        | {
            k: {
                "collapsed": v["collapsed"],
                "final_accuracy": round(v["final_accuracy"], 3),
                "steps_to_recover": v["steps_to_recover"],
            }
            for k, v in (r["resumes"] or {}).items()
        }
        for r in runs
    }
    print(json.dumps(summary), flush=True)
    return report


if __name__ == "__main__":
    main()
