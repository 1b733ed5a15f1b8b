"""The main job's callbacks: metrics.jsonl, the run record, a graceful stop, the random states of a step's end, signs
of life (the first step, an ETA that leaves it out), and each checkpoint marked complete, old ones deleted only after
(`MarkCompleteCallback`). The opt-in parts' callbacks are `run.parts`'."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import torch
from accelerate import PartialState
from tqdm.auto import tqdm
from transformers import TrainerCallback
from transformers.trainer_callback import ProgressCallback

from ..models.source import checkpoints_in
from .card import read_metrics
from .checkpoints import checkpoint_problem, mark_complete, mark_name, run_settings, saved_checkpoint
from .folder import refresh_run_record, write_run_record


class JsonlMetricsCallback(TrainerCallback):
    """Appends every log, with `step`, to `metrics.jsonl` on the main process (non-finite numbers: null)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_train_begin(self, args, state, control, **kwargs):
        """Keep only the records up to the step training starts from (none on a fresh run; a resume's before it)."""
        if not state.is_world_process_zero or not self.path.exists():
            return
        kept = [r for r in read_metrics(self.path) if isinstance(r, dict) and isinstance(r.get("step"), int | float)]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in kept if r["step"] <= state.global_step))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"step": state.global_step, "time": round(time.time(), 3)}
        record |= {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in logs.items()}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


class RunRecordCallback(TrainerCallback):
    """Writes the run record (`run.folder`) when training begins (claiming what it may write) and at each save."""

    def __init__(self, fields: dict):
        self.fields = fields

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            write_run_record(args.output_dir, running=True, **self.fields, status="running")

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            refresh_run_record(args.output_dir)


def max_over_processes(value: int) -> int:
    """The largest `value` of the run's processes (a collective: every process calls it); `value` alone."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return value
    device = "cpu" if dist.get_backend() == "gloo" else PartialState().device  # NCCL's: the process's GPU
    found = torch.tensor([value], device=device)
    dist.all_reduce(found, op=dist.ReduceOp.MAX)
    return int(found.item())


class GracefulStopCallback(TrainerCallback):
    """The first SIGTERM or Ctrl-C saves a checkpoint after the current step and stops; a second stops at once."""

    def __init__(self, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)):
        self.stop_requested: int | None = None  # the signal this process got
        self.stopped_by: int | None = None  # the signal that stopped the run, this process's or another's
        self._previous = {}
        for sig in signals:
            with contextlib.suppress(ValueError):  # not the main thread (a notebook worker, a test thread): no hook
                self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame):
        if self.stop_requested is not None:  # second signal: the default behaviour
            self.restore()
            signal.raise_signal(signum)
            return
        self.stop_requested = signum
        what = "saving a checkpoint after this step, then stopping (send it again to stop now)"
        print(f"\nup-trl: {signal.Signals(signum).name} received: {what}.", flush=True)

    def on_step_end(self, args, state, control, **kwargs):
        signum = self.stop_requested or 0
        if getattr(args, "world_size", 1) > 1:  # one decision: a signal may land between two processes' step ends,
            signum = max_over_processes(signum)  # and one that saves while another trains on waits for ever
        if signum:
            self.stopped_by = signum
            control.should_save = True
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        self.restore()

    def restore(self):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


class StepEndRngCallback(TrainerCallback):
    """The random states of the last step's end, for the emergency checkpoint (a crash mid-step has drawn more)."""

    states: dict | None = None

    def on_step_end(self, args, state, control, **kwargs):
        self.states = {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            self.states["cuda"] = torch.cuda.get_rng_state_all()

    def restore(self) -> None:
        """Put the states of the last step's end back (none before a step has ended)."""
        if self.states is None:
            return
        random.setstate(self.states["python"])
        np.random.set_state(self.states["numpy"])
        torch.set_rng_state(self.states["cpu"])
        if "cuda" in self.states:
            torch.cuda.set_rng_state_all(self.states["cuda"])


class SteadyEtaBar(tqdm):
    """A tqdm bar whose rate and ETA leave out the first update (warm-up and the first rollout batch)."""

    first: tuple[float, float] | None = None  # (n, time) after the first update

    def update(self, n: float = 1):
        shown = super().update(n)
        if self.first is None:
            self.first = (self.n, self._time())
        return shown

    @property
    def format_dict(self):
        d = super().format_dict
        n1, t1 = self.first or (self.n, math.inf)
        d["rate"] = (self.n - n1) / (self._time() - t1) if self.n > n1 and self._time() > t1 else None
        if d["rate"] is None:
            d["initial"] = self.n  # tqdm's fallback rate (n - initial) / elapsed would count the first step: none
        return d


class SteadyEtaProgressCallback(ProgressCallback):
    """transformers' `ProgressCallback`, with an ETA that leaves out the first step (`SteadyEtaBar`)."""

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:  # the parent's, with our bar
            self.training_bar = SteadyEtaBar(total=state.max_steps, dynamic_ncols=True, smoothing=0)
        self.current_step = 0


class FirstRolloutProgressCallback(TrainerCallback):
    """Says, on the main process of a fresh run, what the slow first step is busy with and how long it took."""

    start: float | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        size = getattr(args, "generation_batch_size", None)  # async GRPO has none: a vLLM server generates
        if size is not None and state.global_step == 0 and state.is_world_process_zero and self.start is None:
            tqdm.write(
                f"up-trl: generating the first rollout batch: {size} completions of up to "
                f"{args.max_completion_length} tokens (the first step also warms up, so it is the slowest)"
            )
            self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self.start is not None and state.global_step == 1:
            tqdm.write(f"up-trl: first step done in {time.perf_counter() - self.start:.1f} s")


def rotate_complete(
    output_dir: str | os.PathLike, limit: int | None, best: str | None = None, saved: str | os.PathLike | None = None
) -> list[Path]:
    """Delete old checkpoints as transformers' `rotate_checkpoints` does (never the best nor `saved`), counting from
    the newest complete one (anything newer left alone, incomplete ones first); returns those deleted."""
    checkpoints = checkpoints_in(output_dir) if Path(output_dir).is_dir() else []
    if not limit or limit <= 0 or len(checkpoints) <= limit:
        return []
    if not (complete := [c for c in checkpoints if checkpoint_problem(c) is None]):
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
        if (folder := saved_checkpoint(args, state)) is None:  # with several processes, never: each marks and waits
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
