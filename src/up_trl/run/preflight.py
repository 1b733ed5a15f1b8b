"""What `up-trl train` checks before any model loads, each a one-line `UsageError`: the output folder, and under its
lock what a previous run left there (`run.folder`); an async GRPO run's GPU and vLLM server; the data size."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ..errors import UsageError, is_a_file


def check_output_folder(output_dir: str | os.PathLike, flag: str = "--output_dir") -> None:
    """Refuse, creating nothing, an output folder that cannot be made or written (a file, a long name, read-only)."""
    folder = Path(os.path.expanduser(str(output_dir)))
    if os.path.isfile(folder):  # os.path's checks take any OSError (a name too long, say) as nothing there
        raise UsageError(is_a_file(output_dir, flag))
    existing = folder.absolute()
    while not os.path.exists(existing) and existing != existing.parent:
        existing = existing.parent
    if not os.path.isdir(existing):
        raise UsageError(
            f"{flag} {output_dir} cannot be created: {existing} is a file, not a folder; name a folder elsewhere."
        )
    name_max = None
    with contextlib.suppress(OSError, ValueError, AttributeError):  # not POSIX, or not said
        name_max = os.pathconf(existing, "PC_NAME_MAX")
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


def prepare_run(script_args, training_args, model: str | None, recipe: str | None = None):
    """Lock the output folder, then look at what is in it (`run.folder`), or a UsageError: (its lock, the checkpoint to
    resume or None, the previous run's files to remove first, notes to print)."""
    from .folder import RunLock, check_output_dir, files_the_run_reads, lock_output_dir, resolve_resume

    out = training_args.output_dir
    lock = RunLock(Path(out))
    try:
        if os.environ.get("RANK", "0") == "0":  # one process takes it (every process of a launch shares the folder)
            lock = lock_output_dir(out)
        notes: list[str] = []
        if lock.stale_pid is not None:
            notes.append(f"took over the lock of {out}: the run that held it (pid {lock.stale_pid}) is gone")
        resume = resolve_resume(training_args.resume_from_checkpoint, out, notes)
        overwrite, reads = script_args.overwrite_output_dir, files_the_run_reads(script_args, recipe)
        remove = check_output_dir(out, overwrite=overwrite, resume=resume, model=model, reads=reads)
    except ValueError as error:
        lock.release()
        raise UsageError(str(error)) from None
    return lock, resume, remove, notes


def check_dataset_size(dataset, training_args) -> None:
    """Refuse fewer problems than one rollout batch takes: TRL's sampler would run zero steps (a stream: unchecked)."""
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
    """Refuse `--trainer async_grpo` without a CUDA GPU or a vLLM server (waited for as TRL waits)."""
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
        with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(url, timeout=5) as answer:
            if answer.status == 200:
                return
        if time.monotonic() >= deadline:
            raise UsageError(
                f"--trainer async_grpo: no vLLM server answered at {url} within vllm_server_timeout "
                f"{args.vllm_server_timeout:g} s: start one with `trl vllm-serve --model {model}`, or point "
                "--vllm_server_base_url at it."
            )
        time.sleep(1)
