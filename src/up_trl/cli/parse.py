"""How `up-trl train`'s command line and recipe become the trainer's config: TRL's parser over the script
arguments, the chosen trainer's UP config and TRL's ModelConfig, with the offline default when no recipe is given and
the checks of `cli.checks` before TRL builds the config."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from .catalog import OFFLINE_DEFAULT_RECIPE, CatalogError, recipe_path
from .checks import (
    RecipeNotFoundError,
    Settings,
    UsageError,
    check_flags,
    check_recipe_keys,
    check_settings,
    flags_given,
    read_recipe,
)
from .rules import check_choices

# The offline default run (`up-trl train` with no --config): the packaged recipe `quickstart`, read once, its only
# source. Sized for a 2-core CPU: SmolLM2-135M-Instruct is right on about 1 in 5 one-digit products, so most groups
# of 8 have a non-zero reward spread (docs/benchmarks/index.md, "The offline default run").
OFFLINE_DEFAULT: dict = read_recipe(recipe_path(OFFLINE_DEFAULT_RECIPE))


# --trainer: (config module, config class, trainer module, trainer class), imported only when chosen.
TRAINERS: dict[str, tuple[str, str, str, str]] = {
    "grpo": ("trainers.grpo_config", "UPGRPOConfig", "trainers.grpo_trainer", "UPGRPOTrainer"),
    "rloo": ("trainers.rloo_config", "UPRLOOConfig", "trainers.rloo_trainer", "UPRLOOTrainer"),
    "async_grpo": (
        "trainers.async_grpo_config",
        "UPAsyncGRPOConfig",
        "trainers.async_grpo_trainer",
        "UPAsyncGRPOTrainer",
    ),
}


@functools.cache
def train_script_arguments() -> type:
    """`TrainScriptArguments`, built on first use: it extends TRL's class, and importing `up_trl.cli` must not import
    TRL (`up-trl train --help` prints at once)."""
    from trl.scripts.grpo import GRPOScriptArguments

    @dataclass
    class TrainScriptArguments(GRPOScriptArguments):
        """`trl grpo`'s script arguments (TRL's fields, names, types, defaults and help), and ours after them: what to
        train on and how to score it (the model comes from `--model_name_or_path`).

        Our defaults where TRL's differ: `dataset_name` (TRL: none, the data must be named) is `arithmetic`,
        generated in code, so that `up-trl train` runs offline with nothing named; `dataset_train_split` (TRL:
        `train`) is None, which is `train` for everything TRL loads and a short name's first split for ours (math500's
        only split is `test`); `reward_funcs` (TRL: none, a run without a reward model has nothing to score) is
        `math_accuracy`."""

        dataset_name: str = field(
            default="arithmetic",
            metadata={
                "help": "What datasets.load_dataset takes (a Hub id, a local folder, a data file) or a folder "
                "written by save_to_disk; or a short name from up_trl.data.DATASETS (offline: gsm8k, math, math500, "
                "minerva, arithmetic). A `prompt` column (text or messages) is used as written, a `problem` one gets "
                "--system_prompt; the gold answer is read into `solution`."
            },
        )
        dataset_train_split: str | None = field(
            default=None, metadata={"help": "Split to train on (default: train; a short name's first split)."}
        )
        reward_funcs: list[str] = field(
            default_factory=lambda: ["math_accuracy"],
            metadata={
                "help": "Reward names from up_trl.rewards.REWARD_FUNCS, TRL's (accuracy_reward, "
                "reasoning_accuracy_reward, think_format_reward, get_soft_overlong_punishment), or dotted import "
                "paths."
            },
        )
        dataset_limit: int | None = field(default=None, metadata={"help": "Keep only this many training problems."})
        column_mapping: str | None = field(
            default=None,
            metadata={"help": 'JSON mapping of your columns to problem/prompt/answer, e.g. {"question": "problem"}.'},
        )
        system_prompt: str | None = field(
            default=None,
            metadata={
                "help": "System prompt (default asks for \\boxed{}); 'none' for no system turn. A dataset's `prompt` "
                "column gets it only when set, and only where it has no system turn."
            },
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
                "help": "`arithmetic` only: worked examples (earlier chat turns, "
                "up_trl.data.arithmetic.ARITHMETIC_WORKED_EXAMPLES) before each problem, 0 to 3. With 2, SmolLM2-135M "
                "gets about one 2-digit sum in five (one in 60 without)."
            },
        )
        share_prompt_prefix: bool = field(
            default=False,
            metadata={
                "help": "Opt-in CPU saving, not part of UP (grpo and rloo; up_trl.speedups.trainers): on CPU, in one "
                "process, compute each distinct prompt of a batch once in the scoring forwards (the num_generations "
                "completions of a prompt share it), instead of once per completion. Log-probs and gradients equal "
                "TRL's to float rounding, not bit for bit."
            },
        )
        plot: bool = field(default=True, metadata={"help": "Write metrics.png in the output directory at the end."})
        skip_nonfinite_steps: bool = field(
            default=True,
            metadata={
                "help": "Skip (and count, as up/nonfinite_skipped_steps) an optimizer step whose gradients are NaN or "
                "inf, instead of writing NaN into the weights (up_trl.run.parts.nonfinite_guard). Not active under "
                "DeepSpeed, whose engine owns the step."
            },
        )
        max_consecutive_nonfinite_steps: int = field(
            default=10,
            metadata={"help": "After this many skipped steps in a row, save a checkpoint and stop training."},
        )
        overwrite_output_dir: bool = field(
            default=False,
            metadata={
                "help": "An --output_dir that holds a previous run is refused; with this flag that run's files "
                "(model, metrics, card, checkpoints) are removed first (up_trl.run.folder)."
            },
        )
        trainer: str = field(
            default="grpo",
            metadata={
                "help": "grpo (UPGRPOTrainer), rloo (UPRLOOTrainer) or async_grpo (UPAsyncGRPOTrainer: a CUDA GPU "
                "and a `trl vllm-serve` server). A recipe may name it with a `trainer:` key.",
                "choices": list(TRAINERS),
            },
        )

    TrainScriptArguments.__module__, TrainScriptArguments.__qualname__ = __name__, "TrainScriptArguments"
    return TrainScriptArguments


def __getattr__(name: str):  # `from up_trl.cli.parse import TrainScriptArguments` builds it (PEP 562)
    if name == "TrainScriptArguments":
        return train_script_arguments()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


USAGE_TRAIN = (
    "up-trl train [--trainer grpo|async_grpo|rloo] [--config RECIPE] [--accelerate_config NAME] [--OPTION VALUE ...]"
)


def check_trainer(trainer: str) -> None:
    """A UsageError for a `--trainer` name that is not one of `TRAINERS`."""
    if trainer not in TRAINERS:
        raise UsageError(f"--trainer {trainer!r} is not one of {', '.join(TRAINERS)} (default grpo).")


def trainer_classes(trainer: str = "grpo"):
    """(config class, trainer class) for a `--trainer` name; a UsageError for an unknown one."""
    import importlib

    check_trainer(trainer)
    config_module, config_name, trainer_module, trainer_name = TRAINERS[trainer]
    config_cls = getattr(importlib.import_module(f"up_trl.{config_module}"), config_name)
    return config_cls, getattr(importlib.import_module(f"up_trl.{trainer_module}"), trainer_name)


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
    """TRL's parser over what `trl grpo` parses (trl.scripts.grpo.make_parser): the script arguments, the chosen
    trainer's UP config in GRPOConfig's place, TRL's ModelConfig and DatasetMixtureConfig."""
    from trl import DatasetMixtureConfig, TrlParser

    config_cls, _ = trainer_classes(trainer)
    model_cls = model_config_class(trainer)
    dataclass_types = (train_script_arguments(), config_cls, model_cls, DatasetMixtureConfig)
    return TrlParser(dataclass_types, prog="up-trl train", usage=USAGE_TRAIN)


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
        content = read_recipe(recipe)  # a YAML error is one line here too
        if "trainer" in content:
            return str(content["trainer"])
    return "grpo"


