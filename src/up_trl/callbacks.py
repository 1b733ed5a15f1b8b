"""Trainer callbacks for the main job: metrics as JSON lines, and a graceful stop on SIGTERM / Ctrl-C."""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path

import torch
from transformers import TrainerCallback
from transformers.utils import logging

logger = logging.get_logger(__name__)


class JsonlMetricsCallback(TrainerCallback):
    """Appends every log (one JSON object a line, with `step`) to `<output_dir>/metrics.jsonl` on the main process.

    Non-finite numbers are written as null, so the file stays valid JSON for every reader.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"step": state.global_step, "time": round(time.time(), 3)}
        for key, value in logs.items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            record[key] = value
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


class GracefulStopCallback(TrainerCallback):
    """The first SIGTERM or Ctrl-C (SIGINT) asks the Trainer to save a checkpoint at the end of the current step
    and stop; a second one stops at once. `resume_from_checkpoint=True` then continues from that checkpoint."""

    def __init__(self, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)):
        self.stop_requested: int | None = None
        self._previous = {}
        for sig in signals:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (a notebook worker, a test runner thread): nothing to hook
                pass

    def _handle(self, signum, frame):
        if self.stop_requested is not None:  # second signal: the default behaviour
            self.restore()
            signal.raise_signal(signum)
            return
        self.stop_requested = signum
        print(
            f"\nup-trl: {signal.Signals(signum).name} received: saving a checkpoint after this step, then stopping "
            "(send it again to stop now).",
            flush=True,
        )

    def on_step_end(self, args, state, control, **kwargs):
        if self.stop_requested is not None:
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        self.restore()

    def restore(self):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


class NonFiniteGuardCallback(TrainerCallback):
    """Skips an optimizer step whose gradients are not finite (NaN or inf loss, or an overflowing gradient norm)
    and counts it; after `max_consecutive` skips in a row, saves a checkpoint and stops with a clear message.

    The skip is exact: every `.grad` is dropped before `optimizer.step()`, and torch optimizers leave parameters
    without a gradient untouched (no momentum or weight-decay drift). The parameters stay those of the last good
    step. Under DeepSpeed the engine owns the step, so this guard stands aside there.
    """

    def __init__(self, max_consecutive: int = 10):
        self.max_consecutive = max_consecutive
        self.skipped = 0
        self.consecutive = 0

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if model is None:
            return control
        finite = all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
        if finite:
            self.consecutive = 0
            return control
        for p in model.parameters():
            p.grad = None
        self.skipped += 1
        self.consecutive += 1
        logger.warning(
            f"up-trl: non-finite gradient at step {state.global_step + 1}: optimizer step skipped "
            f"({self.skipped} so far, {self.consecutive} in a row)."
        )
        if self.consecutive >= self.max_consecutive:
            logger.error(
                f"up-trl: {self.consecutive} non-finite steps in a row: saving a checkpoint of the last good "
                "parameters and stopping. Lower learning_rate, check the reward for NaN, or set max_grad_norm."
            )
            control.should_save = True
            control.should_training_stop = True
        return control
