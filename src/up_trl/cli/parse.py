"""How `up-trl train`'s command line and recipe become a checked `run.job.TrainJob`: TRL's parser over what `trl grpo`
parses (UP's config in GRPOConfig's place), `up_trl.checks`, what the settings point at, then TRL's config.
With neither a recipe (`--config`) nor `--model_name_or_path`, the offline default recipe (quickstart) gives the
values the command line leaves out; with either, what is left out takes TRL's default, as with `trl grpo`."""

from __future__ import annotations

import os
from pathlib import Path

from ..checks import RecipeNotFoundError, Settings, UsageError
from ..checks.recipe_and_flags import check_flags, check_recipe_keys, check_settings, flags_given, read_recipe
from ..run.ending import launched_command
from ..run.job import check_output_folder
from ..trainers import TRAINERS
from .catalog import OFFLINE_DEFAULT_RECIPE, CatalogError, recipe_path

# The offline default (neither --config nor --model_name_or_path): the packaged recipe `quickstart`, its only source.
OFFLINE_DEFAULT: dict = read_recipe(recipe_path(OFFLINE_DEFAULT_RECIPE))
USAGE_TRAIN = (
    "up-trl train [--trainer grpo|async_grpo|rloo] [--config RECIPE] [--accelerate_config NAME] [--OPTION VALUE ...]"
)


def trainer_classes(trainer: str = "grpo"):
    """(config class, trainer class) for a `--trainer` name; a UsageError for an unknown one."""
    import importlib

    if trainer not in TRAINERS:
        raise UsageError(f"--trainer {trainer!r} is not one of {', '.join(TRAINERS)} (default grpo).")
    spec = TRAINERS[trainer]  # (config module, config class, trainer module, trainer class)
    return tuple(getattr(importlib.import_module(f"up_trl.{module}"), name) for module, name in (spec[:2], spec[2:]))


def make_parser(trainer: str = "grpo"):
    """TRL's parser over what `trl grpo` parses (its `make_parser`), the trainer's UP config in GRPOConfig's place;
    async_grpo's ModelConfig lacks `dtype` (its config has one) and `attn_implementation` (tree attention's)."""
    import dataclasses

    from trl import DatasetMixtureConfig, ModelConfig, TrlParser

    from ..script_args import TrainScriptArguments

    model_config, dropped = ModelConfig, ("dtype", "attn_implementation")
    if trainer == "async_grpo":
        kept = [(f.name, f.type, f) for f in dataclasses.fields(ModelConfig) if f.name not in dropped]
        namespace = {**dict.fromkeys(dropped), "__post_init__": ModelConfig.__post_init__}
        model_config = dataclasses.make_dataclass("AsyncModelConfig", kept, namespace=namespace)
    types = (TrainScriptArguments, trainer_classes(trainer)[0], model_config, DatasetMixtureConfig)
    return TrlParser(types, prog="up-trl train", usage=USAGE_TRAIN)


def trainer_argument(argv: list[str], recipe: dict) -> str:
    """The `--trainer` on the command line, else the recipe's `trainer:` key, else "grpo"."""
    for i, arg in enumerate(argv):
        if arg.startswith("--trainer="):
            return arg.split("=", 1)[1]
        if arg == "--trainer":
            if i + 1 == len(argv) or argv[i + 1].startswith("--"):
                raise UsageError(f"--trainer needs a name: one of {', '.join(TRAINERS)}.")
            return argv[i + 1]
    return str(recipe.get("trainer", "grpo"))


def recipe_argument(argv: list[str]) -> tuple[list[str], str | None]:
    """(argv with `--config=x` spelt `--config x` and x replaced by the recipe file it names, and that file or None).
    `--config up_dapo` is the packaged recipe of that name (`up-trl recipes` lists them); a path is that file."""
    argv = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--config=") else [arg])]
    if "--config" not in argv:
        return argv, None
    if argv.count("--config") > 1:  # TRL's parser would stop on the second as an unused argument
        raise UsageError("--config is given twice: name one recipe (flags on the line override its values).")
    if (index := argv.index("--config") + 1) == len(argv) or argv[index].startswith("--"):
        raise UsageError("--config needs a recipe: a packaged one by name (`up-trl recipes`) or a YAML file.")
    try:
        argv[index] = recipe_path(argv[index])
    except CatalogError as error:
        raise RecipeNotFoundError(f"--config {error}") from None
    return argv, argv[index]


def read_settings(argv: list[str]):
    """Every check of `up_trl.checks`: (the trainer's parser, the argv to parse, its values, the recipe or None)."""
    argv, recipe_file = recipe_argument(argv)
    recipe = read_recipe(recipe_file) if recipe_file is not None else {}  # read once: a YAML error is one line
    trainer = trainer_argument(argv, recipe)
    parser = make_parser(trainer)  # an unknown trainer: a UsageError
    check_flags(parser, argv, trainer, TRAINERS[trainer][1])
    if recipe_file is not None:
        argv = argv[: argv.index("--config")] + argv[argv.index("--config") + 2 :]
        recipe, where = check_recipe_keys(parser, recipe, recipe_file), f"recipe {recipe_file}"
        if not isinstance(env := recipe.pop("env", {}) or {}, dict):
            raise UsageError(f"recipe {recipe_file}: `env` must be a mapping of variable names to values.")
        os.environ.update({key: str(value) for key, value in env.items()})  # as TrlParser does
    elif "model_name_or_path" in flags_given(argv):  # a model and no recipe: TRL's defaults, as `trl grpo` has them
        recipe, where = {}, "command line"
    else:  # the GRPO keys the chosen trainer's config lacks (RLOO: loss_type; async: beta, num_iterations, ...) drop
        known = {action.dest for action in parser._actions}
        recipe = {key: value for key, value in OFFLINE_DEFAULT.items() if key in known}
        if trainer == "async_grpo":  # the default's CPU saving is for grpo and rloo
            recipe.pop("share_prompt_prefix", None)
        where = "offline default"
    parser.set_defaults_with_config(**recipe)
    values = vars(parser.parse_known_args(argv)[0])
    settings = Settings(values, flags_given(argv), recipe, where)
    return parser, argv + check_settings(settings, parser), values, recipe_file


