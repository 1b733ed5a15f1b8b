"""Saved weights get the mode a plain `open()` gives: transformers 5.24 writes `model.safetensors` through a private
temporary file (0600) and renames it, so a saved model was readable by its owner only."""

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
    """Private weight files under `folder` get `default_file_mode()`; with `since`, only those written since then."""
    mode = default_file_mode()
    for path in Path(folder).rglob("*"):
        if path.suffix in WEIGHT_SUFFIXES and path.is_file() and not path.is_symlink():
            if (status := path.stat()).st_mode & 0o077 == 0 and (since is None or status.st_mtime >= since):
                path.chmod(mode)