def recipe_argument(argv: list[str]) -> tuple[list[str], str | None]:
    """(argv with `--config=x` spelt `--config x` and x replaced by the recipe file it names, and that file or None).
    `--config up_dapo` is the packaged recipe of that name (`up-trl recipes` lists them); a path is that file."""
    argv = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--config=") else [arg])]
    if "--config" not in argv:
        return argv, None
    index = argv.index("--config") + 1
    if index == len(argv) or argv[index].startswith("--"):
        raise UsageError("--config needs a recipe: a packaged one by name (`up-trl recipes`) or a YAML file.")
    try:
        argv[index] = recipe_path(argv[index])
    except CatalogError as error:
        raise RecipeNotFoundError(f"--config {error}") from None
    return argv, argv[index]


def checked_train_args(argv: list[str]):
    """Every check of the command line and the recipe (`cli.checks`), on the chosen trainer's parser (TRL's,
    `make_parser`); returns (that parser, the argv to parse)."""
    argv, recipe_file = recipe_argument(argv)
    trainer = trainer_argument(argv, recipe_file)
    check_trainer(trainer)
    parser = make_parser(trainer)
    check_flags(parser, argv, trainer, TRAINERS[trainer][1])
    if recipe_file is not None:
        argv = argv[: argv.index("--config")] + argv[argv.index("--config") + 2 :]
        recipe, where = check_recipe_keys(parser, recipe_file), f"recipe {recipe_file}"
        env = recipe.pop("env", {}) or {}
        if not isinstance(env, dict):
            raise UsageError(f"recipe {recipe_file}: `env` must be a mapping of variable names to values.")
        os.environ.update({key: str(value) for key, value in env.items()})  # as TrlParser does
    else:  # the GRPO keys the chosen trainer's config lacks (RLOO: loss_type; async: beta, num_iterations, ...) drop
        known = {action.dest for action in parser._actions}
        recipe = {key: value for key, value in OFFLINE_DEFAULT.items() if key in known}
        if trainer == "async_grpo":  # the default's CPU saving is for grpo and rloo
            recipe.pop("share_prompt_prefix", None)
        where = "offline default"
    parser.set_defaults_with_config(**recipe)
    values = vars(parser.parse_known_args(argv)[0])
    settings = Settings(values, flags_given(argv), recipe, where)
    check_choices(settings, parser)
    return parser, argv + check_settings(settings)


