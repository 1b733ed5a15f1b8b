"""Checkpoints that survive a kill: each is marked complete last (the HF Trainer would resume a half-saved one), and
resume takes the newest complete one. Rules and tests: docs/reliability.md, "Checkpoints that survive a kill".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback, TrainerState

from ..data.model_source import checkpoints_in

COMPLETE_MARK = "up_trl_checkpoint.json"
RANK_MARK = "up_trl_checkpoint-rank{rank}.json"  # the mark of process N > 0, with several processes
MARK_PREFIX = "up_trl_checkpoint"
# The files a process writes for itself, its number in the name (RNG state, rollout batch, ZeRO and FSDP shards).
RANK_FILE = re.compile(r"(?:^rng_state_|^rollout_buffer_rank|zero_pp_rank_|^__)(\d+)[._]")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "adapter_model.safetensors")


def run_settings(args) -> dict[str, Any]:
    """The settings a checkpoint records: the config's fields (JSON-able) and the number of processes."""
    settings = json.loads(json.dumps(args.to_dict(), default=str))
    settings["world_size"] = getattr(args, "world_size", 1)
    return settings


def file_rank(name: str, world_size: int = 1) -> int:
    """The process that writes the checkpoint file `name` (0 unless its name says another one).

    >>> file_rank("rng_state_3.pth", 4), file_rank("rollout_buffer_rank1.pt", 2), file_rank("optimizer.pt", 2)
    (3, 1, 0)
    """
    found = RANK_FILE.search(Path(name).name)
    rank = int(found.group(1)) if found else 0
    return rank if rank < world_size else 0


def mark_name(rank: int = 0) -> str:
    """The completion mark of process `rank`: `up_trl_checkpoint.json` for 0 (the only one with one process)."""
    return COMPLETE_MARK if rank == 0 else RANK_MARK.format(rank=rank)


