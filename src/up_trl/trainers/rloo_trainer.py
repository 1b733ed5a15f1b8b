"""UPRLOOTrainer: TRL's RLOOTrainer with UP's asymmetric objective, and nothing else changed.

RLOO's ratio is on the *summed* completion log-probability, one per sequence, clipped, mean over sequences:

    L = mean_i( -min(r_i * A_i, clip(r_i, 1 - eps_low, 1 + eps_high) * A_i) ),   r_i = exp(logp_i - old_logp_i)

UP routes the sequences with A > 0 ("asymmetric"; every sequence for "both") to the self-anchored ratio:

    L_i = -A_i * exp(logp_i - sg(logp_i))    (value -A_i, gradient -A_i * grad logp_i, never clipped)

Same shape as `UPGRPOTrainer`: the parent computes everything on a *copy* of the batch whose routed advantages
are zeroed (its clipped term vanishes there), and UP adds its term on the routed sequences through the same
`.mean()` over sequences. The summed log-probability is recomputed from the per-token log-probabilities the
parent's forward returns (recorded by a hook on `_get_per_token_logps_and_entropies`), with the parent's own
line. The RLOOTrainer methods this overrides or relies on are pinned whole in `tests/trl_pins.json` ('objective'
pins).
"""

from __future__ import annotations

import torch
from trl import RLOOTrainer

from ..objective.guards import is_rare, up_positive_branch_loss
from ..objective.losses import up_positive_token_sums
from .rloo_config import UPRLOOConfig
from .shared import UPSyncTrainerMixin, default_output_dir, route_batch
from .shared_prompt import SharedPromptTrainerMixin
from .unscorable import record_scorable


class UPRLOOTrainer(UPSyncTrainerMixin, SharedPromptTrainerMixin, RLOOTrainer):
    """A drop-in replacement for `trl.RLOOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly RLOOTrainer's arguments; `args` may be a `UPRLOOConfig` (for `up_mode`) or a plain
    `RLOOConfig` (then `up_mode="asymmetric"`).

    Example:
    ```python
    from up_trl import UPRLOOConfig, UPRLOOTrainer
    args = UPRLOOConfig(output_dir="out", num_iterations=2, beta=0.0)
    trainer = UPRLOOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    """

    _tag_names = ["trl", "rloo", "up"]
    _name = "UP-RLOO"
    up_parent_objective = "RLOO"
    up_ratio_per_sequence = True
    up_supported_guards = ("up_positive_log_ratio_bound", "up_positive_min_prob")

    def __init__(self, model, reward_funcs=None, args=None, *pargs, **kwargs):
        args = UPRLOOConfig(default_output_dir(model, "-UP-RLOO")) if args is None else args
        self._read_up_args(args)
        super().__init__(model, reward_funcs, args, *pargs, **kwargs)
        # up/unscorable_frac (`unscorable`): the reward functions as TRL holds them (models loaded, an environment's
        # reward added), each plain callable wrapped; the rewards are unchanged
        self.reward_funcs, _ = record_scorable(self.reward_funcs)
        self._refuse_zero_step_setups()
        self._finish_up_init(
            "RLOO computes old_logps with the policy being trained just before it is updated, so the ratio is "
            "exactly 1.",
            "set num_iterations > 1, or steps_per_generation > gradient_accumulation_steps.",
        )

    def _compute_loss(self, model, inputs):
        advantages = inputs["advantages"]  # (B,): one per sequence
        routes, parent_inputs = route_batch(inputs, self.up_mode, self._rare_sequences(inputs))
        with self._recording_parent() as seen:
            loss = super()._compute_loss(model, parent_inputs)
        per_token_logps = seen["per_token_logps"]

        mode = "train" if self.model.training else "eval"
        logps = (per_token_logps * inputs["completion_mask"]).sum(1)  # the parent's line: summed completion logp
        old_logps = inputs["old_logps"]
        log_ratio = logps.detach() - old_logps
        if self.up_mode != "off":
            # Each sequence is one entry of UP's token-level ratio: exp(logp - sg(logp)) on the summed logp.
            anchored = up_positive_branch_loss(logps, old_logps, advantages, torch.ones_like(logps), **self.up_guards)
            loss = loss + torch.where(routes, anchored, 0.0).mean()  # RLOO's normalisation: mean over sequences
            # RLOO's clip: one entry per sequence, no dual clip (TRL's masks with delta=None).
            self._recount_clip_ratios(torch.exp(log_ratio)[:, None], advantages[:, None], None, mode, delta=None)
        self._log_up_metrics(logps.detach(), old_logps, log_ratio, advantages, mode)
        return loss

    def _rare_sequences(self, inputs):
        """The rare-token guard (`up_positive_min_prob`) at RLOO's level: a completion whose geometric-mean token
        probability at sampling time, exp(old_logp / length), is below the bound keeps RLOO's clip (None: no guard)."""
        if self.up_positive_min_prob is None:
            return None
        length = inputs["completion_mask"].sum(1).clamp(min=1)
        return is_rare(inputs["old_logps"] / length, self.up_positive_min_prob)

    @torch.no_grad()
    def _log_up_metrics(self, logps, old_logps, log_ratio, advantages, mode):
        """UP_METRICS at RLOO's level, the sequence: each entry below is a completion, its probability the product
        over its tokens (RLOO keeps no per-token old log-probabilities). Both capacities whatever up_mode is."""
        mask = torch.ones_like(logps)
        sums = up_positive_token_sums(
            logps, old_logps, advantages, mask, epsilon_high=self.epsilon_high, guard_bound=self.up_guard_bound
        )
        self._log_up_sums(sums, mode)
        self._log_indicators(logps, advantages, mask, log_ratio, mode)
