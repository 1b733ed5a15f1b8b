"""Collapse: UP against its parent and against UP with a guard, paired seed by seed, counting collapsed runs.

(Draft: the pre-registration is written here before the full runs.)
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sample_efficiency as se  # noqa: E402
from staleness_sweep import _init_worker, _warm_start, describe_machine, mean_std, open_partial  # noqa: E402

FAMILIES = ("DAPO", "GRPO", "GSPO")
# Candidate guards: the settings each adds to UP-<family> (names "UP-<family> + <guard>").
GUARDS: dict[str, dict] = {}
CONFIGS: dict[str, dict] = {}
for family in FAMILIES:
    CONFIGS[family] = dict(se.CONFIGS[family])
    CONFIGS[f"UP-{family}"] = dict(se.CONFIGS[f"UP-{family}"])
    for guard, settings in GUARDS.items():
        CONFIGS[f"UP-{family} + {guard}"] = {**se.CONFIGS[f"UP-{family}"], **settings}

# Updates per rollout batch of 128 -> how the batch is reused (staleness_sweep.LEVELS, plus more passes).
LEVELS: dict[int, dict] = {
    4: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=1),
    16: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=4),
    32: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=8),
    64: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=16),
}
# Every arm: the opt-in shared-prompt forward (measured ~25% less CPU here); it needs activation checkpointing off.
SPEED = dict(share_prompt_prefix=True, activation_checkpointing=False)
# Logged every step and kept (rounded) in each record: the curves the figures and the warning's tests read.
CURVE_KEYS = ("entropy", "reward", "rewards/true_accuracy/mean", "up/positive_abs_log_ratio_mean",
              "up/would_clip_frac",
              "up/capacity_up_mean", "clip_ratio/region_mean", "grad_norm", "frac_reward_zero_std",
              "up/guard_masked_frac")  # fmt: skip


TAIL_LENGTH, TAIL_FILLER, TAIL_NOISE, TAIL_POOL = 4, ".", 0.2, "abcdefghijklmnopqrstuvwxyz"


@functools.lru_cache(maxsize=2)
def warm_start_tail(seed: int, steps: int = 120, tail_length: int = TAIL_LENGTH, tail_noise: float = TAIL_NOISE):
    """The stress task's warm start: sample_efficiency.warm_start's model and prompts, taught to reply with a random
    digit and a reward-irrelevant tail of TAIL_LENGTH characters, each TAIL_FILLER with probability 1 - TAIL_NOISE,
    else a random letter (so a tail token is likely, p ~ 0.8, or rare, p ~ 0.008), then EOS. A stand-in for the
    long replies of the public report, where the reward reads the final answer and most tokens do not matter."""
    from up_trl.models import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=seed)
    prompts, _ = se.task(100)
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                           add_generation_prompt=True) for p in prompts]  # fmt: skip
    prompt_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    rng = random.Random(seed)

    def reply():
        tail = "".join(TAIL_FILLER if rng.random() > tail_noise else rng.choice(TAIL_POOL) for _ in range(tail_length))
        return tokenizer(str(rng.randrange(10)) + tail, add_special_tokens=False)["input_ids"] + [
            tokenizer.eos_token_id
        ]

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        ids = torch.tensor([prompt_ids[rng.randrange(len(prompt_ids))] + reply() for _ in range(32)])
        labels = ids.clone()
        labels[:, : len(prompt_ids[0])] = -100
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval(), tokenizer


def toy_run(name: str, seed: int, level: int, settings: dict) -> dict:
    """One toy run of `name` at `level` updates per rollout: sample_efficiency.run_one's task, model, warm start and
    trainer settings, with the level's reuse and SPEED; returns the record (curves included)."""
    from datasets import Dataset
    from transformers import PrinterCallback

    from up_trl import UPGRPOConfig, UPGRPOTrainer

    tail = settings.get("task", "toy") == "tail"
    tail_length, tail_noise = settings.get("tail_length", TAIL_LENGTH), settings.get("tail_noise", TAIL_NOISE)
    base, tokenizer = (
        warm_start_tail(seed, tail_length=tail_length, tail_noise=tail_noise) if tail else _warm_start(seed)
    )
    prompts, golds = se.task(16)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts], "solution": golds})
    reward_funcs, weights = se.make_rewards("none", seed)
    with tempfile.TemporaryDirectory() as tmp:
        config = UPGRPOConfig(
            output_dir=tmp, seed=seed, use_cpu=True, bf16=False, report_to="none", save_strategy="no",
            disable_tqdm=True, logging_steps=1, max_steps=settings["max_steps"],
            learning_rate=settings["learning_rate"], lr_scheduler_type="constant", num_generations=8,
            gradient_accumulation_steps=1, max_completion_length=tail_length + 2 if tail else 3, temperature=1.0,
            top_k=0, beta=0.0,
            reward_weights=weights, **CONFIGS[name], **LEVELS[level], **SPEED,
        )  # fmt: skip
        import copy

        trainer = UPGRPOTrainer(model=copy.deepcopy(base), reward_funcs=reward_funcs, args=config,
                                train_dataset=dataset, processing_class=tokenizer)  # fmt: skip
        trainer.remove_callback(PrinterCallback)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    logs = trainer.state.log_history

    def curve(key):
        return [(h["step"], round(h[key], 4)) for h in logs if isinstance(h.get(key), (int, float))]

    curves = {key: curve(key) for key in CURVE_KEYS}
    window = settings["final_window"]
    last = settings["max_steps"] - window
    final_accuracy = statistics.fmean(v for s, v in curves["rewards/true_accuracy/mean"] if s > last)
    final_entropy = statistics.fmean(v for s, v in curves["entropy"] if s > last)
    return {"config": name, "seed": seed, "level": level, "final_accuracy": final_accuracy,
            "final_entropy": final_entropy, "collapsed": is_collapsed(final_accuracy, final_entropy),
            "seconds": round(seconds, 1), "curves": curves}  # fmt: skip


