"""The toy and stress runs of the collapse studies, and the pre-registered measures of a run: a helper module (no
`__main__`), imported by collapse.py, collapse_cause.py, collapse_rescue.py and real_model_runs.py.

- `warm_start_tail`: the stress task's warm start (a reward-irrelevant tail after the answer digit);
- `toy_trainer` / `toy_run`: one run of a config at a reuse level, on the toy or the stress task;
- `judge`, `is_collapsed`, `is_runaway`: the measures and rules of benchmarks/collapse_settings.py's
  pre-registrations, from a run's log history.
"""

from __future__ import annotations

import functools
import random
import statistics
import tempfile
import time
from pathlib import Path

import bench as se  # the toy task (task, make_rewards, supervise, ...)
from bench import cached_warm_start as _warm_start
from collapse_settings import (
    COLLAPSE_ACCURACY,
    COLLAPSE_ENTROPY,
    CONFIGS,
    CURVE_KEYS,
    FINAL_WINDOW,
    INITIAL_WINDOW,
    LEVELS,
    RUNAWAY_MARGIN,
    SPEED,
    TAIL_FILLER,
    TAIL_LENGTH,
    TAIL_NOISE,
    TAIL_POOL,
)


@functools.lru_cache(maxsize=2)
def warm_start_tail(seed: int, steps: int = 120, tail_length: int = TAIL_LENGTH, tail_noise: float = TAIL_NOISE):
    """The stress task's warm start: sample_efficiency.warm_start's model and prompts, taught to reply with a random
    digit and a reward-irrelevant tail of TAIL_LENGTH characters, each TAIL_FILLER with probability 1 - TAIL_NOISE,
    else a random letter (so a tail token is likely, p ~ 0.8, or rare, p ~ 0.008), then EOS. A stand-in for the
    long replies of the public report, where the reward reads the final answer and most tokens do not matter."""
    from up_trl.models.offline import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=seed)
    rng = random.Random(seed)

    def reply():
        tail = "".join(TAIL_FILLER if rng.random() > tail_noise else rng.choice(TAIL_POOL) for _ in range(tail_length))
        return tokenizer(str(rng.randrange(10)) + tail, add_special_tokens=False)["input_ids"] + [
            tokenizer.eos_token_id
        ]

    return se.supervise(model, se.chat_prompt_ids(tokenizer), reply, rng, steps), tokenizer


def toy_trainer(name: str, seed: int, level: int, settings: dict, output_dir: str, model, rewards=None, **overrides):
    """The trainer of one toy or stress run: sample_efficiency.run_one's settings (16 prompts, 8 completions each, lr
    constant, beta 0, T 1), the level's reuse and SPEED; `model` an object or a saved folder; `overrides` change the
    config (collapse_rescue.py: checkpoints, the stop, a resume's settings); `rewards` (functions, weights) replace
    the true reward (verifier_study.py: a wrong verifier)."""
    from datasets import Dataset
    from transformers import PrinterCallback

    from up_trl import UPGRPOConfig, UPGRPOTrainer
    from up_trl.run.parts import attach_parts, with_parts

    tail = settings["task"] == "tail"
    tail_length = settings.get("tail_length", TAIL_LENGTH)
    tokenizer = (
        warm_start_tail(seed, tail_length=tail_length, tail_noise=settings.get("tail_noise", TAIL_NOISE))
        if tail
        else _warm_start(seed)
    )[1]
    prompts, golds = se.task(16)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts], "solution": golds})
    reward_funcs, weights = se.make_rewards("none", seed) if rewards is None else rewards
    base = dict(
        output_dir=output_dir,
        seed=seed,
        use_cpu=True,
        max_steps=settings["max_steps"],
        learning_rate=settings["learning_rate"],
        max_completion_length=tail_length + 2 if tail else 3,
        reward_weights=weights,
        beta=0.0,
        **se.TOY_TRAINER,
    )
    config = UPGRPOConfig(**{**base, **CONFIGS[name], **LEVELS[level], **SPEED, **overrides})
    # UPGRPOTrainer, each prompt computed once (SPEED), with the opt-in parts the committed runs had (the rescue
    # resumes with a changed learning rate: `ResumeSettingsMixin`; its checkpoints hold the rollout batch)
    trainer = with_parts(UPGRPOTrainer, share_prompt_prefix=True)(
        model=model, reward_funcs=reward_funcs, args=config, train_dataset=dataset, processing_class=tokenizer
    )
    attach_parts(trainer)
    trainer.remove_callback(PrinterCallback)
    return trainer


