"""What `up-trl train` checks of the run folder and the machine before any model loads, each failing as a
`UsageError` (one line, exit status 2): the output folder can be made and written (`check_output_folder`, without
creating anything), then, under its lock, what a previous run left there (`prepare_run`: refused, resumed or
overwritten, `run.folder`); an async GRPO run's GPU and vLLM server; a training set too small for one rollout
batch."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError


def check_output_folder(output_dir: str | os.PathLike, flag: str = "--output_dir") -> None:
    """An output folder that cannot be made or written, found without creating anything: a file, under a file, a
    name longer than its file system allows, or in a place that is not writable. (`run.lock.lock_output_dir` then
    creates it, and removes what it created when the run stops before writing anything.)"""

    def mode(path: Path) -> int | None:  # None: nothing there (or a name too long to look up)
        try:
            return path.stat().st_mode
        except OSError:
            return None

    folder = Path(os.path.expanduser(str(output_dir)))
    if stat.S_ISREG(mode(folder) or 0):
        raise UsageError(f"{flag} {output_dir} is a file: name a folder (it is created if missing).")
    existing = folder.absolute()
    while mode(existing) is None and existing != existing.parent:
        existing = existing.parent
    if not stat.S_ISDIR(mode(existing) or 0):
        raise UsageError(
            f"{flag} {output_dir} cannot be created: {existing} is a file, not a folder; name a folder elsewhere."
        )
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not POSIX, or not said
        name_max = None
    new_parts = folder.absolute().relative_to(existing).parts
    for part in new_parts:
        if name_max and len(os.fsencode(part)) > name_max:
            raise UsageError(
                f"{flag} {output_dir} cannot be created: the name {part[:24]}... is {len(os.fsencode(part))} bytes "
                f"long, and this file system allows {name_max}; choose a shorter name."
            )
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "the folder is not writable" if not new_parts else f"{existing} is not writable"
        raise UsageError(
            f"{flag} {output_dir} cannot be {'written' if not new_parts else 'created'}: {where} (a "
            "read-only place, or another user's); name a folder you can write to."
        )


@dataclass
class PreparedRun:
    """The output folder, held: `lock` (the main process's `run.lock.RunLock`; release it when the run ends), the
    checkpoint to `resume` from or None, the previous run's files to `remove` first (`--overwrite_output_dir`), and
    `notes` to print (a stale lock taken over, incomplete checkpoints a resume skipped)."""

    lock: object
    resume: str | None = None
    remove: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def prepare_run(script_args, training_args, model: str | None, recipe: str | None = None) -> PreparedRun:
    """Lock the output folder, then look at what is in it: the checkpoint to resume from, the previous run to
    remove (never a file the run reads: the model, the data, `recipe`, a reward module), or a UsageError."""
    from .folder import check_output_dir, files_the_run_reads, resolve_resume
    from .lock import RunLock, lock_output_dir

    out = training_args.output_dir
    lock = RunLock(Path(out), None, created=False)
    try:
        if os.environ.get("RANK", "0") == "0":  # one process takes it (every process of a launch shares the folder)
            lock = lock_output_dir(out)
        notes: list[str] = []
        if lock.stale_pid is not None:
            notes.append(f"took over the lock of {out}: the run that held it (pid {lock.stale_pid}) is gone")
        resume = resolve_resume(training_args.resume_from_checkpoint, out, notes)
        reads = files_the_run_reads(script_args, recipe)
        remove = check_output_dir(
            out, overwrite=script_args.overwrite_output_dir, resume=resume, model=model, reads=reads
        )
    except ValueError as error:
        lock.release()
        raise UsageError(str(error)) from None
    return PreparedRun(lock, resume, remove, notes)


def check_dataset_size(dataset, training_args) -> None:
    """Fewer problems than one rollout batch takes: TRL's sampler would run zero steps (checked before the model
    loads; a trainer built from Python leaves it to TRL, as the parent does). A stream has no size to check."""
    generation_batch, group = getattr(training_args, "generation_batch_size", None), training_args.num_generations
    problems = getattr(dataset, "num_rows", None)  # None for a stream (an IterableDataset)
    if generation_batch is None or problems is None or problems >= generation_batch // group:
        return
    raise UsageError(
        f"the training set has {problems} problem(s), but one rollout batch takes {generation_batch // group} "
        f"(generation_batch_size {generation_batch} / num_generations {group}), so training would run zero steps: "
        "raise --dataset_limit, or lower --per_device_train_batch_size or --steps_per_generation."
    )


def check_async_grpo(args, model: str) -> None:
    """`--trainer async_grpo` needs what TRL's asynchronous GRPO needs: a CUDA GPU (its packed forward runs a
    flash-attention-3 kernel) and a vLLM server (`trl vllm-serve`) at `vllm_server_base_url`, waited for as TRL waits
    (`vllm_server_timeout`). Either missing is a UsageError, one line, before the model loads."""
    import urllib.request

    import torch

    if args.use_cpu or not torch.cuda.is_available():
        raise UsageError(
            "--trainer async_grpo needs a CUDA GPU and a vLLM server (`trl vllm-serve --model MODEL`): TRL's "
            "asynchronous GRPO samples only through vLLM and packs rows with a flash-attention-3 kernel. On a CPU, "
            "train with --trainer grpo or rloo."
        )
    url, deadline = args.vllm_server_base_url.rstrip("/") + "/health", time.monotonic() + args.vllm_server_timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            raise UsageError(
                f"--trainer async_grpo: no vLLM server answered at {url} within vllm_server_timeout "
                f"{args.vllm_server_timeout:g} s: start one with `trl vllm-serve --model {model}`, or point "
                "--vllm_server_base_url at it."
            )
        time.sleep(1)
