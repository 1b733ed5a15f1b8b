"""The settings, checked before TRL's config is built from them: `ranges`, choices, `--loss_type`, saving, streams.
Each check names the test that shows the library accepting what it refuses."""

from __future__ import annotations

from . import Settings, UsageError, closest_names
from .ranges import check_ranges


def check_settings(s: Settings) -> list[str]:
    """Check the settings before TRL's config is built; returns flags to add (`--save_strategy steps`). Each refusal
    is of a value TRL accepts, then fails on after the model loads or trains on (`[NAME]`: the case of
    tests/test_cli_checks.py::test_library_accepts_what_we_refuse that shows it)."""
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
