"""A run's output folder: what a previous run left there, overwriting or resuming it, how the run ended.

The rule for `up-trl train --output_dir DIR`:

- DIR holds no previous run: train into it.
- DIR holds a previous run (its model, `metrics.jsonl`, card, run record or `checkpoint-*` folders): refused in one
  line, unless `--resume_from_checkpoint true` (continue it from its latest checkpoint) or `--overwrite_output_dir`
  (remove that run's files first, checkpoints and its `eval/` included, so nothing of it stays mixed in with the
  new one; files no run writes are left alone).
- A run that stops early (Ctrl-C, SIGTERM, too many non-finite steps) says so, in its last line and its card, with
  the command that resumes it; one that crashes saves an emergency checkpoint of its weights (when they are
  finite) in the Trainer's checkpoint layout, so the same command resumes it.

`up_trl_run.json` records how the run ended and what it was trained from (`up-trl eval` scores that base model
beside it).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.model_source import checkpoints_in

RUN_RECORD = "up_trl_run.json"
# What `up-trl train` writes at the top of its output folder: transformers' `save_model` (weights, config,
# tokenizer, training arguments), our metrics, plot, card and run record, and `up-trl eval`'s default `eval/`.
RUN_FILES = ("config.json", "generation_config.json", "model.safetensors", "model.safetensors.index.json",
             "pytorch_model.bin", "pytorch_model.bin.index.json", "adapter_config.json", "adapter_model.safetensors",
             "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
             "chat_template.json", "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json",
             "training_args.bin", "trainer_state.json", "metrics.jsonl", "metrics.png", RUN_RECORD)  # fmt: skip
RUN_GLOBS = ("model-*.safetensors", "pytorch_model-*.bin")
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "adapter_model.safetensors")


def is_model_card(path: Path) -> bool:
    """Whether `path` is a model card an up-trl run wrote (front matter with `generated_from_trainer`, up-trl named),
    not some other README that happens to sit in the folder."""
    try:
        text = path.read_text(errors="replace")[:20_000]
    except OSError:
        return False
    return text.startswith("---") and "generated_from_trainer" in text and "up-trl" in text


def previous_run_files(output_dir: str | os.PathLike) -> list[Path]:
    """The files and folders a previous run left in `output_dir`, or [] when it holds none (or does not exist).

    A folder holds a run when it has `metrics.jsonl`, the run record, a `checkpoint-*` folder, saved weights or an
    up-trl model card; then every entry of `RUN_FILES`, `RUN_GLOBS`, the checkpoints, the card and `eval/` is the
    run's.
    """
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    card = folder / "README.md"
    is_card = is_model_card(card)
    markers = ("metrics.jsonl", RUN_RECORD, *WEIGHTS)
    if not (any((folder / m).exists() for m in markers) or checkpoints_in(folder) or is_card):
        return []
    found = [folder / name for name in RUN_FILES if (folder / name).exists()]
    found += [p for pattern in RUN_GLOBS for p in sorted(folder.glob(pattern))]
    found += checkpoints_in(folder) + ([card] if is_card else [])
    found += [folder / "eval"] if (folder / "eval" / "eval.json").exists() else []
    return found


def describe_run_files(files: Sequence[Path]) -> str:
    """What `previous_run_files` found, in a user's words: 'model, metrics.jsonl, model card, 2 checkpoints'."""
    names = {p.name for p in files}
    parts = ["model"] if names & {*WEIGHTS, "config.json"} or any(n.startswith("model-") for n in names) else []
    parts += [n for n in ("metrics.jsonl", "metrics.png") if n in names]
    parts += ["model card"] if "README.md" in names else []
    checkpoints = sum(n.startswith("checkpoint-") for n in names)
    parts += [f"{checkpoints} checkpoint{'s' if checkpoints > 1 else ''}"] if checkpoints else []
    parts += ["eval/"] if "eval" in names else []
    return ", ".join(parts) or "a run record"


