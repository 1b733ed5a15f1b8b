"""Writes `options.json` from the real parsers (imports TRL): `PYTHONPATH=src python -m up_trl.cli.write_options`
after a TRL bump or a change to a UP config (`cli.options` says why the file exists)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .options import OPTIONS_FILE, fingerprint


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
    """The options of the real parsers, as `options.json` holds them."""
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


def write() -> Path:
    """Write `options.json`: one option a line, so that a TRL bump reads as a short diff."""
    built = build()
    trainers, help_texts = built.pop("trainers"), built.pop("help")
    head = json.dumps(built, sort_keys=True)[:-1]
    body = ",\n".join(
        f'  "{name}": [\n' + ",\n".join("    " + json.dumps(r, sort_keys=True) for r in records) + "\n  ]"
        for name, records in trainers.items()
    )
    texts = ",\n".join(
        f'  "{name}": {{\n'
        + ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in by_option.items())
        + "\n  }"
        for name, by_option in help_texts.items()
    )
    OPTIONS_FILE.write_text(f'{head},\n "trainers": {{\n{body}\n }},\n "help": {{\n{texts}\n }}\n}}\n')
    return OPTIONS_FILE


if __name__ == "__main__":
    print(f"wrote {write()}")
