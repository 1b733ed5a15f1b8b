"""What `up-trl train` and `up-trl eval` refuse before any model loads, each as one `UsageError` line (exit 2):
`recipe_and_flags` (YAML, misspelt keys and flags, then the values), `ranges` (what TRL's config does not check).
What the settings point at: `cli.parse.check_targets`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UsageError


class RecipeNotFoundError(UsageError, FileNotFoundError):
    """`--config` names a file that does not exist."""


class Settings:
    """The values TRL's config will be built from, and where each came from (for the messages)."""

    def __init__(self, values: Mapping[str, Any], command_line: set[str], recipe: Mapping[str, Any], where: str):
        self.values, self.command_line, self.recipe, self.where = values, command_line, recipe, where

    def __getitem__(self, name: str) -> Any:
        return self.values.get(name)

    def show(self, name: str, value: Any = None) -> str:
        """`--name value` as the user set it: on the command line, in the recipe, or by the default."""
        value = self.values.get(name) if value is None else value
        value = f"{value:g}" if isinstance(value, float) else value  # 0.0 as typed: 0
        if name in self.command_line:
            return f"--{name} {value}"
        return f"{name} {value} ({f'from the {self.where}' if name in self.recipe else 'the default'})"