def precheck_train_args(argv: list[str]) -> None:
    """`checked_train_args`, then what the settings point at (rewards, extras, output folder, model config), without
    loading or creating anything: every usage error before any model loads (`train` checks again, and loads the
    data before the model)."""
    from .checks import check_extras, check_output_folder, check_reward_names, parse_column_mapping

    parser, argv = checked_train_args(list(argv))
    values = vars(parser.parse_known_args(argv)[0])
    check_reward_names(values["reward_funcs"])
    parse_column_mapping(values["column_mapping"])
    check_extras(values.get("use_vllm", False), values.get("deepspeed"), values.get("vllm_mode"))
    if values.get("output_dir"):
        check_output_folder(values["output_dir"])  # nothing created yet (the lock creates it, after the imports)
    model = values.get("model_name_or_path")
    if model is None:  # the offline default: its wheel and `gguf` installed (the extra `offline`)
        from ..data.models import OfflineModelMissingError, check_offline_model, smollm2_cached

        try:
            if smollm2_cached() is None:
                check_offline_model()
        except OfflineModelMissingError as error:
            raise UsageError(str(error)) from None
    else:  # transformers' AutoConfig reads its config.json (`data.model_source.check_model`)
        from ..data.model_source import ModelNotFoundError, check_model

        try:
            check_model(
                model, revision=values.get("model_revision"), trust_remote_code=bool(values.get("trust_remote_code"))
            )
        except ModelNotFoundError as error:
            raise UsageError(str(error)) from None


def parse_train_args(argv: list[str]):
    """Parse like `trl grpo`: `--config recipe.yaml`, then flags override. Unknown keys and flags, and settings TRL
    would fail on, are a UsageError before TRL's config is built (`cli.checks`)."""
    parser, argv = checked_train_args(argv)
    try:
        script_args, training_args, model_args, _mixture = parser.parse_args_into_dataclasses(args=argv)
        return script_args, training_args, model_args  # a mixture (`datasets`) is refused in check_settings
    except ValueError as error:  # what TRL's config still refuses while it is built (e.g. auto_find_batch_size)
        raise UsageError(" ".join(str(error).split())) from None
