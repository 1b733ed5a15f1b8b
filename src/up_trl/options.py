"""`option`: a dataclass field with its help, as HfArgumentParser reads it (`up-trl train`'s script arguments and
`up-trl eval`'s)."""

from __future__ import annotations

from dataclasses import field


def option(default, text: str, **more):
    """A field with its help (and `choices`) for HfArgumentParser; a list default is copied for each instance."""
    made = {"default_factory": lambda: list(default)} if isinstance(default, list) else {"default": default}
    return field(**made, metadata={"help": text, **more})
