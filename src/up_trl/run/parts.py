"""The opt-in parts: what up-trl offers beyond UP, each filling a TRL or transformers gap, off by default in the UP
trainers, on TRL's own trainers too (but the card and the indicators). `up-trl train` attaches all (`with_parts`,
`attach_parts`; the CPU saving only with `--share_prompt_prefix true`).

Mixins (a callback cannot see the checkpoint folder a resume loads), one line each:

    class MyTrainer(RolloutCheckpointMixin, ResumeSettingsMixin, UPGRPOTrainer): pass

- `RolloutCheckpointMixin`: TRL's buffered rollout batch in every checkpoint, so that a resume inside a rollout batch
  trains as the uninterrupted run (GRPOTrainer and RLOOTrainer, not async GRPO);
- `ResumeSettingsMixin`: a resumed run trains with its own optimizer settings, not the checkpoint's;
- `RunCardMixin`: TRL's model card plus the run's (`card.write_model_card`), on `create_model_card` and `push_to_hub`
  ('run card' signature check and behaviour in tests/trl_pins.json);
- `LeadingIndicatorsMixin`: a UP trainer also logs the leading indicators of a collapse (`up/logp_adv_cov`, the
  token counts of each sign, `up/negative_clipped_log_ratio_mean`: `objective.indicators`, docs/collapse.md);
- `SharedPromptTrainerMixin`: the CPU saving, not UP: each distinct prompt computed once in the scoring forwards
  (`speedups.shared_prompt`; equal to TRL's computation up to float rounding; `--share_prompt_prefix true`).

Callbacks and wrappers, after the trainer is built:

    trainer.add_callback(nonfinite_guard(trainer))      # skip and count optimizer steps with NaN/inf gradients
    trainer.add_callback(UsualFileModesCallback())      # saved weights 0644, as every other file (transformers: 0600)
    record_unscorable(trainer)                          # log up/unscorable_frac: completions no reward could score

`up/unscorable_frac` is the share of completions no reward function gave a finite value (none when a reward is a
model), from wrappers that return the rewards unchanged, logged through TRL's `log_metric` keyword (the in-process
async worker reads `ScorableRecorder.take`; TRL's vLLM worker scores in another process and logs none).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import logging
from trl.trainer.utils import get_callable_name, is_async_callable

from ..file_modes import usual_file_modes
from ..objective.indicators import indicator_rates, leading_indicator_sums
from ..speedups.shared_prompt import SharedPromptTrainerMixin
from .card import write_model_card
from .checkpoints import ResumeSettingsMixin, RolloutCheckpointMixin, is_synchronous

__all__ = ["LeadingIndicatorsMixin", "NonFiniteGuardCallback", "ResumeSettingsMixin", "RolloutCheckpointMixin",
           "RunCardMixin", "SharedPromptTrainerMixin", "UsualFileModesCallback", "attach_parts", "nonfinite_guard",
           "record_unscorable", "with_parts"]  # fmt: skip


class RunCardMixin:
    """For `class X(RunCardMixin, UPGRPOTrainer)` (a UP trainer): `create_model_card` (and so `push_to_hub`) writes
    TRL's card, then adds what only the run knows (`card.write_model_card`)."""

    def __init__(self, *args, **kwargs):
        """The trainer's own constructor through `super()`, then the reward names the card reads."""
        super().__init__(*args, **kwargs)
        if not hasattr(self, "reward_func_names"):  # async GRPO scores in its worker: name them from the arguments
            funcs = kwargs.get("reward_funcs", args[1] if len(args) > 1 else None)
            funcs = funcs if isinstance(funcs, list) else [funcs] if funcs is not None else []
            self.reward_func_names = [f if isinstance(f, str) else get_callable_name(f) for f in funcs]

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        write_model_card(self, super().create_model_card, model_name, dataset_name, tags)


class LeadingIndicatorsMixin:
    """For `class X(LeadingIndicatorsMixin, UPGRPOTrainer)` (a UP trainer): each loss call also logs
    `indicators.INDICATOR_METRICS`, from the tensors the trainer's `up/*` metrics are computed from."""

    @torch.no_grad()
    def _log_up_metrics(self, logps, old_logps, advantages, mask, log_ratio, mode: str) -> None:
        """The UP trainer's own metrics through `super()` by design, then the indicators of the same call."""
        super()._log_up_metrics(logps, old_logps, advantages, mask, log_ratio, mode)
        sums = leading_indicator_sums(logps, advantages, mask, log_ratio, epsilon_low=self.epsilon_low)
        for name, (num, den) in indicator_rates(self.accelerator.reduce(sums, reduction="sum").tolist()).items():
            self._metrics[mode][name].append(self._up_rate(num, den))