def mark_complete(
    folder: str | os.PathLike, settings: dict[str, Any] | None = None, rank: int = 0, world_size: int = 1
) -> Path:
    """Write process `rank`'s mark in `folder` (its files' sizes) renamed in: a kill leaves none or a whole one."""
    folder = Path(folder)
    files = {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(MARK_PREFIX) and file_rank(p.name, world_size) == rank
    }
    mark, temporary = folder / mark_name(rank), folder / f"{mark_name(rank)}.tmp"
    record = {"complete": True, "files": files}
    record |= {"world_size": world_size, "settings": settings or {}} if rank == 0 else {"rank": rank}
    with open(temporary, "w") as f:
        json.dump(record, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    return temporary.replace(mark)


def read_json(path: str | os.PathLike) -> dict | None:
    """The JSON object in the file `path`, or None (no such file, not readable, or not a JSON object)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_mark(folder: str | os.PathLike, rank: int = 0) -> dict | None:
    """Process `rank`'s completion mark in `folder`, or None (none, or not one a run wrote)."""
    mark = read_json(Path(folder) / mark_name(rank)) or {}
    return mark if mark.get("complete") is True else None


def _broken_piece(folder: Path) -> str | None:
    """What is missing or cut short in a checkpoint that carries no mark, judged by its pieces; None when whole."""
    from safetensors import SafetensorError, safe_open

    state = folder / "trainer_state.json"
    if not state.is_file():
        return "no trainer_state.json"
    try:
        TrainerState.load_from_json(str(state))
    except (OSError, ValueError, TypeError):
        return "trainer_state.json cut short"
    if not any((folder / name).is_file() for name in WEIGHT_FILES) and not any(folder.glob("global_step*")):
        return "no weights"
    for path in sorted(folder.iterdir()):
        if path.suffix == ".safetensors":
            try:  # safetensors' `safe_open` refuses a file cut short
                with safe_open(path, "numpy"):
                    pass
            except (OSError, SafetensorError):
                return f"{path.name} cut short"
        if path.suffix in (".pt", ".pth", ".bin") and not zipfile.is_zipfile(path):
            return f"{path.name} cut short"
    return None


def checkpoint_problem(folder: str | os.PathLike, marks_expected: bool = True) -> str | None:
    """Why `folder` is not a complete checkpoint, or None (`marks_expected`: a missing mark is an interrupted save)."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return "empty"
    mark = read_mark(folder)
    if mark is None:
        broken = _broken_piece(folder)
        return f"its save did not finish: {broken or 'no completion mark'}" if marks_expected else broken
    world_size = mark.get("world_size", 1)
    marks = [mark]
    for rank in range(1, world_size if isinstance(world_size, int) else 1):
        marks.append(read_mark(folder, rank))
        if marks[-1] is None:
            return f"the save of process {rank} of {world_size} did not finish: no {mark_name(rank)}"
    for name, size in (item for m in marks for item in m.get("files", {}).items()):
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


def rotate_complete(
    output_dir: str | os.PathLike, limit: int | None, best: str | None = None, saved: str | os.PathLike | None = None
) -> list[Path]:
    """Delete old checkpoints as transformers' `rotate_checkpoints` does (never the best nor `saved`), counting from
    the newest complete one (anything newer left alone, incomplete ones first); returns those deleted."""
    checkpoints = checkpoints_in(output_dir) if Path(output_dir).is_dir() else []
    if not limit or limit <= 0 or len(checkpoints) <= limit:
        return []
    complete = [c for c in checkpoints if checkpoint_problem(c) is None]
    if not complete:
        return []
    counted = checkpoints[: checkpoints.index(complete[-1]) + 1]
    kept = {Path(p).resolve() for p in (best, saved) if p is not None}
    protected = {complete[-1]} | {c for c in counted if c.resolve() in kept}
    keep = max(limit, len(protected))
    deleted = []
    for checkpoint in sorted(counted, key=lambda c: c in complete):  # incomplete ones first, oldest first
        if len(counted) - len(deleted) <= keep:
            break
        if checkpoint not in protected:
            shutil.rmtree(checkpoint, ignore_errors=True)
            deleted.append(checkpoint)
    return deleted


class MarkCompleteCallback(TrainerCallback):
    """Marks each checkpoint complete on `on_save`, each process its own files; old checkpoints go only after the mark
    (`rotate_complete`): the Trainer sees `save_total_limit=None` until `on_train_end` (`restore`)."""

    save_total_limit: int | None = None  # the run's, while this callback holds it

    def on_train_begin(self, args, state, control, **kwargs):
        if args.save_total_limit is not None:
            self.save_total_limit, args.save_total_limit = args.save_total_limit, None

    def on_step_end(self, args, state, control, **kwargs):
        """Before a save into a folder a killed save left: its old mark goes first, so it never reads complete."""
        if control.should_save:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            (folder / mark_name(getattr(args, "process_index", 0))).unlink(missing_ok=True)

    def restore(self, args) -> None:
        """Give the Trainer its `save_total_limit` back (the run ended, or crashed)."""
        if self.save_total_limit is not None:
            args.save_total_limit, self.save_total_limit = self.save_total_limit, None

    def on_save(self, args, state, control, **kwargs):
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if not folder.is_dir():
            return
        rank, world_size = getattr(args, "process_index", 0), getattr(args, "world_size", 1)
        settings = run_settings(args) if state.is_world_process_zero else None
        if state.is_world_process_zero and self.save_total_limit is not None:
            settings["save_total_limit"] = args.save_total_limit = self.save_total_limit
            try:  # the checkpoint's `training_args.bin` with the run's limit, not the None lent the Trainer
                if (folder / "training_args.bin").is_file():
                    torch.save(args, folder / "training_args.bin")
            finally:
                args.save_total_limit = None
        mark_complete(folder, settings, rank=rank, world_size=world_size)
        if world_size > 1 and self.save_total_limit is not None:  # every process has marked before any rotation
            from accelerate import PartialState

            PartialState().wait_for_everyone()
        if state.is_world_process_zero:  # the new checkpoint is complete (on every process): older ones may go
            best = getattr(state, "best_model_checkpoint", None)
            rotate_complete(args.output_dir, self.save_total_limit, best, saved=folder)

    def on_train_end(self, args, state, control, **kwargs):
        limit = self.save_total_limit
        self.restore(args)
        best = getattr(state, "best_model_checkpoint", None)
        if limit == 1 and best is not None and state.is_world_process_zero:  # the Trainer's rule at the end
            for checkpoint in checkpoints_in(args.output_dir):
                if checkpoint.resolve() != Path(best).resolve():
                    shutil.rmtree(checkpoint, ignore_errors=True)


# Settings a resumed run cannot change while the checkpoint holds a rollout batch: the batch has their shape.
ROLLOUT_SHAPE = ("per_device_train_batch_size", "num_generations", "steps_per_generation", "generation_batch_size",
                 "gradient_accumulation_steps", "num_iterations", "world_size")  # fmt: skip
# Settings that name where this run is, not how it trains.
NOT_COMPARED = ("output_dir", "logging_dir", "resume_from_checkpoint", "overwrite_output_dir", "run_name")
# Optimizer settings a resume applies (`resume_settings`), not under DeepSpeed, whose engine restores its own.
OPTIMIZER_SETTINGS = ("learning_rate", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon")


def resume_differences(
    checkpoint: str | os.PathLike, settings: dict[str, Any], deepspeed: bool = False
) -> tuple[list[str], str | None]:
    """(a line per setting changed since `checkpoint`, a refusal or None: its batch's shape, or DeepSpeed's)."""
    saved = (read_mark(checkpoint) or {}).get("settings") or {}
    name = Path(checkpoint).name
    changed = [key for key in settings if key in saved and key not in NOT_COMPARED and saved[key] != settings[key]]
    holds_batch = any(Path(checkpoint).glob("rollout_buffer_rank*.pt"))
    for key in changed:
        if key in ROLLOUT_SHAPE and holds_batch:
            why, way = "whose buffered rollout batch has that shape", "start afresh in another --output_dir"
        elif key in OPTIMIZER_SETTINGS and deepspeed:
            why = f"and under DeepSpeed the engine restores the optimizer as saved, so {key} {settings[key]} "
            why, way = why + "would not apply", "resume without DeepSpeed"
        else:
            continue
        return [], (
            f"--resume_from_checkpoint {checkpoint}: {key} is {settings[key]} here but {saved[key]} in the run "
            f"that saved {name}, {why}: set {key} back to {saved[key]}, or {way}."
        )
    notes = [f"resuming {name} with {key} {settings[key]} (the run that saved it had {saved[key]})" for key in changed]
    return notes, None
