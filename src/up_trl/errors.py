"""The one error every layer raises for a mistake the user makes (`up-trl` prints it as one line and exits 2), and the
pieces its lines share."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UsageError(ValueError):
    """A mistake on the command line, in a recipe or in what they name (one line, exit 2, like argparse)."""


def is_a_file(output_dir, flag: str = "--output_dir") -> str:
    """The one line for an output folder that names a file (the CLI's check and the run's lock)."""
    return f"{flag} {output_dir} is a file: name a folder (it is created if missing)."


def closest_names(name: str, known: Iterable[str], n: int = 3) -> str:
    """' (did you mean a, b?)' naming the closest known names, or '' when none is close.

    >>> closest_names("leraning_rate", ["learning_rate", "max_steps"])
    ' (did you mean learning_rate?)'
    """
    close = difflib.get_close_matches(name, list(known), n=n)
    return f" (did you mean {', '.join(close)}?)" if close else ""