def with_parts(trainer_cls: type, share_prompt_prefix: bool = False) -> type:
    """`trainer_cls` with every mixin part that applies (the card and the indicators to UP trainers, the rollout
    batch to GRPO, RLOO) and, with `share_prompt_prefix`, the CPU saving (GRPO, RLOO): the one way a run's trainer
    class is composed."""
    up = (RunCardMixin, LeadingIndicatorsMixin) if hasattr(trainer_cls, "up_mode") else ()  # they read UP's settings
    rollout = (RolloutCheckpointMixin,) if is_synchronous(trainer_cls) else ()  # async GRPO buffers no batch
    if share_prompt_prefix and not rollout:
        raise TypeError(f"share_prompt_prefix: {trainer_cls.__name__} has no scoring forward to share (GRPO, RLOO).")
    mixins = (*up, *rollout, ResumeSettingsMixin, *((SharedPromptTrainerMixin,) if share_prompt_prefix else ()))
    return type(trainer_cls.__name__, (*mixins, trainer_cls), {"__module__": trainer_cls.__module__})


def nonfinite_guard(trainer, max_consecutive: int = 10) -> TrainerCallback:
    """The non-finite step guard (a no-op under DeepSpeed, whose engine owns the step), logging its count."""
    if getattr(trainer, "is_deepspeed_enabled", False):
        return TrainerCallback()

    def record(count: int) -> None:  # one value a logging window: the count so far (async GRPO's: a rate)
        value = trainer._up_rate(count, 1) if hasattr(trainer, "_up_rate") else float(count)
        trainer._metrics["train"]["up/nonfinite_skipped_steps"].append(value)

    def loss_scale() -> float | None:  # fp16's GradScaler (accelerate makes it in the trainer's __init__)
        scaler = getattr(getattr(trainer, "accelerator", None), "scaler", None)
        return scaler.get_scale() if scaler is not None and scaler.is_enabled() else None

    return NonFiniteGuardCallback(max_consecutive, record=record, loss_scale=loss_scale)


def record_unscorable(trainer) -> None:
    """Wrap `trainer.reward_funcs` as TRL holds them (every reward source) to log `up/unscorable_frac`, unchanged."""
    trainer.reward_funcs, _ = record_scorable(trainer.reward_funcs)


def attach_parts(trainer, skip_nonfinite_steps: bool = True, max_consecutive_nonfinite_steps: int = 10) -> None:
    """Every callback part on a built trainer: the non-finite guard, the file modes, the unscorable count."""
    if skip_nonfinite_steps:
        trainer.add_callback(nonfinite_guard(trainer, max_consecutive_nonfinite_steps))
    trainer.add_callback(UsualFileModesCallback())
    if is_synchronous(type(trainer)):  # async GRPO scores in TRL's worker process: no count comes back
        record_unscorable(trainer)


logger = logging.get_logger(__name__)


class NonFiniteGuardCallback(TrainerCallback):
    """Skips (drops every `.grad`: torch optimizers then leave the parameters alone) and counts a non-finite step;
    after `max_consecutive` in a row, saves and stops. `record(count)` is called at each step that logs.

    `loss_scale()` gives fp16's loss scale (None without one). While it is above 1, a non-finite gradient may be the
    scaling's own overflow: the GradScaler skips that step and halves the scale, as it does under TRL alone, so the
    guard leaves it alone and does not count it. At a scale of 1 or less, scaling cannot overflow, and it counts."""

    def __init__(self, max_consecutive: int = 10, record=None, loss_scale=None):
        self.max_consecutive, self.record, self.loss_scale = max_consecutive, record, loss_scale
        self.skipped = self.consecutive = 0

    def on_step_end(self, args, state, control, **kwargs):
        if self.record is not None and control.should_log:
            self.record(self.skipped)

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):  # the Trainer passes its model
        if all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None):
            self.consecutive = 0
            return
        if (scale := self.loss_scale() if self.loss_scale is not None else None) is not None and scale > 1:
            logger.info(
                f"up-trl: the fp16 loss scale {scale:g} overflowed at step {state.global_step + 1}: its scaler "
                "skips the step and halves the scale."
            )
            return
        model.zero_grad(set_to_none=True)
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