def check_targets(values: dict) -> str | None:
    """What the settings point at (rewards, data, extras, output folder, model), loading and creating nothing.
    Returns the model as `from_pretrained` gets it (None: the offline default)."""
    from ..data import OFFLINE_DATASETS, missing_data_file
    from ..extras import check_extras, check_quantization
    from ..models.offline import OfflineModelMissingError, check_offline_model, smollm2_cached
    from ..models.source import ModelNotFoundError, check_model
    from ..rewards.registry import check_reward_names
    from ..script_args import parse_column_mapping

    try:
        check_reward_names(values["reward_funcs"] or [])
        parse_column_mapping(values["column_mapping"])
    except ValueError as error:
        raise UsageError(str(error)) from None
    if not (values.get("datasets") or (values["dataset_name"] or "").strip()):  # datasets: "got None", later
        names = ", ".join(OFFLINE_DATASETS)
        raise UsageError(f"--dataset_name is empty: name a Hub id, a local folder or data file, or one of {names}.")
    if (missing := missing_data_file(values["dataset_name"])) is not None:
        raise UsageError(f"--dataset_name {values['dataset_name']}: {missing}")
    check_extras(values.get("use_vllm", False), values.get("deepspeed"), values.get("vllm_mode"))
    check_quantization(values)
    if values.get("output_dir"):
        check_output_folder(values["output_dir"])  # nothing created yet (the lock creates it, after the imports)
    model = values.get("model_name_or_path")
    try:
        if model is None and smollm2_cached() is None:  # the offline default: the wheel and `gguf` (extra `offline`)
            check_offline_model()
        elif model is not None:
            revision, remote = values.get("model_revision"), bool(values.get("trust_remote_code"))
            model = check_model(model, revision=revision, trust_remote_code=remote)
    except (ModelNotFoundError, OfflineModelMissingError) as error:
        raise UsageError(str(error)) from None
    return model


def check_train_args(argv: list[str]):
    """The `run.job.TrainJob`, after every usage error (before any model loads or `accelerate launch` starts)."""
    from ..run.job import TrainJob
    from ..script_args import parse_column_mapping

    job_argv = list(argv)
    given = launched_command() or job_argv  # as typed, with the launch flags: the resume command repeats it
    parser, argv, values, recipe_file = read_settings(job_argv)
    model = check_targets(values)
    script_args, training_args, model_args, mixture = build_configs(parser, argv)  # what TRL's config refuses
    if not values.get("output_dir"):  # TRL's default folder (`trainer_output`), checked as a named one
        check_output_folder(training_args.output_dir)
    flags = flags_given(job_argv)  # as typed (the checks add --save_strategy steps to a lone --save_steps)
    trainer_cls, mapping = trainer_classes(script_args.trainer)[1], parse_column_mapping(script_args.column_mapping)
    job = dict(model=model, trainer_cls=trainer_cls, recipe_file=recipe_file, recipe=recipe_label(recipe_file, flags))
    job |= dict(given=given, flags=flags, column_mapping=mapping, mixture=mixture)
    return TrainJob(script_args, training_args, model_args, **job)


def recipe_label(recipe_file: str | None, flags: set[str]) -> str:
    """How the model card names the recipe: a packaged one by its name, a file by its path, none as the default.

    >>> recipe_label(recipe_path("up_dapo"), {"config"}), recipe_label(None, set())
    ('up_dapo (packaged recipe)', 'quickstart (packaged recipe, the offline default)')
    >>> recipe_label(None, {"model_name_or_path"})
    "none (TRL's defaults)"
    """
    if recipe_file is None:
        default = f"{OFFLINE_DEFAULT_RECIPE} (packaged recipe, the offline default)"
        return "none (TRL's defaults)" if "model_name_or_path" in flags else default
    packaged = Path(recipe_file).parent.resolve() == Path(recipe_path(OFFLINE_DEFAULT_RECIPE)).parent.resolve()
    return f"{Path(recipe_file).stem} (packaged recipe)" if packaged else recipe_file


def build_configs(parser, argv: list[str]):
    """(script, training, model args, dataset mixture) as TRL builds them; its config's ValueError a UsageError."""
    try:
        return parser.parse_args_into_dataclasses(args=argv)
    except ValueError as error:
        raise UsageError(" ".join(str(error).split())) from None


def parse_train_args(argv: list[str]):
    """(script args, training args, model args) parsed like `trl grpo`, after `read_settings`'s checks."""
    parser, argv, _, _ = read_settings(argv)
    return build_configs(parser, argv)[:3]
