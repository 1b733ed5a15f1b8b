"""How a run ends (docs/reliability.md): early, saying why (`stop_reason`); crashed, with an emergency checkpoint and
one line (`after_crash`, raised as `TrainingCrashed`), a save the disk or folder refused its own line
(`save_failure_message`); and, launched with others, together (`exit_launched_process`). What launched this process
(`already_launched`, `launched_command`: the resume command repeats it).

Light at import (the standard library only): `cli` imports `TrainingCrashed` before torch."""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import math
import os
import shlex
import shutil
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class TrainingCrashed(RuntimeError):
    """`trainer.train()` raised: the one line says what was saved; the exception, shown unless a save failed."""

    def __init__(self, message: str, output_dir: str | None = None):
        super().__init__(message)
        self.output_dir = output_dir  # where a failed save would have written (`failed_save`)

    @property
    def show_cause(self) -> bool:
        return self.__cause__ is not None and not failed_save(self.__cause__, self.output_dir)


LAUNCHED = "UP_TRL_LAUNCHED"  # the processes `up-trl train` starts get its command line: none launches again


def launched_command() -> list[str] | None:
    """The `up-trl train` command line that launched this process (its resume command repeats it), else None."""
    with contextlib.suppress(ValueError, TypeError):
        return [str(arg) for arg in json.loads(os.environ.get(LAUNCHED) or "null")]
    return None


def already_launched() -> bool:
    """Whether a launcher started this process: ours, `accelerate launch` (a variable only it sets) or torchrun."""
    return any(os.environ.get(name) for name in (LAUNCHED, "ACCELERATE_DYNAMO_USE_FULLGRAPH", "LOCAL_RANK"))