def remove_run_files(files: Sequence[Path]) -> None:
    """Delete what `previous_run_files` found (folders with everything in them)."""
    for path in files:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def resolve_resume(value: str | None, output_dir: str | os.PathLike, notes: list[str] | None = None) -> str | None:
    """The checkpoint `--resume_from_checkpoint VALUE` means, or a ValueError saying why there is none.

    `true` (any case) is the newest complete `checkpoint-<step>` in the output folder (as the HF Trainer reads `True`,
    but skipping checkpoints whose save was interrupted: `checkpoint_complete`; one line naming those it skipped goes
    into `notes`); `false`/`none`/unset is no resume; anything else is a checkpoint folder, which must exist and be
    complete.
    """
    from .checkpoint_complete import checkpoint_problem, describe_skipped, newest_complete, read_mark

    if value is None or str(value).strip().lower() in ("", "false", "none", "no"):
        return None
    if str(value).strip().lower() in ("true", "yes", "latest", "last"):
        newest, skipped = newest_complete(output_dir)
        if newest is None and skipped:
            raise ValueError(
                f"--resume_from_checkpoint true: no complete checkpoint in {output_dir}, only incomplete ones (a save "
                f"that was interrupted): {describe_skipped(skipped)}: remove them, or drop the flag to start afresh."
            )
        if newest is None:
            raise ValueError(
                f"--resume_from_checkpoint true: no checkpoint-<step> folder in {output_dir} to resume from (a run "
                "saves them with --save_steps N, when it is stopped, or when it crashes): pass a checkpoint folder, "
                "or drop the flag to start afresh."
            )
        if skipped and notes is not None:
            notes.append(f"resuming from {newest}, the newest complete checkpoint; skipped the incomplete "
                         f"{describe_skipped(skipped)}")  # fmt: skip
        return str(newest)
    path = Path(os.path.expanduser(str(value)))
    if not path.is_dir():
        raise ValueError(
            f"--resume_from_checkpoint {value}: no such folder (pass a checkpoint-<step> folder, or true)."
        )
    if not (path / "trainer_state.json").is_file() and checkpoints_in(path):
        latest = checkpoints_in(path)
        raise ValueError(f"--resume_from_checkpoint {value} is not a checkpoint (no trainer_state.json) (its latest "
                         f"checkpoint is {latest[-1]}).")  # fmt: skip
    siblings = checkpoints_in(path.parent) if path.parent.is_dir() else []
    problem = checkpoint_problem(path, marks_expected=any(read_mark(c) is not None for c in siblings))
    if problem is not None:
        newest, _ = newest_complete(path.parent)
        hint = f": pass {newest}, the newest complete one," if newest is not None else ":"
        raise ValueError(f"--resume_from_checkpoint {value} is not a complete checkpoint ({problem}){hint} or "
                         "--resume_from_checkpoint true.")  # fmt: skip
    return str(path)


def check_output_dir(output_dir: str, *, overwrite: bool, resume: str | None, model: str | None) -> list[Path]:
    """Refuse (ValueError, one line) an output folder this run must not write into; returns the previous run's
    files to remove first (`--overwrite_output_dir`), else []."""
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--output_dir {output_dir} is a file: name a folder (it is created if missing).")
    if model is not None and Path(model).exists() and out.resolve() == Path(model).resolve():
        raise ValueError(
            f"--output_dir {output_dir} is the folder the model is loaded from: write the trained model elsewhere."
        )
    if overwrite and resume is not None:
        raise ValueError(
            "--overwrite_output_dir removes the checkpoints --resume_from_checkpoint would continue from: pass one."
        )
    files = previous_run_files(out)
    if not files or resume is not None:
        return []
    if overwrite:
        return files
    raise ValueError(
        f"--output_dir {output_dir} holds a previous run ({describe_run_files(files)}): pass --overwrite_output_dir "
        "to replace it, --resume_from_checkpoint true to continue it, or another --output_dir."
    )


def resume_command(argv: Sequence[str]) -> str:
    """The command that resumes this run: the same `up-trl train` line, with `--resume_from_checkpoint true` in place
    of any `--resume_from_checkpoint` or `--overwrite_output_dir` it had (the latter would remove the checkpoints).
    Under `accelerate launch`, run it the same way (`accelerate launch ... -m up_trl train ...`).

    >>> resume_command(["--max_steps", "12", "--overwrite_output_dir", "--resume_from_checkpoint=x"])
    'up-trl train --max_steps 12 --resume_from_checkpoint true'
    """
    kept, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        flag = arg.split("=", 1)[0]
        if flag in ("--resume_from_checkpoint", "--overwrite_output_dir"):
            nxt = argv[i + 1] if i + 1 < len(argv) else "--"
            takes_value = "=" not in arg and not nxt.startswith("--")
            if flag == "--overwrite_output_dir":
                takes_value = takes_value and nxt.lower() in ("true", "false", "yes", "no", "1", "0")
            skip = takes_value
            continue
        kept.append(arg)
    return shlex.join(["up-trl", "train", *kept, "--resume_from_checkpoint", "true"])


def write_run_record(output_dir: str | os.PathLike, **fields: Any) -> Path:
    """Write `up_trl_run.json` (how the run ended, what it trained from) in the output folder."""
    path = Path(output_dir) / RUN_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fields, indent=2) + "\n")
    return path


def read_run_record(folder: str | os.PathLike) -> dict | None:
    """The run record in `folder` (for a `checkpoint-<step>` folder: its run's), or None."""
    for candidate in run_and_parent(folder):
        try:
            return json.loads((candidate / RUN_RECORD).read_text())
        except (OSError, ValueError):
            continue
    return None


def run_and_parent(folder: str | os.PathLike) -> list[Path]:
    """`folder`, and its run's folder when `folder` is one of its `checkpoint-<step>` folders."""
    folder = Path(folder)
    return [folder, folder.parent] if folder.name.startswith("checkpoint-") else [folder]


