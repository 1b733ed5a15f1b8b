"""One run per output folder: `filelock.FileLock` on `<output_dir>/.up_trl.lock`, holding the run's pid (not
`SoftFileLock`: a killed run's file would lock the folder). Rules and tests: docs/reliability.md, "One run per folder".
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

LOCK_FILE = ".up_trl.lock"


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _write_pid(fd: int) -> None:
    """filelock's `on_acquired`: the pid into the lock file, once this process holds it."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode())


class RunLock:
    """The lock a run holds on its folder (None for a process that takes none), and the dead run's `stale_pid`."""

    def __init__(self, folder: Path, lock=None, stale_pid: int | None = None, made=()):
        self.folder, self.lock, self.stale_pid, self.made = folder, lock, stale_pid, list(made)  # made: deepest first

    def release(self) -> None:
        if self.lock is None:
            return
        with contextlib.suppress(OSError):  # a folder made read-only: the file stays, unlocked
            (self.folder / LOCK_FILE).unlink(missing_ok=True)  # while held: a run waiting on it takes a new one
        self.lock.release()
        self.lock = None
        remove_made(self.made)


def remove_made(folders: list[Path]) -> None:
    """Remove the folders a run created (deepest first), each only when empty: the run stopped before writing."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def lock_output_dir(output_dir: str | os.PathLike) -> RunLock:
    """Take the lock on `output_dir` (created if missing), or a one-line ValueError (another run's pid named)."""
    from filelock import FileLock, Timeout

    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--output_dir {output_dir} is a file: name a folder (it is created if missing).")
    made = [p for p in [folder, *folder.parents] if not p.exists()]  # deepest first
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        remove_made(made)
        raise ValueError(
            f"--output_dir {output_dir} cannot be created ({error.strerror}): name a folder you can write to."
        ) from None
    path = folder / LOCK_FILE
    left = _read_pid(path)  # a pid left there: by a run that died holding the lock, or by the one holding it now
    lock = FileLock(path, timeout=0, on_acquired=_write_pid)
    try:
        lock.acquire()
    except Timeout:
        for _ in range(21):  # a run that took the lock this instant writes its pid right after
            pid = _read_pid(path)
            if pid is not None:
                break
            time.sleep(0.05)
        who = f"pid {pid}" if pid is not None else "a process that has not written its pid yet"
        raise ValueError(
            f"--output_dir {output_dir} is in use by another run ({who}): wait for it to end, stop it, or pass "
            "another --output_dir."
        ) from None
    except OSError as error:
        if made:  # the lock file in a folder this run created is its own
            path.unlink(missing_ok=True)
        remove_made(made)
        raise ValueError(
            f"--output_dir {output_dir} cannot be locked ({error.strerror or error}): name a folder you can write "
            "to, on a file system with file locks."
        ) from None
    return RunLock(folder, lock, stale_pid=left if left not in (None, os.getpid()) else None, made=made)
