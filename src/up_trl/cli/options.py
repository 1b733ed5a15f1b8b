"""`up-trl train`'s options written down, so that a usage error answers without importing torch, TRL or
transformers: a misspelt flag, a value out of range or a recipe key that does not exist is found by a stand-in parser
built from the table (stdlib argparse), in a fraction of a second, before `cli.train` imports anything heavy. The
real parser (TRL's, over the UP configs) then parses the same line again and builds the config.

The table is data generated from the real parsers for the installed versions (`write_options.remember`): every
option of each `--trainer` (its spellings, type, nargs, default and choices), the options `accelerate launch` takes,
and the UP choices the checks name. It is written on first use, into the user's cache (`cache_file`, under
`UP_TRL_CACHE` or `~/.cache/up-trl`), keyed by `fingerprint()`: the up-trl, trl, transformers and accelerate
versions and the sources of the UP configs (`SOURCES`). So it always describes the installed versions; until it is
written (the first `up-trl train` after an install or upgrade), or where the cache cannot be written, every check
runs on the real parser (seconds slower, never wrong).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("trl", "transformers", "accelerate")
# The sources the options are read from: the UP configs (and their mixins) and the script arguments.
SOURCES = (
    "trainers/grpo_config.py",
    "trainers/rloo_config.py",
    "trainers/async_grpo_config.py",
    "trainers/shared.py",
    "objective/guards.py",
    "run/collapse_warning.py",
    "cli/parse.py",
)


def _code(path: Path) -> bytes:
    """What of a source file can change a parser: its syntax tree without docstrings (comments are not in it), so
    that editing a comment or a docstring keeps the table."""
    import ast

    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False).encode()


def fingerprint() -> dict[str, str]:
    """What a table is written from: the package versions and a hash of `SOURCES` (cheap: no import)."""
    from .. import __version__

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for name in SOURCES:
        path = root / name
        digest.update(_code(path) if path.exists() else b"")
    versions = {"up-trl": __version__}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return {**versions, "sources": digest.hexdigest()}


def cache_file(found: dict[str, str] | None = None) -> Path:
    """Where the table for `found` (default: `fingerprint()`) is kept: one file per fingerprint, so that two
    environments sharing a home folder (two venvs, two stacks) each keep their own."""
    from ..data.models import default_cache_dir

    found = fingerprint() if found is None else found
    key = hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()[:20]
    return default_cache_dir() / "cli-options" / f"up-trl-{found['up-trl']}-{key}.json"


@cache
def current() -> dict[str, Any] | None:
    """The table for the installed versions when it is written, else None (see the module's docstring)."""
    found = fingerprint()
    try:
        written = json.loads(cache_file(found).read_text())
    except (OSError, ValueError):
        return None
    return written if isinstance(written, dict) and written.get("fingerprint") == found else None


def string_to_bool(value):
    """transformers' (and TRL's) `string_to_bool`, which `--flag true|false` is parsed with (copied: it imports
    nothing)."""
    if isinstance(value, bool):
        return value
    if value.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if value.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(
        f"Truthy value expected: got {value} but expected one of yes/no, true/false, t/f, y/n, 1/0 (case insensitive)."
    )


class StandInParser(argparse.ArgumentParser):
    """The parser `up-trl train`'s checks run on before TRL is imported: the same options, types and defaults as
    TRL's parser over the chosen trainer's config (from the table, `current()`)."""

    def __init__(self, records: list[dict[str, Any]], launch_flags: set[str], help_texts=None, **kwargs):
        super().__init__(**kwargs)
        self.launch_flags = launch_flags
        help_texts = help_texts or {}
        for record in records:
            kind, options = record["kind"], record["options"]
            text = help_texts.get(options[0])  # as TRL's formatter filled it in: printed as it is (`%` kept)
            text = None if text is None else text.replace("%", "%%")
            if kind == "store_false":
                self.add_argument(
                    *options, dest=record["dest"], action="store_false", default=record["default"], help=text
                )
                continue
            extra: dict[str, Any] = {"nargs": record["nargs"], "default": record["default"], "help": text}
            if "const" in record:
                extra["const"] = record["const"]
            if kind == "choice":
                by_text = {str(choice): choice for choice in record["choices"]}
                extra |= {"choices": record["choices"], "type": lambda text, by_text=by_text: by_text.get(text, text)}
            else:
                extra["type"] = {"int": int, "float": float, "bool": string_to_bool, "str": str}[kind]
            self.add_argument(*options, dest=record["dest"], **extra)

    def set_defaults_with_config(self, **kwargs) -> None:
        """As TrlParser's: a recipe's values become the defaults."""
        for action in self._actions:
            if action.dest in kwargs:
                action.default, action.required = kwargs[action.dest], False


def stand_in_parser(trainer: str, **kwargs) -> StandInParser | None:
    """The stand-in for `parse.make_parser(trainer)` (`kwargs`: ArgumentParser's, prog and usage), or None when
    the table for the installed versions is not written yet."""
    options = current()
    if options is None or trainer not in options["trainers"]:
        return None
    texts = options["help"]
    help_texts = {**texts[next(iter(texts))], **texts[trainer]}  # the first trainer's, then this one's differences
    return StandInParser(options["trainers"][trainer], set(options["accelerate_launch"]), help_texts, **kwargs)
