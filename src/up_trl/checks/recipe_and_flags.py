"""What the user wrote, checked first: the recipe's YAML (a syntax error with its line and column), misspelt keys and
flags named with the closest real ones (TRL's parser only lists them; `trl grpo` ignores a stray recipe key); then
the values, before TRL's config is built from them: `ranges`, choices, `--loss_type`, saving, streams."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import closest_names
from . import RecipeNotFoundError, Settings, UsageError
from .ranges import check_ranges


def read_recipe(path: str) -> dict:
    """The recipe's mapping, or a UsageError (a missing or unreadable file, bad YAML, not a mapping)."""
    import yaml

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise RecipeNotFoundError(
            f"--config {path}: no such file (`up-trl recipes` lists the packaged recipes)."
        ) from None
    except IsADirectoryError:
        raise UsageError(f"--config {path} is a folder: name a YAML recipe file, or a packaged recipe.") from None
    except OSError as error:
        raise UsageError(f"--config {path} cannot be read ({error.strerror}): check its permissions.") from None
    try:  # a binary file (NUL bytes) or another encoding: not YAML text
        text, bad = data.decode("utf-8-sig"), data.find(b"\x00")
    except UnicodeDecodeError as error:
        text, bad = "", error.start
    if bad >= 0:
        raise UsageError(
            f"recipe {path} is not a YAML text file (byte 0x{data[bad]:02x} at offset {bad} is binary, or not "
            "UTF-8): a recipe is UTF-8 text, option names and values (`up-trl recipes` lists examples)."
        )
    try:
        recipe = yaml.safe_load(text)
    except yaml.YAMLError as error:  # each part of the message with its line and column, when it has them
        marks = {key: getattr(error, f"{key}_mark", None) for key in ("problem", "context")}
        at = {key: f" at line {m.line + 1}, column {m.column + 1}" if m else "" for key, m in marks.items()}
        problem = (getattr(error, "problem", None) or str(error).splitlines()[0]) + at["problem"]
        context = f"{error.context}{at['context']}: " if getattr(error, "context", None) else ""
        raise UsageError(f"recipe {path} is not valid YAML: {context}{problem}.") from None
    if not isinstance(recipe, dict):
        raise UsageError(f"recipe {path} must be a YAML mapping of option names to values.")
    return recipe


def launcher_options() -> dict[str, bool]:
    """The flags `up-trl train` hands to `accelerate launch`, as `trl grpo` does (each with whether it takes a value):
    accelerate's own and TRL's `--accelerate_config`, from the command line or a recipe's key."""
    from accelerate.commands.launch import launch_command_parser

    actions = launch_command_parser()._actions
    options = {option: action.nargs != 0 for action in actions for option in action.option_strings}
    return options | {"--accelerate_config": True}


def check_recipe_keys(parser, recipe: dict, path: str) -> dict:
    """Fail on a misspelt key of the recipe read from `path`, naming the closest real ones; returns the recipe without
    the keys that are `accelerate launch`'s (`num_processes`, `accelerate_config`: the launcher took them)."""
    known = {action.dest for action in parser._actions} | {"env"}
    if not (unknown := [key for key in recipe if key not in known]):
        return recipe
    launcher = {option[2:] for option in launcher_options()}
    if refused := "; ".join(f"{key!r}{closest_names(str(key), known)}" for key in unknown if key not in launcher):
        raise UsageError(f"recipe {path}: unknown key {refused}. `up-trl train --help-all` lists every key.")
    return {key: value for key, value in recipe.items() if key not in launcher}


