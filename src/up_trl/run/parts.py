"""The opt-in parts: what up-trl offers beyond UP, each filling a TRL or transformers gap, off by default in the UP
trainers, on TRL's own trainers too (but the card). `up-trl train` attaches all (`with_parts`, `attach_parts`).

Mixins (a callback cannot see the checkpoint folder a resume loads), one line each:

    class MyTrainer(RolloutCheckpointMixin, ResumeSettingsMixin, UPGRPOTrainer): pass

- `RolloutCheckpointMixin`: TRL's buffered rollout batch in every checkpoint, so that a resume inside a rollout batch
  trains as the uninterrupted run (GRPOTrainer and RLOOTrainer, not async GRPO);
- `ResumeSettingsMixin`: a resumed run trains with its own optimizer settings, not the checkpoint's;
- `RunCardMixin`: TRL's model card plus the run's (`card.write_model_card`), on `create_model_card` and `push_to_hub`
  ('run card' signature check and behaviour in tests/trl_pins.json).

Callbacks and wrappers, after the trainer is built:

    trainer.add_callback(nonfinite_guard(trainer))      # skip and count optimizer steps with NaN/inf gradients
    trainer.add_callback(UsualFileModesCallback())      # saved weights 0644, as every other file (transformers: 0600)
    record_unscorable(trainer)                          # log up/unscorable_frac: completions no reward could score
"""

from __future__ import annotations

from transformers import TrainerCallback

from .callbacks import NonFiniteGuardCallback, UsualFileModesCallback
from .resume_settings import ResumeSettingsMixin
from .rollout_checkpoint import RolloutCheckpointMixin, is_synchronous

__all__ = ["NonFiniteGuardCallback", "ResumeSettingsMixin", "RolloutCheckpointMixin", "RunCardMixin",
           "UsualFileModesCallback", "attach_parts", "nonfinite_guard", "record_unscorable", "with_parts"]  # fmt: skip


class RunCardMixin:
    """For `class X(RunCardMixin, UPGRPOTrainer)` (a UP trainer): `create_model_card` (and so `push_to_hub`) writes
    TRL's card, then adds what only the run knows (`card.write_model_card`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not hasattr(self, "reward_func_names"):  # async GRPO scores in its worker: name them from the arguments
            from trl.trainer.utils import get_callable_name

            funcs = kwargs.get("reward_funcs", args[1] if len(args) > 1 else None)
            funcs = funcs if isinstance(funcs, list) else [funcs] if funcs is not None else []
            self.reward_func_names = [f if isinstance(f, str) else get_callable_name(f) for f in funcs]

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        from .card import write_model_card

        write_model_card(self, super().create_model_card, model_name, dataset_name, tags)


def with_parts(trainer_cls: type) -> type:
    """`trainer_cls` with every mixin part that applies (the card to UP trainers, the rollout batch to GRPO, RLOO)."""
    card = (RunCardMixin,) if hasattr(trainer_cls, "up_mode") else ()  # the card describes UP's settings
    rollout = (RolloutCheckpointMixin,) if is_synchronous(trainer_cls) else ()  # async GRPO buffers no batch
    mixins = (*card, *rollout, ResumeSettingsMixin)
    return type(trainer_cls.__name__, (*mixins, trainer_cls), {"__module__": trainer_cls.__module__})


def nonfinite_guard(trainer, max_consecutive: int = 10) -> TrainerCallback:
    """The non-finite step guard (a no-op under DeepSpeed, whose engine owns the step), logging its count."""
    if getattr(trainer, "is_deepspeed_enabled", False):
        return TrainerCallback()

    def record(count: int) -> None:  # one value a logging window: the count so far (async GRPO's: a rate)
        value = trainer._up_rate(count, 1) if hasattr(trainer, "_up_rate") else float(count)
        trainer._metrics["train"]["up/nonfinite_skipped_steps"].append(value)

    return NonFiniteGuardCallback(max_consecutive, record=record)


def record_unscorable(trainer) -> None:
    """Wrap `trainer.reward_funcs` as TRL holds them (every reward source) to log `up/unscorable_frac`, unchanged."""
    from .unscorable import record_scorable

    trainer.reward_funcs, _ = record_scorable(trainer.reward_funcs)


def attach_parts(trainer, skip_nonfinite_steps: bool = True, max_consecutive_nonfinite_steps: int = 10) -> None:
    """Every callback part on a built trainer: the non-finite guard, the file modes, the unscorable count."""
    if skip_nonfinite_steps:
        trainer.add_callback(nonfinite_guard(trainer, max_consecutive_nonfinite_steps))
    trainer.add_callback(UsualFileModesCallback())
    if is_synchronous(type(trainer)):  # async GRPO scores in TRL's worker process: no count comes back
        record_unscorable(trainer)
