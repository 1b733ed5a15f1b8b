"""Checkpoints that survive a kill: each one is marked complete last, and resume takes the newest complete one.

A checkpoint is written piece by piece (the Trainer's `_save_checkpoint`: weights, optimizer, scheduler, RNG
states, `trainer_state.json`; a UP trainer adds the rollout batch). A kill (SIGKILL, a lost node, a full disk) in
the middle leaves a folder without some of them, or with one cut short; the HF Trainer would still take it as the
latest and crash on resume. So:

- `MarkCompleteCallback.on_save` (the Trainer's public hook, called after the whole save) writes
  `up_trl_checkpoint.json` last, atomically (a temporary file renamed): every file of the checkpoint with its size,
  and the run's settings (what a resume compares against, `resume_differences`). The emergency checkpoint after a
  crash is marked the same way (`run.folder.save_after_crash`).
- `checkpoint_problem` says why a folder is not a complete checkpoint: no mark while its run marks them, a file
  the mark lists missing or of another size. A folder without a mark from a run that marks none (written by a
  plain Trainer or an older up-trl) is judged by its pieces: `trainer_state.json` must parse, the weights must be
  there, and every `.safetensors`, `.pt`, `.pth` and `.bin` file must be whole (its header's sizes, or its zip
  directory).
- `newest_complete` is what `--resume_from_checkpoint true` resumes: the newest complete `checkpoint-<step>`, and
  the incomplete ones it skipped, each with why (`run.folder.resolve_resume` says them in one line).
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..data.model_source import checkpoints_in

COMPLETE_MARK = "up_trl_checkpoint.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "adapter_model.safetensors")


def run_settings(args) -> dict[str, Any]:
    """The settings a checkpoint records: the config's fields (JSON-able) and the number of processes."""
    settings = json.loads(json.dumps(args.to_dict(), default=str))
    settings["world_size"] = getattr(args, "world_size", 1)
    return settings


def mark_complete(folder: str | os.PathLike, settings: dict[str, Any] | None = None) -> Path:
    """Write `folder`'s completion mark: its files and sizes, and `settings`; written under a temporary name and
    renamed, so that a kill leaves either no mark or a whole one."""
    folder = Path(folder)
    files = {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(COMPLETE_MARK)
    }
    mark, temporary = folder / COMPLETE_MARK, folder / f"{COMPLETE_MARK}.tmp"
    with open(temporary, "w") as f:
        json.dump({"complete": True, "files": files, "settings": settings or {}}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, mark)
    return mark


def read_mark(folder: str | os.PathLike) -> dict | None:
    """The completion mark of `folder`, or None (none, or not one a run wrote)."""
    try:
        mark = json.loads((Path(folder) / COMPLETE_MARK).read_text())
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) and mark.get("complete") is True else None


def _whole_safetensors(path: Path) -> bool:
    """Whether a .safetensors file is as long as its header says (a cut-off write is shorter)."""
    try:
        with open(path, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
        return path.stat().st_size == 8 + length + end
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return False


def _broken_piece(folder: Path) -> str | None:
    """What is missing or cut short in a checkpoint that carries no mark, judged by its pieces; None when whole."""
    state = folder / "trainer_state.json"
    if not state.is_file():
        return "no trainer_state.json"
    try:
        json.loads(state.read_text())
    except (OSError, ValueError):
        return "trainer_state.json cut short"
    if not any((folder / name).is_file() for name in WEIGHT_FILES) and not any(folder.glob("global_step*")):
        return "no weights"
    for path in sorted(folder.iterdir()):
        if path.suffix == ".safetensors" and not _whole_safetensors(path):
            return f"{path.name} cut short"
        if path.suffix in (".pt", ".pth", ".bin") and not zipfile.is_zipfile(path):
            return f"{path.name} cut short"
    return None


def checkpoint_problem(folder: str | os.PathLike, marks_expected: bool = True) -> str | None:
    """Why `folder` is not a complete checkpoint, in a few words, or None when it is. `marks_expected`: the run that
    wrote it marks its checkpoints (another checkpoint beside it has a mark), so a missing mark means the save was
    interrupted."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return "empty"
    mark = read_mark(folder)
    if mark is None:
        if marks_expected:
            broken = _broken_piece(folder)
            return f"its save did not finish: {broken or 'no completion mark'}"
        return _broken_piece(folder)
    for name, size in mark.get("files", {}).items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size} bytes, not the {size} it was saved with"
    return None


def newest_complete(output_dir: str | os.PathLike) -> tuple[Path | None, list[tuple[Path, str]]]:
    """(the newest complete `checkpoint-<step>` in `output_dir` or None, the newer incomplete ones with why)."""
    checkpoints = checkpoints_in(output_dir) if Path(output_dir).is_dir() else []
    marks_expected = any(read_mark(c) is not None for c in checkpoints)
    skipped = []
    for checkpoint in reversed(checkpoints):
        problem = checkpoint_problem(checkpoint, marks_expected)
        if problem is None:
            return checkpoint, skipped
        skipped.append((checkpoint, problem))
    return None, skipped


def describe_skipped(skipped: list[tuple[Path, str]]) -> str:
    """'checkpoint-6 (empty), checkpoint-5 (its save did not finish: no trainer_state.json)'."""
    return ", ".join(f"{path.name} ({why})" for path, why in skipped)


class MarkCompleteCallback(TrainerCallback):
    """Marks each checkpoint complete once the Trainer has saved all of it (`on_save` comes after the whole
    `_save_checkpoint`, a UP trainer's rollout batch included); the main process writes the mark."""

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                from ..file_modes import usual_file_modes

                usual_file_modes(folder)  # transformers writes model.safetensors 0600
                mark_complete(folder, run_settings(args))
        return control


# Settings a resumed run cannot change while the checkpoint holds a rollout batch: the batch has their shape.
ROLLOUT_SHAPE = ("per_device_train_batch_size", "num_generations", "steps_per_generation", "generation_batch_size",
                 "gradient_accumulation_steps", "num_iterations", "world_size")  # fmt: skip
# Settings that name where this run is, not how it trains.
NOT_COMPARED = ("output_dir", "logging_dir", "resume_from_checkpoint", "overwrite_output_dir", "run_name")


def resume_differences(checkpoint: str | os.PathLike, settings: dict[str, Any]) -> tuple[list[str], str | None]:
    """(one line per setting that differs from the run that saved `checkpoint`, or a refusal when one of them is
    the shape of the rollout batch the checkpoint holds, else None). Nothing when the checkpoint carries no mark."""
    mark = read_mark(checkpoint)
    saved = (mark or {}).get("settings") or {}
    name = Path(checkpoint).name
    changed = [key for key in settings if key in saved and key not in NOT_COMPARED and saved[key] != settings[key]]
    holds_batch = any(Path(checkpoint).glob("rollout_buffer_rank*.pt"))
    for key in changed:
        if key in ROLLOUT_SHAPE and holds_batch:
            return [], (
                f"--resume_from_checkpoint {checkpoint}: {key} is {settings[key]} here but {saved[key]} in the run "
                f"that saved {name}, whose buffered rollout batch has that shape: set {key} back to {saved[key]}, "
                "or start afresh in another --output_dir."
            )
    notes = [f"resuming {name} with {key} {settings[key]} (the run that saved it had {saved[key]})" for key in changed]
    return notes, None
