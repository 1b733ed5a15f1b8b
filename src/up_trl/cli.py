"""`up-trl train` (and `python -m up_trl train`): the main job, parsed like `trl grpo`.

up-trl train                                            # offline default: SmolLM2-135M, arithmetic, CPU
up-trl train --config configs/recipes/up_dapo.yaml      # a recipe; any flag on the line overrides it
accelerate launch --config_file configs/accelerate/zero3.yaml -m up_trl train --config ...
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# The offline default run (`up-trl train` with no --config). configs/recipes/quickstart.yaml holds the same values
# (a test keeps them equal). Sized for a 2-core CPU. SmolLM2-135M-Instruct is right on about 1 in 5 one-digit
# products, so most groups of 8 have a non-zero reward spread (README, "The offline default").
OFFLINE_DEFAULT = {
    "dataset_name": "arithmetic",
    "dataset_limit": 512,
    "system_prompt": "none",
    "reward_funcs": ["math_accuracy"],
    "output_dir": "outputs/quickstart",
    "up_mode": "asymmetric",
    "loss_type": "dapo",
    "epsilon": 0.2,
    "epsilon_high": 0.28,
    "beta": 0.0,
    "num_generations": 8,
    "per_device_train_batch_size": 16,
    "gradient_accumulation_steps": 1,
    "steps_per_generation": 2,
    "num_iterations": 1,
    "max_completion_length": 64,
    "temperature": 1.0,
    "top_k": 0,
    "learning_rate": 3.0e-5,
    "lr_scheduler_type": "constant",
    "max_steps": 12,
    "logging_steps": 1,
    "save_strategy": "no",
    "report_to": "none",
    "use_cpu": True,
    "bf16": False,
    "seed": 42,
}


@dataclass
class TrainScriptArguments:
    """What to train on and how to score it (the model comes from `--model_name_or_path`)."""

    dataset_name: str = field(
        default="arithmetic",
        metadata={
            "help": "A dataset name from up_trl.data.DATASETS (offline: gsm8k, math, math500, minerva, "
            "arithmetic) or a local .jsonl/.json/.parquet/.csv file."
        },
    )
    dataset_train_split: str | None = field(
        default=None, metadata={"help": "Split to train on (default: the dataset's first split)."}
    )
    dataset_limit: int | None = field(default=None, metadata={"help": "Keep only this many training problems."})
    column_mapping: str | None = field(
        default=None,
        metadata={"help": 'JSON mapping of your file\'s columns to problem/answer, e.g. {"question": "problem"}.'},
    )
    system_prompt: str | None = field(
        default=None,
        metadata={"help": "System prompt (default asks for \\boxed{}); 'none' for no system turn."},
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["math_accuracy"],
        metadata={"help": "Reward names from up_trl.rewards.REWARD_FUNCS, or dotted import paths."},
    )
    plot: bool = field(default=True, metadata={"help": "Write metrics.png in the output directory at the end."})


def make_parser():
    from trl import ModelConfig, TrlParser

    from .config import UPGRPOConfig

    return TrlParser((TrainScriptArguments, UPGRPOConfig, ModelConfig), prog="up-trl train")


def check_recipe_keys(parser, path: str) -> None:
    """Fail on a misspelt recipe key before anything else runs, naming the closest real ones."""
    import difflib

    import yaml

    with open(path) as f:
        recipe = yaml.safe_load(f)
    if not isinstance(recipe, dict):
        raise ValueError(f"Recipe {path} must be a YAML mapping of argument names to values.")
    known = {action.dest for action in parser._actions} | {"env"}
    for key in recipe:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"Recipe {path}: unknown key {key!r}.{hint} Keys are UPGRPOConfig, ModelConfig or script arguments: "
                "`up-trl train --help` lists them."
            )


def recipe_argument(argv: list[str]) -> tuple[list[str], str | None]:
    """(argv with `--config=x` spelt `--config x`, as TRL's parser needs, and the recipe path or None)."""
    argv = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--config=") else [arg])]
    if "--config" not in argv:
        return argv, None
    index = argv.index("--config") + 1
    if index == len(argv) or argv[index].startswith("--"):
        raise ValueError("--config needs the path of a YAML recipe, e.g. --config configs/recipes/up_dapo.yaml.")
    return argv, argv[index]


def parse_train_args(argv: list[str]):
    """Parse like `trl grpo`: `--config recipe.yaml`, then flags override. Unknown keys are an error."""
    parser = make_parser()
    argv, recipe = recipe_argument(argv)
    if recipe is not None:
        check_recipe_keys(parser, recipe)
    else:
        parser.set_defaults_with_config(**OFFLINE_DEFAULT)
    return parser.parse_args_and_config(argv)


def train(argv: list[str] | None = None):
    """Run the main job; returns the trainer."""
    from accelerate import PartialState
    from trl import get_peft_config

    from .callbacks import GracefulStopCallback, JsonlMetricsCallback
    from .data import load_math_dataset, system_prompt_from_flag
    from .models import smollm2_path
    from .plots import plot_metrics
    from .rewards import get_reward_funcs
    from .trainer import UPGRPOTrainer

    argv, recipe = recipe_argument(list(sys.argv[1:] if argv is None else argv))
    recipe = recipe or "built-in offline default"
    script_args, training_args, model_args = parse_train_args(argv)

    # Cheap checks and loads first: a wrong reward or dataset name fails before any model is touched.
    reward_options = {"max_completion_length": training_args.max_completion_length}  # DAPO's soft overlong
    reward_funcs = get_reward_funcs(
        script_args.reward_funcs, **(reward_options if "soft_overlong" in script_args.reward_funcs else {})
    )
    try:
        column_mapping = json.loads(script_args.column_mapping) if script_args.column_mapping else None
    except json.JSONDecodeError as error:
        raise ValueError(
            f"--column_mapping {script_args.column_mapping!r} is not JSON ({error}): write it like "
            '\'{"question": "problem", "solution": "answer"}\' (double quotes inside single quotes).'
        ) from None
    system_prompt = system_prompt_from_flag(script_args.system_prompt)
    state = PartialState()
    with state.main_process_first():
        dataset = load_math_dataset(
            script_args.dataset_name,
            script_args.dataset_train_split,
            limit=script_args.dataset_limit,
            seed=training_args.seed,
            shuffle=script_args.dataset_limit is not None,  # a limit takes a seeded sample, not the first rows
            system_prompt=system_prompt,
            column_mapping=column_mapping,
        )
        model = model_args.model_name_or_path or smollm2_path()

    model_init_kwargs = {
        "revision": model_args.model_revision,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
    }
    training_args.model_init_kwargs = {**model_init_kwargs, **(training_args.model_init_kwargs or {})}
    metrics_path = Path(training_args.output_dir) / "metrics.jsonl"
    trainer = UPGRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=dataset,
        peft_config=get_peft_config(model_args),
        callbacks=[JsonlMetricsCallback(metrics_path), GracefulStopCallback()],
    )
    trainer.up_recipe = recipe
    state.print(
        f"up-trl: up_mode={trainer.up_mode} loss_type={training_args.loss_type} model={model} "
        f"dataset={script_args.dataset_name} ({len(dataset)} problems) -> {training_args.output_dir}"
    )

    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    seconds = time.perf_counter() - start
    trainer.save_model(training_args.output_dir)
    trainer.create_model_card(model_name=Path(training_args.output_dir).name, dataset_name=script_args.dataset_name)

    if trainer.is_world_process_zero():
        rewards = [h["reward"] for h in trainer.state.log_history if h.get("reward") is not None]
        summary = (
            f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f} (first -> last step)" if rewards else "no reward logged"
        )
        if script_args.plot and metrics_path.exists():
            png = plot_metrics(
                metrics_path,
                Path(training_args.output_dir) / "metrics.png",
                title=f"up_mode={trainer.up_mode}, {script_args.dataset_name}",
            )
            summary += f"; plot {png}"
        print(
            f"up-trl: done in {seconds / 60:.1f} min, {trainer.state.global_step} steps: {summary}; "
            f"model, metrics.jsonl in {training_args.output_dir}",
            flush=True,
        )
    if training_args.push_to_hub:
        trainer.push_to_hub(dataset_name=script_args.dataset_name)
    return trainer


USAGE = """usage: up-trl <command> [options]

commands:
  train   train with UP (UPGRPOTrainer); no options: the offline CPU default
  eval    score a model on math benchmarks (avg@k, pass@k, maj@k)

`up-trl <command> --help` lists every option."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train":
        train(rest)
        return 0
    if command == "eval":
        from .evaluate import main as eval_main

        return eval_main(rest)
    print(f"up-trl: unknown command {command!r}.\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
