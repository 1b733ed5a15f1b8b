"""The rollout batch in every checkpoint: TRL's GRPOTrainer and RLOOTrainer do not save their buffered batch
(`_buffered_inputs`, `_step`), so a run resumed inside a rollout cycle generated a new one and ended elsewhere.

Relies on TRL's `_prepare_inputs` and `_load_optimizer_and_scheduler`, held by the behavioural tests listed in
`tests/trl_pins.json` ('rollout checkpoint' behaviours: resumed inside a cycle, the final weights are the same).
"""

from __future__ import annotations

import os

import torch
from accelerate.logging import get_logger
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

logger = get_logger(__name__)

ROLLOUT_FILE = "rollout_buffer_rank{rank}.pt"


def rollout_file(checkpoint: str | os.PathLike, rank: int) -> str:
    """The file in `checkpoint` that holds process `rank`'s buffered rollout batch.

    >>> rollout_file("out/checkpoint-3", 0)
    'out/checkpoint-3/rollout_buffer_rank0.pt'
    """
    return os.path.join(checkpoint, ROLLOUT_FILE.format(rank=rank))


def sampler_generator(dataloader) -> torch.Generator | None:
    """The random generator of the prompt sampler behind `dataloader`, through accelerate's wrappers, or None."""
    seen, todo = set(), [dataloader]
    while todo:
        obj = todo.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        generator = getattr(obj, "generator", None)
        if isinstance(generator, torch.Generator):
            return generator
        todo += [getattr(obj, name, None) for name in ("sampler", "batch_sampler", "base_dataloader")]
    return None


class RolloutCheckpointCallback(TrainerCallback):
    """Saves this process's rollout batch, `_step` and the prompt sampler's random states (the Trainer restores only
    the global ones) in each checkpoint; first among the callbacks, so that the completeness mark lists the file."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.window: tuple[int, int] = (-1, 0)  # (global_step, `_step` at the first micro-step of its window)
        self.generator: torch.Generator | None = None
        self.epoch: int = -1  # the epoch in progress, and the sampler's state before its order was drawn
        self.epoch_sampler_state: torch.Tensor | None = None

    def on_epoch_begin(self, args, state, control, train_dataloader=None, **kwargs):
        self.generator, self.epoch = sampler_generator(train_dataloader), int(state.epoch + 1e-6)
        saved = vars(self.trainer).pop("_up_sampler_state", None)  # a resume: the states the checkpoint holds
        if self.generator is not None and saved is not None:
            if saved["epoch"] == self.epoch:  # resumed inside the saved epoch: its order again
                self.generator.set_state(saved["epoch_start"])
            elif saved["epoch"] + 1 == self.epoch:  # saved at its last step: the next epoch's order
                self.generator.set_state(saved["after"])
        self.epoch_sampler_state = None if self.generator is None else self.generator.get_state()

    def on_step_begin(self, args, state, control, **kwargs):  # before the window's first micro-step
        self.window = (state.global_step, self.trainer._step)

    def rollout_step(self) -> int:
        """`_step` to resume from: inside an accumulation window (an emergency save), the window's first."""
        window_step, first_micro_step = self.window
        return first_micro_step if window_step == self.trainer.state.global_step else self.trainer._step

    def on_save(self, args, state, control, **kwargs):
        buffered = self.trainer._buffered_inputs
        folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        if buffered is not None and os.path.isdir(folder):
            state_dict = {"step": self.rollout_step(), "buffered_inputs": buffered}
            if self.epoch_sampler_state is not None:  # the sampler's states: before the epoch drew its order, and now
                states = {"epoch_start": self.epoch_sampler_state, "after": self.generator.get_state()}
                state_dict["sampler_state"] = {"epoch": self.epoch, **states}
            torch.save(state_dict, rollout_file(folder, self.trainer.accelerator.process_index))


def is_synchronous(trainer_cls: type) -> bool:
    """Whether `trainer_cls` is (a subclass of) TRL's GRPOTrainer or RLOOTrainer: a buffered rollout batch."""
    return any(c.__name__ in ("GRPOTrainer", "RLOOTrainer") for c in trainer_cls.__mro__)


class RolloutCheckpointMixin:
    """For `class X(RolloutCheckpointMixin, GRPOTrainer)` (or RLOO): the rollout batch saved, and loaded on resume."""

    def __init__(self, *args, **kwargs):
        if not is_synchronous(type(self)):
            raise TypeError(
                f"RolloutCheckpointMixin needs GRPOTrainer or RLOOTrainer (a buffered rollout batch); "
                f"{type(self).__name__} has none: leave the mixin out."
            )
        super().__init__(*args, **kwargs)
        self.callback_handler.callbacks.insert(0, RolloutCheckpointCallback(self))

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        path = rollout_file(checkpoint, self.accelerator.process_index)
        if not os.path.exists(path):
            logger.warning(
                f"{checkpoint} holds no rollout batch for process {self.accelerator.process_index} (written by "
                "another trainer or with more processes): the resumed run generates a new one, so it can differ "
                "from the uninterrupted run.",
                main_process_only=False,
            )
            return
        state = torch.load(path, map_location=self.accelerator.device, weights_only=True)
        self._step, self._buffered_inputs = state["step"], state["buffered_inputs"]
        if isinstance(state.get("sampler_state"), dict):  # put back when the resumed epoch begins (the callback)
            sampler = state["sampler_state"]
            self.__dict__["_up_sampler_state"] = {k: v.cpu() if hasattr(v, "cpu") else v for k, v in sampler.items()}
        batches = self._buffered_inputs if isinstance(self._buffered_inputs, list) else [self._buffered_inputs]
        # GRPO's loss reads the reference's log-probs when beta > 0 (RLOO folds the KL into the rewards): a batch saved
        # with beta = 0 lacks them, so TRL generates a new batch at the next step.
        is_grpo = any(c.__name__ == "GRPOTrainer" for c in type(self).__mro__)
        if is_grpo and getattr(self, "beta", 0.0) and "ref_per_token_logps" not in batches[0]:
            self._buffered_inputs = None
            logger.warning(
                f"{checkpoint}'s rollout batch was generated with beta=0 (no ref_per_token_logps): beta is "
                f"{self.beta} now, so the resumed run generates a new batch at its next step.",
                main_process_only=True,
            )