def toy_run(name: str, seed: int, level: int, settings: dict) -> dict:
    """One run of `name` at `level` updates per rollout on the toy or the stress task (`toy_trainer`)."""
    import copy

    from up_trl.trainers.collapse_warning import CollapseWarningCallback

    if settings["task"] == "tail":
        base, _ = warm_start_tail(
            seed,
            tail_length=settings.get("tail_length", TAIL_LENGTH),
            tail_noise=settings.get("tail_noise", TAIL_NOISE),
        )
    else:
        base, _ = _warm_start(seed)
    with tempfile.TemporaryDirectory() as tmp:
        model = copy.deepcopy(base)
        if settings.get("model_from_path"):  # every arm alike: TRL loads the reference (beta > 0) from the path
            base.save_pretrained(Path(tmp) / "warm_start")
            model = str(Path(tmp) / "warm_start")
        trainer = toy_trainer(name, seed, level, settings, tmp, model)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    warning = next(cb for cb in trainer.callback_handler.callbacks if isinstance(cb, CollapseWarningCallback))
    record = {
        "config": name,
        "seed": seed,
        "level": level,
        "seconds": round(seconds, 1),
        "commit": settings.get("commit"),
    }
    record["beta"] = trainer.args.beta  # the warning watches the dead state only with beta = 0
    record.update(judge(trainer.state.log_history, settings["max_steps"], accuracy_key=TOY_ACCURACY))
    record["warning"] = warning.rule.fired and list(warning.rule.fired[:2])  # what the live callback said, if anything
    return record


TOY_ACCURACY = "rewards/true_accuracy/mean"


def judge(
    logs: list[dict],
    max_steps: int,
    accuracy_key: str,
    initial_steps: int = INITIAL_WINDOW,
    final_window: int = FINAL_WINDOW,
) -> dict:
    """The pre-registered measures of one run from its log history: final accuracy and entropy (means over the logs
    of the last `final_window` steps), initial entropy (first `initial_steps` steps), `collapsed`, `runaway`, the
    step where accuracy fell for good, and the curves kept (rounded; entropy every step, the rest per rollout)."""

    def curve(key, digits=4):
        return [[h["step"], round(h[key], digits)] for h in logs if isinstance(h.get(key), (int, float))]

    curves = {key: curve(key) for key in CURVE_KEYS}
    curves = {k: v for k, v in curves.items() if v}
    last = max_steps - final_window
    accuracy = curves[accuracy_key]
    final_accuracy = statistics.fmean(v for s, v in accuracy if s > last)
    final_entropy = statistics.fmean(v for s, v in curves["entropy"] if s > last)
    initial_entropy = statistics.fmean(v for s, v in curves["entropy"] if s <= initial_steps)
    fell = None  # the first logged step from which accuracy stays below the collapse bound
    for s, _ in accuracy:
        if all(v < COLLAPSE_ACCURACY for t, v in accuracy if t >= s):
            fell = s
            break
    crossed = None  # the first step whose entropy (mean of 5 logs) is past initial + RUNAWAY_MARGIN, for good
    entropy = curves["entropy"]
    means = [
        (step, statistics.fmean(v for _, v in entropy[max(0, i - 4) : i + 1])) for i, (step, _) in enumerate(entropy)
    ]
    for i, (s, _) in enumerate(means):
        if all(m > initial_entropy + RUNAWAY_MARGIN for _, m in means[i:]):
            crossed = s
            break
    return {
        "final_accuracy": final_accuracy,
        "final_entropy": final_entropy,
        "initial_entropy": initial_entropy,
        "collapsed": is_collapsed(final_accuracy, final_entropy),
        "runaway": is_runaway(initial_entropy, final_entropy),
        "accuracy_fell_at": fell,
        "entropy_ran_away_at": crossed,
        "curves": curves,
    }


def is_collapsed(final_accuracy: float, final_entropy: float) -> bool:
    """The pre-registered collapse rule (module docstring): the task is lost, or the policy is near uniform."""
    return final_accuracy < COLLAPSE_ACCURACY or final_entropy > COLLAPSE_ENTROPY


def is_runaway(initial_entropy: float, final_entropy: float) -> bool:
    """The pre-registered entropy-runaway rule (module docstring): ended more than RUNAWAY_MARGIN above its start."""
    return final_entropy > initial_entropy + RUNAWAY_MARGIN
