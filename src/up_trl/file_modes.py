"""Saved files get the usual mode: transformers 5.24 writes `model.safetensors` through a private temporary file
(mode 0600) and renames it, so a saved model was readable by its owner only, unlike every other file beside it.
`usual_file_modes(folder)` gives the files up-trl saved the mode a plain `open()` would have (0o666 & ~umask: 0644
under the default umask 022)."""

from __future__ import annotations

import os
from pathlib import Path


def default_file_mode() -> int:
    """0o666 & ~umask (0o644 under umask 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


WEIGHT_SUFFIXES = (".safetensors", ".bin")


def usual_file_modes(folder: str | os.PathLike, since: float | None = None) -> None:
    """Give the weight files under `folder` written private (no group or other bit, as a temporary file is)
    `default_file_mode()`; with `since` (a `time.time()`), only those modified since then, the ones a save just
    wrote (a private weight file of the user's beside them stays private). Any other file is left as it is."""
    mode = default_file_mode()
    for path in Path(folder).rglob("*"):
        if path.suffix in WEIGHT_SUFFIXES and path.is_file() and not path.is_symlink():
            status = path.stat()
            if status.st_mode & 0o077 == 0 and (since is None or status.st_mtime >= since):
                path.chmod(mode)