def launched_with_others() -> bool:
    """Whether this process is one of several that a launcher (`accelerate launch`, torchrun) started."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def exit_launched_process(code: int):
    """Exit with `code` as usual but without the interpreter's teardown, in which gloo's late threads abort the process
    (SIGABRT after a complete run; no PyTorch fix: pytorch/pytorch#190489)."""
    # The interpreter's own first steps at exit, in its order: threading's hooks and joins, then the atexit handlers.
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing more can be written to it
            stream.flush()
    os._exit(code)


def save_after_crash(trainer) -> tuple[str | None, str]:
    """(path or None, what, in words) of an emergency checkpoint by the Trainer's `_save_checkpoint`; none before a
    step, with non-finite weights, or with several processes (saving needs every one, and the crashed one is gone)."""
    import torch

    from .callbacks import StepEndRngCallback

    step = trainer.state.global_step
    if step == 0:
        return None, "nothing to save: no optimizer step had finished"
    if trainer.accelerator.num_processes > 1:
        return None, f"no emergency checkpoint with {trainer.accelerator.num_processes} processes"
    if not all(bool(torch.isfinite(p).all()) for p in trainer.model.parameters()):
        what = f"the weights after step {step} are not finite (NaN or inf: lower --learning_rate)"
        return None, f"no emergency checkpoint: {what}"
    for callback in trainer.callback_handler.callbacks:  # the random states of step `step`'s end, not the crash's
        if isinstance(callback, StepEndRngCallback):
            callback.restore()
    path = Path(trainer.args.output_dir) / f"checkpoint-{step}"
    try:  # the Trainer's own save, then its `on_save` event: the rollout batch, the completion mark last
        trainer._save_checkpoint(trainer.model, trial=None)
        trainer.callback_handler.on_save(trainer.args, trainer.state, trainer.control)
    except Exception as error:  # the crash may have left the trainer unable to save: say so, keep the first error
        return None, f"the emergency checkpoint failed too ({type(error).__name__}: {error})"
    return str(path), f"emergency checkpoint of the weights after step {step} in {path}"


# Frames of the Trainer's (and transformers') saving code: an OSError raised under one of them failed a save.
SAVING = ("_save_checkpoint", "save_model", "_save", "save_pretrained", "_save_optimizer_and_scheduler",
          "_save_rng_state", "save_file", "on_save")  # fmt: skip


def failed_save(error: BaseException, out: str | os.PathLike | None = None) -> bool:
    """Whether `error` is a save the disk or folder refused: raised under a `SAVING` frame, an OSError or a cause `out`
    shows (torch's zip writer raises a RuntimeError on a full disk); anything else is a crash with its traceback."""
    names = {frame.f_code.co_name for frame, _ in traceback.walk_tb(error.__traceback__)}
    if not (isinstance(error, Exception) and names & set(SAVING)):
        return False
    return isinstance(error, OSError) or (out is not None and save_failure_cause(error, Path(out))[1] is not None)


def save_failure_cause(error: BaseException, out: Path) -> tuple[str, int | None]:
    """(the cause in words, its errno or None): the OSError's, else what `out` shows, else the error itself."""
    from .checkpoints import newest_complete

    if isinstance(error, OSError) and error.errno is not None:
        return error.strerror or os.strerror(error.errno), error.errno
    if not out.is_dir():
        return os.strerror(errno.ENOENT), errno.ENOENT
    if not os.access(out, os.W_OK):
        return os.strerror(errno.EACCES), errno.EACCES
    newest, _ = newest_complete(out)
    largest = max((p.stat().st_size for p in newest.rglob("*") if p.is_file()), default=0) if newest else 0
    if shutil.disk_usage(out).free < max(2**20, largest):
        return os.strerror(errno.ENOSPC), errno.ENOSPC
    first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__, None


def save_failure_message(trainer, error: BaseException, argv: Sequence[str], final: bool = False) -> str:
    """The one line a failed save ends with: what it wrote, the newest complete checkpoint and the command to rerun."""
    from .checkpoints import checkpoint_problem, newest_complete
    from .folder import resume_command

    out, step = Path(trainer.args.output_dir), trainer.state.global_step
    if final or not (writing := out / f"checkpoint-{step}").exists():
        what = f"the model in {out}"
    else:
        state = "incomplete: a resume skips it" if checkpoint_problem(writing) is not None else "complete"
        what = f"{writing} ({state})"
    if getattr(error, "filename", None):
        what += f", at {error.filename}"
    cause, number = save_failure_cause(error, out)
    newest, _ = newest_complete(out)  # (None, []) without the folder
    complete = f"{newest.name} is the newest complete checkpoint" if newest else "no checkpoint is complete"
    fix = {errno.ENOSPC: "space is freed", errno.EDQUOT: "space is freed", errno.EACCES: "the folder is writable",
           errno.EPERM: "the folder is writable", errno.EROFS: "the folder is writable",
           errno.ENOENT: "the folder is back"}.get(number, "the cause is fixed")  # fmt: skip
    again = shlex.join(["up-trl", "train", *argv, "--overwrite_output_dir"])
    then = f"resume with: {resume_command(argv)}" if newest else f"start again: {again}"
    return f"saving failed after step {step} ({cause}) while writing {what}; {complete} in {out}; once {fix}, {then}"


def after_crash(trainer, error: BaseException, argv: Sequence[str], record: dict, final: bool = False) -> str:
    """After `trainer.train()` (`final`: the save after it) raised: emergency checkpoint, record, and the one line the
    run ends with: where it stopped, what was saved where, how to resume (`save_failure_message` for a failed save)."""
    from transformers.trainer_utils import get_last_checkpoint

    from .callbacks import MarkCompleteCallback
    from .folder import forget_run_record, resume_command, write_run_record
    from .parts import NonFiniteGuardCallback

    out, step, max_steps = trainer.args.output_dir, trainer.state.global_step, trainer.state.max_steps
    resume = resume_command(argv)
    trainer.up_stop = dict(crashed=True, reason=type(error).__name__, step=step, max_steps=max_steps, resume=resume)
    for callback in trainer.callback_handler.callbacks:
        if getattr(callback, "training_bar", None) is not None:
            callback.training_bar.close()
    save_failed = failed_save(error, out)  # then another save would fail too: none is tried
    saved = (None, "no emergency checkpoint: saving itself failed") if save_failed else save_after_crash(trainer)
    for callback in trainer.callback_handler.callbacks:  # on_train_end never comes: give back save_total_limit
        if isinstance(callback, MarkCompleteCallback):
            callback.restore(trainer.args)
    if trainer.is_world_process_zero() and step == 0:  # nothing trained: leave no run behind to refuse a rerun
        forget_run_record(out)
    if trainer.is_world_process_zero() and step > 0:
        crash = {"global_step": step, "max_steps": max_steps, "checkpoint": saved[0], "error": repr(error)[:500]}
        with contextlib.suppress(OSError):  # the disk that failed the save may refuse the record too
            write_run_record(out, **record, status="crashed", **crash)
    if save_failed:
        return save_failure_message(trainer, error, argv, final)
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    where = f"at step {step + 1} of {max_steps}" if step < max_steps else f"after step {step} of {max_steps}"
    line = f"crashed {where} ({type(error).__name__}: {first[:200]}); {saved[1]}"
    if (Path(out) / "metrics.jsonl").exists():
        line += f"; metrics in {Path(out) / 'metrics.jsonl'}"
    if skipped := sum(c.skipped for c in trainer.callback_handler.callbacks if isinstance(c, NonFiniteGuardCallback)):
        line += f"; {skipped} step(s) were skipped as non-finite before it: lower --learning_rate"
    if saved[0] is not None or (os.path.isdir(out) and get_last_checkpoint(out) is not None):
        line += f". Resume with: {resume}"
    return line


def stop_reason(callbacks: Sequence[Any]) -> str | None:
    """Why training stopped before max_steps: the signal that asked, or the non-finite guard; None if neither."""
    for callback in callbacks:
        if sig := getattr(callback, "stopped_by", None) or getattr(callback, "stop_requested", None):
            return signal.Signals(sig).name
        consecutive, limit = getattr(callback, "consecutive", 0), getattr(callback, "max_consecutive", math.inf)
        if consecutive >= limit:
            return f"{consecutive} non-finite steps in a row"
        fired = getattr(getattr(callback, "rule", None), "fired", None)  # the collapse warning, when told to stop
        if fired and getattr(callback, "stop_on_collapse", False):
            return f"the collapse warning ({fired[1]} at step {fired[0]})"
    return None