COLLAPSE_ACCURACY, COLLAPSE_ENTROPY = 0.05, 3.0
FINAL_WINDOW, STRESS_STEPS = 50, 300


def git_commit() -> str | None:
    """The commit the script runs from (None outside a git checkout), with "+dirty" when files differ from it."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def is_collapsed(final_accuracy: float, final_entropy: float) -> bool:
    """The pre-registered rule (see the module docstring)."""
    return final_accuracy < COLLAPSE_ACCURACY or final_entropy > COLLAPSE_ENTROPY


def _toy_job(job):
    name, seed, level, settings = job
    return toy_run(name, seed, level, settings)


def summarise(runs: list[dict]) -> dict:
    out = {}
    for key in sorted({(r["config"], r["level"]) for r in runs}, key=lambda k: (k[1], k[0])):
        mine = [r for r in runs if (r["config"], r["level"]) == key]
        mean, std = mean_std([r["final_accuracy"] for r in mine])
        out[f"{key[0]} @ {key[1]}"] = {
            "runs": len(mine),
            "collapsed": sum(r["collapsed"] for r in mine),
            "final_accuracy_mean": round(mean, 4),
            "final_accuracy_std": round(std, 4),
        }
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    parser.add_argument("--updates_per_rollout", nargs="+", type=int, default=[4, 16], choices=list(LEVELS))
    parser.add_argument("--max_steps", type=int, default=300)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--final_window", type=int, default=50)
    parser.add_argument("--task", choices=["toy", "tail"], default="toy")
    parser.add_argument("--tail_length", type=int, default=TAIL_LENGTH)
    parser.add_argument("--tail_noise", type=float, default=TAIL_NOISE)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--output_dir", default="outputs/collapse")
    args = parser.parse_args(argv)
    settings = {
        k: getattr(args, k)
        for k in ("max_steps", "learning_rate", "final_window", "task", "tail_length", "tail_noise")
    }
    jobs = [(name, seed, level, settings) for seed in args.seeds for level in args.updates_per_rollout
            for name in args.configs]  # fmt: skip
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    partial, runs = open_partial(out, args.resume)
    done = {(r["config"], r["seed"], r["level"]) for r in runs}
    jobs = [j for j in jobs if (j[0], j[1], j[2]) not in done]
    start = time.perf_counter()

    def record(run):
        runs.append(run)
        with partial.open("a") as f:
            f.write(json.dumps(run) + "\n")
        print(f"[{time.perf_counter() - start:6.0f} s] {run['config']:28s} @{run['level']:3d} seed {run['seed']} "
              f"acc {run['final_accuracy']:.3f} H {run['final_entropy']:.2f} "
              f"{'COLLAPSED' if run['collapsed'] else ''} ({run['seconds']} s)", flush=True)  # fmt: skip

    context = multiprocessing.get_context("fork")
    with context.Pool(args.workers, initializer=_init_worker) as pool:
        for run in pool.imap_unordered(_toy_job, jobs):
            record(run)
    summary = summarise(runs)
    report = {"machine": describe_machine(args.workers), "runs": runs, "summary": summary}
    (out / "results.json").write_text(json.dumps(report))
    print(json.dumps(summary))
    return report


if __name__ == "__main__":
    main()