class UsualFileModesCallback(TrainerCallback):
    """Each checkpoint's weights get the usual file mode on `on_save` (transformers writes them 0600)."""

    def on_save(self, args, state, control, **kwargs):
        if args.should_save:
            checkpoint = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            if checkpoint.is_dir():
                usual_file_modes(checkpoint)


METRIC = "up/unscorable_frac"
RECORDED = "__up_trl_recorded__"  # a wrapper's attribute holding the reward function it wraps


class ScorableRecorder:
    """Which completions got a finite reward, `note`d by each wrapper (thread-safe), counted when all `n_funcs` are."""

    def __init__(self, n_funcs: int, always_scorable: bool = False):
        self.n_funcs, self.always_scorable = n_funcs, always_scorable  # always: a model reward scores every completion
        self._lock = threading.Lock()
        self._finite: dict[int, torch.Tensor] = {}  # reward function's index -> (completions,) bool, this batch
        self._counts: tuple[int, int] | None = None

    def note(self, index: int, rewards: Any, n_completions: int | None, log_metric: Callable | None) -> None:
        """Note the rewards function `index` returned. Never raises: a wrong count or value is TRL's to report."""
        try:
            values = [float("nan") if r is None else r for r in rewards]  # as TRL reads them: None is NaN, float32
            finite = torch.isfinite(torch.tensor(values, dtype=torch.float32))
        except (TypeError, ValueError, RuntimeError):
            return
        if finite.dim() != 1 or (n_completions is not None and len(finite) != n_completions):
            return
        with self._lock:
            if index in self._finite or any(len(f) != len(finite) for f in self._finite.values()):
                self._finite.clear()  # a new batch: the last one stopped before every function scored it
            self._finite[index] = finite
            if len(self._finite) < self.n_funcs:
                return
            scorable = torch.stack(list(self._finite.values())).any(dim=0) | self.always_scorable
            self._finite.clear()
            self._counts = counts = (int((~scorable).sum()), len(scorable))
        if log_metric is not None and counts[1] > 0:
            log_metric(METRIC, counts[0] / counts[1])

    def take(self) -> tuple[int, int] | None:
        """(unscorable, completions) of the last batch every wrapped function scored, once; None if none since."""
        with self._lock:
            counts, self._counts = self._counts, None
        return counts


def _recording(reward_func: Callable, index: int, recorder: ScorableRecorder) -> Callable:
    """`reward_func`, noting what it returns in `recorder`; async stays async, the name and signature are kept."""
    reward_func = getattr(reward_func, RECORDED, reward_func)  # a previous UP trainer's wrapper: wrap its function

    def noted(rewards, kwargs):
        if isinstance(rewards, Iterator):  # a generator, map(...): read once here, so TRL gets the values as a list
            rewards = list(rewards)
        completions = kwargs.get("completions")
        recorder.note(index, rewards, None if completions is None else len(completions), kwargs.get("log_metric"))
        return rewards

    def wrapper(*args, **kwargs):
        return noted(reward_func(*args, **kwargs), kwargs)

    async def async_wrapper(*args, **kwargs):
        return noted(await reward_func(*args, **kwargs), kwargs)

    wrapper = async_wrapper if is_async_callable(reward_func) else wrapper
    # __wrapped__ and the docstring, not a copy of a callable object's __dict__, which would go stale.
    functools.update_wrapper(wrapper, reward_func, updated=())
    wrapper.__name__ = get_callable_name(reward_func)  # TRL's name for it (a partial's function, a class's name)
    setattr(wrapper, RECORDED, reward_func)
    return wrapper


def record_scorable(reward_funcs: Any) -> tuple[Any, ScorableRecorder]:
    """(`reward_funcs` with each plain callable wrapped, models not, in the form given; their recorder).

    >>> funcs, recorder = record_scorable([lambda completions, **kwargs: [1.0, None, float("nan")]])
    >>> funcs[0](completions=["a", "b", "c"])
    [1.0, None, nan]
    >>> recorder.take()
    (2, 3)
    """
    funcs = reward_funcs if isinstance(reward_funcs, list) else [] if reward_funcs is None else [reward_funcs]
    plain = [i for i, f in enumerate(funcs) if not isinstance(f, (str, torch.nn.Module))]  # not a model (TRL's)
    recorder = ScorableRecorder(len(plain), always_scorable=len(plain) < len(funcs))
    wrapped = [_recording(f, plain.index(i), recorder) if i in plain else f for i, f in enumerate(funcs)]
    return (wrapped if isinstance(reward_funcs, list) else wrapped[0] if wrapped else reward_funcs), recorder