def finite_weights(model) -> bool:
    """Whether every parameter of `model` is finite (no NaN or inf)."""
    import torch

    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def save_after_crash(trainer) -> tuple[str | None, str]:
    """After an exception in `trainer.train()`: an emergency checkpoint through the Trainer's own `_save_checkpoint`
    (weights, optimizer, scheduler, RNG and trainer state, and whatever a UP trainer adds there), so that
    `--resume_from_checkpoint true` continues from it. The random states saved are those of the last step's end
    (`callbacks.StepEndRngCallback`, when the trainer has one), as a checkpoint saved then would hold them. Returns
    (its path or None, what was saved, in words).

    Nothing is saved when no optimizer step finished, when the weights are not finite, or with several processes
    (saving needs every one of them, and the crashed one is gone).
    """
    step = trainer.state.global_step
    if step == 0:
        return None, "nothing to save: no optimizer step had finished"
    if trainer.accelerator.num_processes > 1:
        return None, f"no emergency checkpoint with {trainer.accelerator.num_processes} processes"
    if not finite_weights(trainer.model):
        what = f"the weights after step {step} are not finite (NaN or inf: lower --learning_rate)"
        return None, f"no emergency checkpoint: {what}"
    from .callbacks import StepEndRngCallback

    for callback in trainer.callback_handler.callbacks:  # the random states of step `step`'s end, not the crash's
        if isinstance(callback, StepEndRngCallback):
            callback.restore()
    from .checkpoint_complete import MarkCompleteCallback, mark_complete, run_settings

    path = Path(trainer.args.output_dir) / f"checkpoint-{step}"
    marking = [c for c in trainer.callback_handler.callbacks if isinstance(c, MarkCompleteCallback)]
    try:
        trainer._save_checkpoint(trainer.model, trial=None)
        if marking:  # last: a kill before it leaves a checkpoint resume skips; then the old ones over the limit go
            marking[0].on_save(trainer.args, trainer.state, trainer.control)
        else:
            mark_complete(path, run_settings(trainer.args))
    except Exception as error:  # the crash may have left the trainer unable to save: say so, keep the first error
        return None, f"the emergency checkpoint failed too ({type(error).__name__}: {error})"
    finally:
        for callback in marking:  # on_train_end never came: the Trainer gets its save_total_limit back
            callback.restore(trainer.args)
    return str(path), f"emergency checkpoint of the weights after step {step} in {path}"


def crash_message(trainer, error: BaseException, argv: Sequence[str], saved: tuple[str | None, str]) -> str:
    """The one line a crashed run ends with: where it stopped, what was saved where, how to resume."""
    path, what = saved
    out = trainer.args.output_dir
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    step, total = trainer.state.global_step, trainer.state.max_steps
    where = f"at step {step + 1} of {total}" if step < total else f"after step {step} of {total}"
    line = f"crashed {where} ({type(error).__name__}"
    line += f": {first[:200]}); {what}"
    if (Path(out) / "metrics.jsonl").exists():
        line += f"; metrics in {Path(out) / 'metrics.jsonl'}"
    guard = getattr(trainer, "_nonfinite_guard", None)
    if guard is not None and guard.skipped:
        line += f"; {guard.skipped} step(s) were skipped as non-finite before it: lower --learning_rate"
    if path is not None or checkpoints_in(out):
        line += f". Resume with: {resume_command(argv)}"
    return line


def after_crash(trainer, error: BaseException, argv: Sequence[str], record: dict) -> str:
    """What `up-trl train` does when `trainer.train()` raised: close the progress bar (else it prints after the last
    line), mark the run as crashed for its card (`trainer.up_stop`; TRL's `_save_checkpoint` rewrites the card),
    save the emergency checkpoint, write the run record. Returns the one line to end with (`crash_message`)."""
    step, max_steps = trainer.state.global_step, trainer.state.max_steps
    trainer.up_stop = {"crashed": True, "reason": type(error).__name__, "step": step, "max_steps": max_steps,
                       "resume": resume_command(argv)}  # fmt: skip
    for callback in trainer.callback_handler.callbacks:
        if getattr(callback, "training_bar", None) is not None:
            callback.training_bar.close()
    saved = save_after_crash(trainer)
    for callback in trainer.callback_handler.callbacks:  # on_train_end never comes: give back save_total_limit
        if hasattr(callback, "restore") and hasattr(callback, "save_total_limit"):
            callback.restore(trainer.args)
    if trainer.is_world_process_zero() and step > 0:  # nothing trained: leave no run behind to refuse a rerun
        write_run_record(trainer.args.output_dir, **record, status="crashed", global_step=step, max_steps=max_steps,
                         checkpoint=saved[0], error=repr(error)[:500])  # fmt: skip
    return crash_message(trainer, error, argv, saved)


def stop_reason(callbacks: Sequence[Any]) -> str | None:
    """Why training stopped before max_steps: the signal that asked, or the non-finite guard; None if neither."""
    import signal

    for callback in callbacks:
        sig = getattr(callback, "stop_requested", None)
        if sig is not None:
            return signal.Signals(sig).name
        consecutive, limit = getattr(callback, "consecutive", 0), getattr(callback, "max_consecutive", math.inf)
        if consecutive >= limit:
            return f"{consecutive} non-finite steps in a row"
        fired = getattr(getattr(callback, "rule", None), "fired", None)  # the collapse warning, when told to stop
        if fired and getattr(callback, "stop_on_collapse", False):
            return f"the collapse warning ({fired[1]} at step {fired[0]})"
    return None
