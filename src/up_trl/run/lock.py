"""One run per output folder: `up-trl train` locks its `--output_dir` before it looks at what is in it.

The lock is an `fcntl.flock` on `<output_dir>/.up_trl.lock`, which holds the pid of the run that has it. The
kernel lets one process hold it at a time (two runs started at the same instant: one gets it, the other is refused)
and drops it when that process dies, however it dies: a lock file left by a dead process is stale by construction,
and the pid it names is checked to say so. A second run into a locked folder is refused in one line naming the
first run's pid. Released (the file removed, and the folders too that the run created, parents included, when it
left nothing in them) when the run ends, or when taking it fails.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LOCK_FILE = ".up_trl.lock"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid is running (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode(errors="replace").split()
        return int(text[0]) if text else None
    except (OSError, ValueError):
        return None


class RunLock:
    """The lock a run holds on its output folder; `release()` when the run ends. `stale_pid`: the pid of a dead run
    whose lock file this one took over (None when there was none)."""

    def __init__(self, folder: Path, fd: int | None, created: bool, stale_pid: int | None = None, made=()):
        self.folder, self.fd, self.created, self.stale_pid = folder, fd, created, stale_pid
        self.made = list(made) or ([folder] if created else [])  # the folders it created, deepest first

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            (self.folder / LOCK_FILE).unlink(missing_ok=True)  # while still held: a waiting run then re-creates it
        finally:
            os.close(self.fd)
            self.fd = None
        remove_made(self.made)


def remove_made(folders: list[Path]) -> None:
    """Remove the folders a run created (deepest first), each only when empty: the run stopped before writing."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def lock_output_dir(output_dir: str | os.PathLike) -> RunLock:
    """Take the lock on `output_dir` (created if missing), or a ValueError: the folder is a file, cannot be created
    or written, or another running process holds it (its pid named)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        return RunLock(Path(output_dir), None, created=False)

    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--output_dir {output_dir} is a file: name a folder (it is created if missing).")
    created = not folder.exists()
    made = [p for p in [folder, *folder.parents] if not p.exists()] if created else []  # deepest first
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        remove_made(made)
        raise ValueError(
            f"--output_dir {output_dir} cannot be created ({error.strerror}): name a folder you can write to."
        ) from None
    path = folder / LOCK_FILE
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            remove_made(made)
            raise ValueError(
                f"--output_dir {output_dir} cannot be written ({error.strerror}): name a folder you can write to."
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pid = _read_pid(fd)
            for _ in range(20):  # a run that took the lock this instant writes its pid right after
                if pid is not None:
                    break
                time.sleep(0.05)
                pid = _read_pid(fd)
            os.close(fd)
            who = f"pid {pid}" if pid is not None else "a process that has not written its pid yet"
            raise ValueError(
                f"--output_dir {output_dir} is in use by another run ({who}): wait for it to end, stop it, or pass "
                "another --output_dir."
            ) from None
        try:  # the file may have been released and removed between our open and our lock: lock the one there now
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    previous = _read_pid(fd)
    stale = previous if previous is not None and previous != os.getpid() and not pid_alive(previous) else None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return RunLock(folder, fd, created, stale, made)
