"""One SmolLM2-135M run of the real-model studies, as a helper module (no `__main__`) that real_model.py and
collapse.py (its smollm2 setting) share: the parent objectives (`PAIRS`), the `up-trl train` flags of one run
(`train_argv`) and its held-out score through `up-trl eval` (`score`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from toy_runs import judge

# The parent objectives of configs/recipes/{dapo,gspo}.yaml (UP twins: up_dapo.yaml, up_gspo.yaml).
PAIRS: dict[str, dict] = {
    "DAPO": {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28},
    "GSPO": {"importance_sampling_level": "sequence", "loss_type": "grpo", "epsilon": 3e-4, "epsilon_high": 4e-4},
}
UP_MODES = {"off": "", "asymmetric": "UP-"}  # up_mode -> prefix of the config's name


def config_name(pair: str, up_mode: str, settings: dict | None = None) -> str:
    """A run's config: the parent's name ("DAPO"), or UP's on it ("UP-DAPO"), "+ rare clip" where UP's runs keep the
    clip for rare positive tokens (`up_positive_min_prob`, the `up_dapo` recipe's "UP + safe")."""
    rare = up_mode != "off" and (settings or {}).get("up_positive_min_prob") is not None
    return UP_MODES[up_mode] + pair + (" + rare clip" if rare else "")


def train_argv(settings: dict, pair: str, up_mode: str, seed: int, output_dir: str) -> list[str]:
    """`up-trl train` flags of one run: the pair's objective, `up_mode`, and the settings every run shares.

    Settings a study may leave out take the real-model studies' values: `learning_rate` 3e-5, `num_generations` 8,
    `system_prompt` "none", no LoRA (`lora_r` None; set, it trains a LoRA adapter of that rank, TRL's other LoRA
    defaults)."""
    objective = {**PAIRS[pair], **({} if settings["delta"] is None else {"delta": settings["delta"]})}
    if up_mode != "off" and settings.get("up_positive_min_prob") is not None:  # UP's runs only: the parent has none
        objective["up_positive_min_prob"] = settings["up_positive_min_prob"]
    lora = ["--use_peft", "true", "--lora_r", str(settings["lora_r"])] if settings.get("lora_r") else []
    return [
        "--config",
        "quickstart",
        "--model_name_or_path",
        settings["model"],
        "--dataset_name",
        settings["dataset"],
        "--dataset_limit",
        "2000",
        "--arithmetic_ops",
        *settings["arithmetic_ops"],
        "--arithmetic_few_shot",
        str(settings.get("arithmetic_few_shot", 0)),
        "--output_dir",
        output_dir,
        "--up_mode",
        up_mode,
        *[part for key, value in objective.items() for part in (f"--{key}", str(value))],
        "--num_generations",
        str(settings.get("num_generations", 8)),
        "--per_device_train_batch_size",
        str(settings["per_device_train_batch_size"]),
        "--steps_per_generation",
        str(settings["steps_per_generation"]),
        "--num_iterations",
        str(settings["num_iterations"]),
        "--max_completion_length",
        str(settings["max_completion_length"]),
        "--learning_rate",
        str(settings.get("learning_rate", "3e-5")),
        *lora,
        "--max_steps",
        str(settings["max_steps"]),
        "--seed",
        str(seed),
        "--system_prompt",
        settings.get("system_prompt", "none"),
        "--save_strategy",
        "no",
        "--report_to",
        "none",
        "--use_cpu",
        "true",
        "--bf16",
        "false",
        "--temperature",
        "1.0",
        "--top_k",
        "0",
        "--logging_steps",
        "1",
        "--plot",
        "false",
        "--overwrite_output_dir",
        "true",  # a run stopped midway is started again from scratch on --resume
    ]


def eval_few_shot(s: dict) -> int:
    """The worked examples eval puts before each problem: the training count, on the arithmetic benchmark only."""
    return s["arithmetic_few_shot"] if s["benchmark"] == "arithmetic" else 0


def score(model: str, eval_dir: Path, s: dict) -> dict:
    """`up-trl eval` on the held-out split (test, or arithmetic's dev for a pilot), with the same problems and
    sampling seed for every model."""
    from up_trl.cli.eval_command import main as evaluate

    # --base_model none: the base model is scored once, as its own "before" job.
    evaluate(
        [
            "--model",
            model,
            "--benchmarks",
            s["benchmark"],
            "--arithmetic_ops",
            *s["arithmetic_ops"],
            "--arithmetic_few_shot",
            str(eval_few_shot(s)),
            *(["--arithmetic_split", s["benchmark_split"]] if s.get("benchmark_split", "test") != "test" else []),
            "--limit",
            str(s["benchmark_limit"]),
            "--k",
            str(s["k"]),
            "--temperature",
            "1.0",
            "--top_p",
            "1.0",
            "--system_prompt",
            s.get("system_prompt", "none"),
            "--max_new_tokens",
            str(s["max_completion_length"]),
            "--seed",
            str(s["eval_seed"]),
            "--batch_size",
            str(s["eval_batch_size"]),
            "--output_dir",
            str(eval_dir),
            "--base_model",
            "none",
        ]
    )
    return json.loads((eval_dir / "eval.json").read_text())["benchmarks"][s["benchmark"]]


# Flags that do not change what a run measures (where and how the script runs, which runs it starts).
PROCESS_FLAGS = {
    "output_dir",
    "resume",
    "report_only",
    "time_limit_minutes",
    "workers",
    "keep_models",
    "quick",
    "seeds",
    "pairs",
    "pass_k",
    "commit",
}
FINAL_STEPS = 8  # final training reward and entropy: the mean over the last 8 steps (collapse.py's smollm2 setting)


def run_settings(settings: dict) -> dict:
    """The settings a run's numbers depend on, stored with each run so that --resume cannot mix runs."""
    return {k: v for k, v in settings.items() if k not in PROCESS_FLAGS}


def run_job(job: dict) -> dict:
    """One job: the base model's evaluation ("before"), or one training run and the evaluation of its model."""
    s = job["settings"]
    key = {**{k: job[k] for k in ("pair", "config", "up_mode", "seed")}, "settings": run_settings(s)}
    if time.time() > job["deadline"]:
        return {**key, "skipped": True}  # past --time_limit_minutes: start nothing new
    out = Path(s["output_dir"])
    if job["config"] == "before":
        t0 = time.perf_counter()
        return {
            **key,
            "after": score(s["model"], out / "eval-before", s),
            "eval_minutes": round((time.perf_counter() - t0) / 60, 2),
        }
    from up_trl.cli import train
    from up_trl.run.card import read_metrics, series

    run_dir = out / "runs" / f"{job['config']}-seed{job['seed']}"
    t0 = time.perf_counter()
    train(train_argv(s, job["pair"], job["up_mode"], job["seed"], str(run_dir)))
    train_minutes = round((time.perf_counter() - t0) / 60, 2)
    logs = read_metrics(run_dir / "metrics.jsonl")
    measures = judge(logs, s["max_steps"], accuracy_key="reward", initial_steps=4, final_window=FINAL_STEPS)
    t0 = time.perf_counter()
    after = score(str(run_dir), run_dir / "eval", s)
    if not s["keep_models"]:  # 0.5 GB of float32 weights per run
        for weights in run_dir.glob("*.safetensors"):
            weights.unlink()
    return {
        **key,
        "commit": s.get("commit"),
        "train_minutes": train_minutes,
        "eval_minutes": round((time.perf_counter() - t0) / 60, 2),
        "final_reward": measures["final_accuracy"],
        **{k: measures[k] for k in ("final_entropy", "initial_entropy", "collapsed", "runaway")},
        "reward_curve": [list(p) for p in zip(*series(logs, "reward"))],
        "entropy_curve": [list(p) for p in zip(*series(logs, "entropy"))],
        "after": after,
    }
