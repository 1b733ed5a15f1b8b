"""Trainer callbacks for the main job: metrics as JSON lines, the run record, a graceful stop on SIGTERM / Ctrl-C,
the non-finite step guard, the saved weights' file mode, and signs of life (the first rollout batch's progress, an
ETA from whole rollout cycles)."""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm
from transformers import TrainerCallback
from transformers.generation.streamers import BaseStreamer
from transformers.trainer_callback import ProgressCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import logging

from ..file_modes import usual_file_modes

logger = logging.get_logger(__name__)


class JsonlMetricsCallback(TrainerCallback):
    """Appends every log (one JSON object a line, with `step`) to `<output_dir>/metrics.jsonl` on the main process.

    Non-finite numbers are written as null, so the file stays valid JSON for every reader.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_train_begin(self, args, state, control, **kwargs):
        """Keep only the records up to the step training starts from: none on a fresh run (a previous run's file in
        the same folder would otherwise be mixed into this one), those before the checkpoint on a resume."""
        if not state.is_world_process_zero or not self.path.exists():
            return
        kept = [line for line in self.path.read_text().splitlines() if _record_step(line) <= state.global_step]
        self.path.write_text("".join(line + "\n" for line in kept))

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


def _record_step(line: str) -> float:
    """The `step` of one metrics.jsonl line; a line that is not a record counts as after every step."""
    try:
        return float(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return math.inf


class RunRecordCallback(TrainerCallback):
    """Keeps the run record (`up_trl_run.json`, `run.folder.write_run_record`) on the main process: written when
    training begins (`fields`, status "running", and the names the run may write, claimed before it writes them),
    rewritten at each save with the files written so far. `up-trl train` writes the last one when the run ends."""

    def __init__(self, fields: dict):
        self.fields = fields

    def on_train_begin(self, args, state, control, **kwargs):
        from .folder import write_run_record

        if state.is_world_process_zero:
            write_run_record(args.output_dir, running=True, **self.fields, status="running")

    def on_save(self, args, state, control, **kwargs):
        from .folder import refresh_run_record

        if state.is_world_process_zero:
            refresh_run_record(args.output_dir)


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


class StepEndRngCallback(TrainerCallback):
    """Keeps the random states (Python, NumPy, torch CPU and CUDA) as they were at the end of the last optimizer
    step: what a checkpoint saved at that step would store. A crash mid-step has drawn more since (the next step's
    sampling), so the emergency checkpoint (`run.ending.save_after_crash`) puts these back first, and a resume then
    draws what the uninterrupted run would have drawn."""

    states: dict | None = None

    def on_step_end(self, args, state, control, **kwargs):
        import random

        import numpy as np

        self.states = {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            self.states["cuda"] = torch.cuda.get_rng_state_all()

    def restore(self) -> bool:
        """Put the states of the last step's end back; False when no step has ended."""
        import random

        import numpy as np

        if self.states is None:
            return False
        random.setstate(self.states["python"])
        np.random.set_state(self.states["numpy"])
        torch.set_rng_state(self.states["cpu"])
        if "cuda" in self.states:
            torch.cuda.set_rng_state_all(self.states["cuda"])
        return True


class NonFiniteGuardCallback(TrainerCallback):
    """Skips an optimizer step whose gradients are not finite (NaN or inf loss, or an overflowing gradient norm)
    and counts it; after `max_consecutive` skips in a row, saves a checkpoint and stops with a clear message.

    The skip is exact: every `.grad` is dropped before `optimizer.step()`, and torch optimizers leave parameters
    without a gradient untouched (no momentum or weight-decay drift). The parameters stay those of the last good
    step. Under DeepSpeed the engine owns the step, so this guard stands aside there.

    `record(count)`, when given, is called with the count so far at each step that logs (after the Trainer decided
    to log, before it does): `parts.nonfinite_guard` appends it to the trainer's `_metrics`, so that the log the parent
    writes carries `up/nonfinite_skipped_steps`.
    """

    def __init__(self, max_consecutive: int = 10, record=None):
        self.max_consecutive = max_consecutive
        self.record = record
        self.skipped = 0
        self.consecutive = 0

    def on_step_end(self, args, state, control, **kwargs):
        if self.record is not None and control.should_log:
            self.record(self.skipped)
        return control

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


class UsualFileModesCallback(TrainerCallback):
    """Each checkpoint's weights get the usual file mode (`file_modes.usual_file_modes`: transformers writes
    `model.safetensors` 0600), once the Trainer has written it (`on_save`), on the process that saved them."""

    def on_save(self, args, state, control, **kwargs):
        if args.should_save:
            checkpoint = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            if checkpoint.is_dir():
                usual_file_modes(checkpoint)
        return control


def rollout_cycle(
    steps_per_generation: int | None = 1, num_iterations: int = 1, gradient_accumulation_steps: int = 1
) -> int:
    """Optimizer steps after which the pattern of generating and reusing steps repeats.

    A rollout batch feeds steps_per_generation * num_iterations micro-steps and an optimizer step takes
    gradient_accumulation_steps of them, so the pattern repeats every
    lcm(spg * ni, ga) / ga = spg * ni / gcd(spg * ni, ga) optimizer steps (one rollout batch when ga divides it).
    The offline default (spg=2, ni=1, ga=1): 2, the first of which generates.

    >>> rollout_cycle(2, 1, 1), rollout_cycle(4, 1, 4), rollout_cycle(2, 2, 1), rollout_cycle(3, 1, 2)
    (2, 1, 4, 3)
    """
    micro_steps = (steps_per_generation or gradient_accumulation_steps) * num_iterations
    return micro_steps // math.gcd(micro_steps, gradient_accumulation_steps)


