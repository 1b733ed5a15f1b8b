"""The rollout batch in every checkpoint, so that a resumed run continues the uninterrupted one.

TRL's synchronous trainers (GRPOTrainer, RLOOTrainer) generate one rollout batch, buffer its slices in
`_buffered_inputs`, and train on them for the next `steps_per_generation * num_iterations` micro-steps, counted by
`_step`. Neither is in a checkpoint: a run resumed inside a cycle starts a new rollout batch where the
uninterrupted run would have reused the buffered one (TRL: "self._buffered_inputs=None can occur when resuming
from a checkpoint"), so it trains on other completions and ends with other weights.

`RolloutCheckpointMixin` saves both with the checkpoint, one file per process (each holds its own share of the
batch), the way TRL's GRPOTrainer saves its adaptive-entropy state: written in `_save_checkpoint`, read back in
`_load_optimizer_and_scheduler`. With the model, optimizer, scheduler and RNG states the Trainer already restores,
a run resumed at any step trains on the same slices in the same order as the uninterrupted run
(`tests/test_resume.py` checks the final weights with `torch.equal`, at a step inside a cycle).

A checkpoint written before any complete micro-step of a new accumulation window (every checkpoint but an emergency
one after a crash) stores `_step` as it is; one written in the middle of a window stores the window's first
micro-step, so that the resumed run redoes the whole window whose gradients were lost.

It relies on TRL's and transformers' checkpoint internals (`_save_checkpoint`, `_load_optimizer_and_scheduler`,
`training_step`, `_prepare_inputs`), pinned whole in `tests/trl_pins.json` ('rollout checkpoint' pins).
"""

from __future__ import annotations

import os

import torch
from accelerate.logging import get_logger
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

logger = get_logger(__name__)

ROLLOUT_FILE = "rollout_buffer_rank{rank}.pt"


def rollout_file(checkpoint: str | os.PathLike, rank: int) -> str:
    """The file in `checkpoint` that holds process `rank`'s buffered rollout batch.

    >>> rollout_file("out/checkpoint-3", 0)
    'out/checkpoint-3/rollout_buffer_rank0.pt'
    """
    return os.path.join(checkpoint, ROLLOUT_FILE.format(rank=rank))


class RolloutCheckpointMixin:
    """For `class X(RolloutCheckpointMixin, GRPOTrainer)` (or RLOOTrainer): `_buffered_inputs` and `_step` go into
    every checkpoint and come back on resume. Changes nothing else the parent computes."""

    _rollout_window: tuple[int, int] = (-1, 0)  # (global_step, `_step` at the first micro-step of its window)

    # Keys the parent's loss reads from a buffered batch when beta > 0 (GRPO: the reference log-probs, computed when
    # the batch was generated); a batch saved by a run with beta = 0 lacks them.
    rollout_keys_for_beta: tuple[str, ...] = ()

    def training_step(self, model, inputs, num_items_in_batch):
        if self.state.global_step != self._rollout_window[0]:  # the first micro-step of a new window
            self._rollout_window = (self.state.global_step, self._step)
        return super().training_step(model, inputs, num_items_in_batch)

    def _rollout_step(self) -> int:
        """`_step` to resume from: the current one at a window's end, the window's first inside a window."""
        window_step, first_micro_step = self._rollout_window
        return first_micro_step if window_step == self.state.global_step else self._step

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self._buffered_inputs is None:
            return
        folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        os.makedirs(folder, exist_ok=True)
        state = {"step": self._rollout_step(), "buffered_inputs": self._buffered_inputs}
        torch.save(state, rollout_file(folder, self.accelerator.process_index))

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
        batches = self._buffered_inputs if isinstance(self._buffered_inputs, list) else [self._buffered_inputs]
        missing = [k for k in self.rollout_keys_for_beta if getattr(self, "beta", 0.0) and k not in batches[0]]
        if missing:  # resumed with beta > 0 from a run without a KL (the collapse warning's advice at a dead state)
            self._buffered_inputs = None  # TRL generates a new batch at the next step, with the reference's log-probs
            logger.warning(
                f"{checkpoint}'s rollout batch was generated with beta=0 (no {', '.join(missing)}): beta is "
                f"{self.beta} now, so the resumed run generates a new batch at its next step.",
                main_process_only=True,
            )
