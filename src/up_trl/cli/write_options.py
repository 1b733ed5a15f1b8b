"""Writes the options table (`cli.options`) for the installed versions from the real parsers (imports TRL), into
the user's cache: `remember()`, called once the real parser has run (`parse.parse_train_args`, `--help-all`).

Written atomically (a file beside it, then a rename), so that several processes starting at once (the ranks of a
launch) each write the same table and none reads half of one; a cache that cannot be written is skipped (the checks
then keep running on the real parser).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .options import cache_file, current, fingerprint


def _action_record(action: argparse.Action) -> dict[str, Any]:
    """One option of the real parser as JSON: enough for argparse to parse it the same way."""
    choices = [getattr(c, "value", c) for c in action.choices] if action.choices else None
    kind = getattr(action.type, "__name__", None)  # TRL's parser has its own copy of string_to_bool
    kind = "bool" if kind == "string_to_bool" else kind
    if choices is not None:
        kind = "choice"
    elif kind not in ("int", "float", "bool"):
        kind = "str"
    default = getattr(action.default, "value", action.default)
    if isinstance(default, list):
        default = [getattr(d, "value", d) for d in default]
    record = {
        "options": list(action.option_strings),
        "dest": action.dest,
        "kind": kind,
        "nargs": action.nargs,
        "default": default,
        "choices": choices,
    }
    if isinstance(action, argparse._StoreFalseAction):
        record["kind"] = "store_false"
    elif action.nargs == "?":
        record["const"] = action.const
    json.dumps(record)  # every field is JSON (a default that is not fails here, when the file is written)
    return record


def _help_texts(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """Each option's help as `--help-all` prints it, `(default: ...)` and `%(...)s` filled in by the real parser's
    formatter (ArgumentDefaultsHelpFormatter), keyed by its first spelling. The stand-in wraps the same text to the
    terminal's width, so both print the same at any width."""
    formatter = parser._get_formatter()
    actions = [action for action in parser._actions if not isinstance(action, argparse._HelpAction)]
    return {
        action.option_strings[0]: formatter._expand_help(action)
        if action.help and action.help.strip()
        else action.help
        for action in actions
    }


def build() -> dict[str, Any]:
    """The options of the real parsers, as the table holds them."""
    from accelerate.commands.launch import launch_command_parser

    from ..objective.losses import UP_MODES
    from ..trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES
    from .parse import TRAINERS, make_parser

    trainers, help_texts = {}, {}
    for name in TRAINERS:
        parser = make_parser(name)
        actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
        trainers[name] = [_action_record(a) for a in actions]
        texts = _help_texts(parser)
        first = help_texts.get(next(iter(TRAINERS)), {})  # the other trainers keep only the texts that differ
        help_texts[name] = {k: v for k, v in texts.items() if k not in first or first[k] != v}
    launcher = launch_command_parser()._actions
    return {
        "fingerprint": fingerprint(),
        "up_modes": list(UP_MODES),
        "clipped_loss_types": list(CLIPPED_LOSS_TYPES),
        "other_loss_types": list(OTHER_LOSS_TYPES),
        "accelerate_launch": {option: action.nargs != 0 for action in launcher for option in action.option_strings},
        "trainers": trainers,
        "help": help_texts,
    }


def remember() -> Path | None:
    """Write the table for the installed versions unless it is written; returns its file, or None when the cache
    cannot be written (a read-only home, a full disk)."""
    if current() is not None:
        return cache_file()
    built = build()
    target = cache_file(built["fingerprint"])
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w") as file:
                json.dump(built, file)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return None
    current.cache_clear()
    return target


if __name__ == "__main__":
    print(f"wrote {remember()}")