def check_flags(parser, argv: list[str], trainer: str = "grpo", config_name: str = "UPGRPOConfig") -> None:
    """Fail on a misspelt flag, naming the closest real ones (TRL's parser also takes `--dashed-names`; only the
    `--underscore_names` are suggested). An `accelerate launch` flag reaches this check in a process a launcher
    started: it is the launcher's."""
    known = [option for option in parser._option_string_actions if option.startswith("--") and "-" not in option[2:]]
    flags = [f for a in argv if (f := a.split("=", 1)[0]).startswith("--") and f not in parser._option_string_actions]
    if not (flags := [flag for flag in flags if flag != "--config"]):
        return
    if launch_only := [flag for flag in flags if flag in launcher_options()]:
        raise UsageError(
            f"{', '.join(launch_only)} is an option of `accelerate launch`, and a launcher started this process: "
            f"give it to the launcher (`accelerate launch {launch_only[0]} ... -m up_trl train ...`)."
        )
    unknown = "; ".join(f"{flag}{closest_names(flag, known)}" for flag in flags)
    if trainer == "grpo":
        raise UsageError(f"unknown option {unknown}. `up-trl train --help` lists the main ones.")
    raise UsageError(
        f"unknown option {unknown} for --trainer {trainer} ({config_name} has no such argument). "
        f"`up-trl train --trainer {trainer} --help-all` lists them all."
    )


def flags_given(argv: Iterable[str]) -> set[str]:
    """The option names written on the command line: `--save_steps 2`, `--save_steps=2` and TRL's alias
    `--save-steps 2` give 'save_steps'."""
    return {arg[2:].split("=", 1)[0].replace("-", "_") for arg in argv if arg.startswith("--")}


def check_settings(s: Settings, parser) -> list[str]:
    """Check the settings (`parser`'s choices first) before TRL's config is built; returns flags to add
    (`--save_strategy steps`). Each refusal is of a value TRL accepts, then fails on after the model loads or trains on
    (`[NAME]`: the case of tests/test_cli_checks.py::test_library_accepts_what_we_refuse that shows it)."""
    check_choices(s, parser)
    streaming = s["dataset_streaming"] or (s["datasets"] and s["streaming"])  # no length [streaming_without_max_steps]
    if streaming and (s["max_steps"] is None or s["max_steps"] <= 0):
        name = "dataset_streaming" if s["dataset_streaming"] else "streaming"
        raise UsageError(f"{s.show(name)}: a stream has no length: set --max_steps, the optimizer steps to train.")
    if s["share_prompt_prefix"] and s["trainer"] == "async_grpo":
        raise UsageError(f"{s.show('share_prompt_prefix')}: the CPU saving is for --trainer grpo and rloo.")
    check_ranges(s, "train")
    from ..trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES

    known, loss_type = CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES, s["loss_type"]  # UP's config checks it under UP only
    if "loss_type" in s.values and loss_type not in known:  # TRL fails at the first loss [loss_type]
        close = closest_names(str(loss_type), known)
        raise UsageError(f"{s.show('loss_type')} is not one of {', '.join(known)}{close}.")
    # --save_steps N alone adds --save_strategy steps (a recipe's `no` would win silently); both written: an error, as
    # TRL saves nothing [save_steps_with_save_strategy_no]
    if "save_steps" not in s.command_line or str(s["save_strategy"]) not in ("no", "SaveStrategy.NO"):
        return []
    if "save_strategy" in s.command_line:
        raise UsageError(
            f"--save_steps {s['save_steps']:g} with --save_strategy no saves nothing: drop --save_strategy no, or "
            "set it to steps."
        )
    return ["--save_strategy", "steps"]


def check_choices(settings: Settings, parser) -> None:
    """A recipe's value for a setting with choices (argparse checks only the command line's)."""
    for action in parser._actions:  # up_mode: YAML's off is false, which the UP config reads (and refuses the rest)
        value = settings.recipe.get(action.dest)
        if not action.choices or value is None or action.dest == "up_mode" or action.dest in settings.command_line:
            continue
        known = [str(getattr(c, "value", c)) for c in action.choices]
        if str(getattr(value, "value", value)) not in known:
            raise UsageError(f"{settings.show(action.dest)} is not one of {', '.join(known)}.")
