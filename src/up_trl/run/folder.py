"""A run's output folder: one run at a time (its lock), what a previous run left there (its run record), and
overwriting or resuming it. Rules and tests: docs/reliability.md, "One run per folder" and "What a run writes, and
what `--overwrite_output_dir` removes"."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from transformers.trainer_utils import get_last_checkpoint

from ..errors import is_a_file
from ..models.source import checkpoints_in
from .checkpoints import COMPLETE_MARK, WEIGHT_FILES, checkpoint_problem, newest_complete, read_json, read_mark

LOCK_FILE = "_up_trl.lock"  # "_*": left out of a push to the Hub, as transformers leaves it


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
    with contextlib.suppress(OSError):  # one not empty: it and those above it stay
        for folder in folders:
            folder.rmdir()


def lock_output_dir(output_dir: str | os.PathLike) -> RunLock:
    """Take the lock on `output_dir` (created if missing), or a one-line ValueError (another run's pid named)."""
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise ValueError(is_a_file(output_dir))
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
            if (pid := _read_pid(path)) is not None:
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


RUN_RECORD = "up_trl_run.json"
# What `up-trl train` writes at the top of its output folder (the one list): `save_model`'s files, ours, and TRL's
# `completions/` (its tables under --log_completions).
RUN_FILES = ("config.json", "generation_config.json", "model.safetensors", "model.safetensors.index.json",
             "pytorch_model.bin", "pytorch_model.bin.index.json", "adapter_config.json", "adapter_model.safetensors",
             "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
             "chat_template.json", "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json",
             "training_args.bin", "trainer_state.json", "metrics.jsonl", "metrics.png", "README.md",
             "completions", RUN_RECORD)  # fmt: skip
# What a run numbers, as whole-name regular expressions (not `checkpoint-6.keep/`, say): checkpoints, weight shards.
RUN_GLOBS = (r"checkpoint-[0-9]+", r"model-[0-9]+-of-[0-9]+\.safetensors", r"pytorch_model-[0-9]+-of-[0-9]+\.bin")
# The listed files a user may edit are hashed in the record (one changed since is the user's); weights go by name.
NOT_HASHED, HASH_LIMIT = (*WEIGHT_FILES, "training_args.bin", RUN_RECORD), 16 * 2**20


def is_model_card(path: Path) -> bool:
    """Whether `path` is a model card an up-trl run wrote (`generated_from_trainer` front matter naming up-trl)."""
    try:
        text = path.read_text(errors="replace")[:20_000]
    except OSError:
        return False
    return text.startswith("---") and "generated_from_trainer" in text and "up-trl" in text


def _matching(folder: Path, names: Sequence[str], patterns: Sequence[str] = ()) -> list[Path]:
    """The entries at the top of `folder` whose name is one of `names` or matches one of `patterns` whole."""
    wanted = set(names)
    return sorted(p for p in folder.iterdir() if p.name in wanted or any(re.fullmatch(r, p.name) for r in patterns))


def previous_run_files(output_dir: str | os.PathLike) -> list[Path]:
    """What previous runs wrote in `output_dir` (what `--overwrite_output_dir` removes): what the run record lists,
    or for an earlier up-trl every `RUN_FILES` and `RUN_GLOBS` entry but a user's README.md; `eval/` with either."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    record = read_json(folder / RUN_RECORD)
    # an up-trl from before run records listed files: its record, metrics, card or marks
    earlier = record is not None or (folder / "metrics.jsonl").is_file() or is_model_card(folder / "README.md")
    if record is not None and isinstance(record.get("files"), list):
        names = [n for key in ("files", "writing") for n in record.get(key) or [] if isinstance(n, str)]
        found = _matching(folder, names, RUN_GLOBS)  # the record's `patterns` are these (it names them for a reader)
    elif earlier or any((c / COMPLETE_MARK).is_file() for c in checkpoints_in(folder)):
        found = [p for p in _matching(folder, RUN_FILES, RUN_GLOBS) if p.name != "README.md" or is_model_card(p)]
    else:
        return []
    found += [folder / "eval"] if (folder / "eval" / "eval.json").exists() and folder / "eval" not in found else []
    return found


def describe_run_files(files: Sequence[Path]) -> str:
    """What `previous_run_files` found, in a user's words: 'model, metrics.jsonl, model card, 2 checkpoints'."""
    names = {p.name for p in files}
    parts = ["model"] if names & {*WEIGHT_FILES, "config.json"} or any(n.startswith("model-") for n in names) else []
    parts += [n for n in ("metrics.jsonl", "metrics.png") if n in names]
    parts += ["model card"] if "README.md" in names else []
    checkpoints = sum(n.startswith("checkpoint-") for n in names)
    parts += [f"{checkpoints} checkpoint{'s' if checkpoints > 1 else ''}"] if checkpoints else []
    parts += [f"{n}/" for n in ("completions", "eval") if n in names]
    return ", ".join(parts) or "a run record"


def remove_run_files(files: Sequence[Path]) -> None:
    """Delete what `previous_run_files` found, folders whole."""
    for path in files:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def resolve_resume(value: str | None, output_dir: str | os.PathLike, notes: list[str] | None = None) -> str | None:
    """The checkpoint `--resume_from_checkpoint VALUE` means, or a ValueError saying why there is none: `true` is the
    newest complete one (those skipped named in `notes`), `false`/unset none, else a complete checkpoint folder."""
    if value is None or str(value).strip().lower() in ("", "false", "none", "no"):
        return None
    if str(value).strip().lower() in ("true", "yes", "latest", "last"):
        newest, skipped = newest_complete(output_dir)
        gone = ", ".join(f"{path.name} ({why})" for path, why in skipped)  # 'checkpoint-6 (empty), checkpoint-5 (...)'
        if newest is None and skipped:
            raise ValueError(
                f"--resume_from_checkpoint true: no complete checkpoint in {output_dir}, only incomplete ones (a save "
                f"that was interrupted): {gone}: remove them, or drop the flag to start afresh."
            )
        if newest is None:
            raise ValueError(
                f"--resume_from_checkpoint true: no checkpoint-<step> folder in {output_dir} to resume from (a run "
                "saves them with --save_steps N, when it is stopped, or when it crashes): pass a checkpoint folder, "
                "or drop the flag to start afresh."
            )
        if skipped and notes is not None:
            notes.append(f"resuming from {newest}, the newest complete checkpoint; skipped the incomplete {gone}")
        return str(newest)
    path = Path(os.path.expanduser(str(value)))
    if not path.is_dir():
        raise ValueError(
            f"--resume_from_checkpoint {value}: no such folder (pass a checkpoint-<step> folder, or true)."
        )
    latest = get_last_checkpoint(path)  # transformers': the checkpoint-<step> folder of the highest step, or None
    if not (path / "trainer_state.json").is_file() and latest is not None:
        raise ValueError(
            f"--resume_from_checkpoint {value} is not a checkpoint (no trainer_state.json) (its latest "
            f"checkpoint is {latest})."
        )
    siblings = checkpoints_in(path.parent)  # `path` is a folder: so is its parent
    problem = checkpoint_problem(path, marks_expected=any(read_mark(c) is not None for c in siblings))
    if problem is not None:
        newest, _ = newest_complete(path.parent)
        hint = f": pass {newest}, the newest complete one," if newest is not None else ":"
        raise ValueError(
            f"--resume_from_checkpoint {value} is not a complete checkpoint ({problem}){hint} or "
            "--resume_from_checkpoint true."
        )
    return str(path)


def check_output_dir(
    output_dir: str, *, overwrite: bool, resume: str | None, model: str | None, reads: dict | None = None
) -> list[Path]:
    """Refuse (ValueError, one line) an output folder this run must not write into; returns the previous run's files
    to remove first (`--overwrite_output_dir`), never one holding a path in `reads` ({flag: a path the run reads})."""
    out = Path(output_dir)  # a folder: `lock_output_dir` made it, or refused a file
    if model is not None and Path(model).exists() and out.resolve() == Path(model).resolve():
        raise ValueError(
            f"--output_dir {output_dir} is the folder the model is loaded from: write the trained model elsewhere."
        )
    if overwrite and resume is not None:
        raise ValueError(
            "--overwrite_output_dir removes the checkpoints --resume_from_checkpoint would continue from: pass one."
        )
    files = previous_run_files(out)  # and what a run would write over that no run wrote: a user's README.md, say
    foreign = [p for p in _matching(out, RUN_FILES, RUN_GLOBS) if p not in files] if out.is_dir() else []
    if foreign:
        names = [p.name + ("/" if p.is_dir() else "") for p in foreign]
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        raise ValueError(
            f"--output_dir {output_dir} holds {shown}, which this run would write over and no up-trl run wrote "
            "(no run record lists them): move them out of it, or choose another --output_dir "
            "(--overwrite_output_dir removes only what a run wrote)."
        )
    if not files or resume is not None:
        return []
    if overwrite:
        if edited := edited_since_written(out):
            names = ", ".join(p.name for p in edited)
            raise ValueError(
                f"--output_dir {output_dir}: {names} changed since the run wrote it, so it is yours now: move it out "
                "of the folder (--overwrite_output_dir would remove it), or choose another --output_dir."
            )
        for flag, path in {"--model_name_or_path": model, **(reads or {})}.items():  # none of `files` is read
            read = Path(path).resolve() if path is not None and Path(path).exists() else None
            for removed in files if read is not None else []:
                if read == removed.resolve() or removed.resolve() in read.parents:
                    raise ValueError(
                        f"--overwrite_output_dir would remove {removed}, which this run reads ({flag} {path}): move "
                        f"it out of {output_dir} first, or choose another --output_dir."
                    )
        return files
    raise ValueError(
        f"--output_dir {output_dir} holds a previous run ({describe_run_files(files)}): pass --overwrite_output_dir "
        "to replace it, --resume_from_checkpoint true to continue it, or another --output_dir."
    )


def files_the_run_reads(script_args, recipe: str | None) -> dict[str, str | None]:
    """{flag: a path this run reads}, for `--overwrite_output_dir` to leave alone (reward modules found unimported)."""
    reads: dict[str, str | None] = {"--dataset_name": script_args.dataset_name, "--config": recipe}
    for name in [name for name in script_args.reward_funcs or [] if "." in name]:  # a dotted path: its module's file
        try:
            spec = importlib.util.find_spec(name.rpartition(".")[0])
        except (ImportError, ValueError):  # checked and said elsewhere (`check_reward_names`, the registry)
            continue
        if spec is not None and spec.origin not in (None, "built-in", "frozen"):
            reads[f"--reward_funcs {name}"] = spec.origin
    return {flag: path for flag, path in reads.items() if path}


def resume_command(argv: Sequence[str]) -> str:
    """The same `up-trl train` line with `--resume_from_checkpoint true` in place of any `--resume_from_checkpoint` or
    `--overwrite_output_dir` (which would remove the checkpoints).

    >>> resume_command(["--max_steps", "12", "--overwrite_output_dir", "--resume_from_checkpoint=x"])
    'up-trl train --max_steps 12 --resume_from_checkpoint true'
    """
    drop, yes_no = ("--resume_from_checkpoint", "--overwrite_output_dir"), ("true", "false", "yes", "no", "1", "0")
    kept = [  # each of them, and the value after one (after --overwrite_output_dir, only a yes or no)
        arg
        for previous, arg in zip(["", *argv], argv)
        if arg.split("=", 1)[0] not in drop
        and not (previous in drop and not arg.startswith("--") and (previous == drop[0] or arg.lower() in yes_no))
    ]
    return shlex.join(["up-trl", "train", *kept, "--resume_from_checkpoint", "true"])


def write_run_record(output_dir: str | os.PathLike, *, running: bool = False, **fields: Any) -> Path:
    """Write `up_trl_run.json`: `fields`, the `RUN_FILES` there now with those listed before (a resumed run's), their
    hashes, and while `running` the names it may still write; renamed into place, so a kill leaves a whole one."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    before = (read_json(folder / RUN_RECORD) or {}).get("files")
    listed = {n for n in before if isinstance(n, str)} if isinstance(before, list) else set()
    listed |= {p.name for p in _matching(folder, RUN_FILES)} | {RUN_RECORD}
    files = sorted(n for n in listed if n == RUN_RECORD or (folder / n).exists())
    record = {**fields, "files": files, "patterns": list(RUN_GLOBS), "hashes": content_hashes(folder, files)}
    record |= {"writing": list(RUN_FILES)} if running else {}
    path, temporary = folder / RUN_RECORD, folder / f"{RUN_RECORD}.tmp"
    temporary.write_text(json.dumps(record, indent=2) + "\n")
    return temporary.replace(path)


def content_hashes(folder: Path, names: Sequence[str]) -> dict[str, str]:
    """{name: SHA-256} of the small files among `names` a user may edit (not `NOT_HASHED`, under `HASH_LIMIT`)."""
    paths = {n: folder / n for n in names if n not in NOT_HASHED and (folder / n).is_file()}
    return {n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in paths.items() if p.stat().st_size <= HASH_LIMIT}


def edited_since_written(output_dir: str | os.PathLike) -> list[Path]:
    """The listed files changed since written (a user's edit); [] for a run that did not end (an older record)."""
    folder = Path(output_dir)
    record = read_json(folder / RUN_RECORD)
    if record is None or "writing" in record or not isinstance(record.get("hashes"), dict):
        return []
    now = content_hashes(folder, list(record["hashes"]))
    return [folder / name for name, digest in record["hashes"].items() if name in now and now[name] != digest]


def refresh_run_record(output_dir: str | os.PathLike) -> Path | None:
    """Rewrite the run record (at each save) with the files written so far, its fields kept."""
    if (record := read_json(Path(output_dir) / RUN_RECORD)) is None:
        return None
    fields = {k: v for k, v in record.items() if k not in ("files", "patterns", "writing", "hashes")}
    return write_run_record(output_dir, running="writing" in record, **fields)


def forget_run_record(output_dir: str | os.PathLike) -> None:
    """Remove the record of a run that wrote nothing else, so that no run is left behind to refuse a rerun."""
    folder = Path(output_dir)
    if all(p.name == RUN_RECORD for p in previous_run_files(folder)):
        (folder / RUN_RECORD).unlink(missing_ok=True)