class SteadyEtaBar(tqdm):
    """A tqdm bar whose rate and ETA come from whole rollout cycles, leaving out the first.

    Steps are not alike: the first of each rollout cycle (`rollout_cycle`) generates (25 s on the offline default) and
    the others reuse its batch (10 s), and the first cycle also holds one-time work (warm-up, a cold machine). So the
    bar marks the end of every cycle (a step n with n % cycle == 0) and times whole cycles between the first mark
    and the latest: rate = (n_last - n_first) / (t_last - t_first), ETA = (total - n) / rate; "?" until a second
    mark. With cycle=1 this is every step after the first. Marks are taken in `update`, before the bar redraws.
    """

    cycle: int = 1
    marks: tuple[tuple[int, float], ...] = ()  # (n, time) at the first and the latest cycle end

    def update(self, n: float = 1):
        if (self.n + n) % self.cycle == 0:
            mark = (self.n + n, self._time())
            self.marks = (self.marks[0], mark) if self.marks else (mark,)
        return super().update(n)

    @property
    def format_dict(self):
        d = super().format_dict
        d["rate"] = None
        if len(self.marks) == 2:
            (n1, t1), (n2, t2) = self.marks
            d["rate"] = (n2 - n1) / (t2 - t1) if n2 > n1 and t2 > t1 else None
        if d["rate"] is None:
            d["initial"] = self.n  # tqdm's fallback rate (n - initial) / elapsed would count the first cycle: none
        return d


class SteadyEtaProgressCallback(ProgressCallback):
    """transformers' progress bar with an ETA from whole rollout cycles after the first (see `SteadyEtaBar`).

    Replace the default one with `trainer.remove_callback(ProgressCallback); trainer.add_callback(...)`.
    """

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:  # the parent's, with our bar
            self.training_bar = SteadyEtaBar(total=state.max_steps, dynamic_ncols=True, smoothing=0)
            self.training_bar.cycle = rollout_cycle(
                getattr(args, "steps_per_generation", None),
                getattr(args, "num_iterations", 1),
                args.gradient_accumulation_steps,
            )
        self.current_step = 0


class RolloutProgress(BaseStreamer):
    """A generation streamer that prints, every `interval` seconds, how far a rollout batch has got.

    `generate` calls `put` once with the prompts, then once per decoding step with one new token per completion.
    """

    def __init__(self, num_completions: int, max_new_tokens: int | None, interval: float = 10.0, write=tqdm.write):
        self.num_completions, self.max_new_tokens, self.interval, self.write = (
            num_completions,
            max_new_tokens,
            interval,
            write,
        )
        self.tokens = -1  # the first put is the prompts
        self.start = self.last = time.perf_counter()

    def put(self, value) -> None:
        self.tokens += 1
        now = time.perf_counter()
        if self.tokens > 0 and now - self.last >= self.interval:
            self.last = now
            rate = self.tokens * self.num_completions / (now - self.start)
            of = f" of up to {self.max_new_tokens}" if self.max_new_tokens else ""
            self.write(
                f"up-trl: first rollout batch: token {self.tokens}{of} for {self.num_completions} completions "
                f"({rate:.0f} tokens/s)"
            )

    def end(self) -> None:
        pass


class FirstRolloutProgressCallback(TrainerCallback):
    """Says what the first optimizer step is busy with: generating the first rollout batch (with transformers'
    `generate`; vLLM prints its own progress), with tokens/s every `interval` seconds, and how long it took."""

    def __init__(self, interval: float = 10.0):
        self.interval = interval
        self._model = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if not state.is_world_process_zero or model is None or getattr(args, "use_vllm", False):
            return
        self._model, callback = model, self
        original = model.generate

        def generate(*gen_args, **gen_kwargs):
            callback.restore()  # only the first rollout batch is reported
            if gen_kwargs.get("streamer") is not None:
                return original(*gen_args, **gen_kwargs)
            input_ids = gen_kwargs.get("input_ids", gen_args[0] if gen_args else None)
            num = int(input_ids.shape[0]) if input_ids is not None else 0
            config = gen_kwargs.get("generation_config") or getattr(model, "generation_config", None)
            max_new = getattr(config, "max_new_tokens", None)
            tqdm.write(
                f"up-trl: generating the first rollout batch: {num} completions of up to {max_new} tokens "
                "(this process's share; the first step also warms up, so it is the slowest)"
            )
            start = time.perf_counter()
            streamer = RolloutProgress(num, max_new, interval=callback.interval)
            out = original(*gen_args, streamer=streamer, **gen_kwargs)
            seconds = time.perf_counter() - start
            tqdm.write(
                f"up-trl: first rollout batch done in {seconds:.1f} s "
                f"({streamer.tokens * num / max(seconds, 1e-9):.0f} tokens/s); now scoring and updating"
            )
            return out

        model.generate = generate

    def restore(self) -> None:
        if self._model is not None and "generate" in vars(self._model):
            del self._model.generate  # back to the class's method
        self._model = None

    def on_train_end(self, args, state, control, **kwargs):
        self.restore()
