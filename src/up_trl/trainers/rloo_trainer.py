"""UPRLOOTrainer: TRL's RLOOTrainer with UP's asymmetric objective, and nothing else changed.

RLOO's ratio is on the *summed* completion log-probability, one per sequence, clipped, mean over sequences:

    L = mean_i( -min(r_i * A_i, clip(r_i, 1 - eps_low, 1 + eps_high) * A_i) ),   r_i = exp(logp_i - old_logp_i)

As `UPGRPOTrainer` does for GRPO, UP anchors `old_logps` to sg(logp_i) on the routed sequences (summing the
forward's per-token log-probs with the parent's own line), so the parent's own loss computes there

    L_i = -A_i * exp(logp_i - sg(logp_i))    (value -A_i, gradient -A_i * grad logp_i, never clipped)

The RLOOTrainer methods this relies on are pinned whole in `tests/trl_pins.json` ('objective' pins).
"""

from __future__ import annotations

import torch
from trl import RLOOTrainer

from ..objective.guards import is_rare
from ..objective.ratios import anchored_old_logps
from ..objective.routing import up_routes
from .rloo_config import UPRLOOConfig
from .shared import UPSyncTrainerMixin


class UPRLOOTrainer(UPSyncTrainerMixin, RLOOTrainer):
    """A drop-in replacement for `trl.RLOOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly RLOOTrainer's arguments; `args` may be a `UPRLOOConfig` (for `up_mode`) or a plain
    `RLOOConfig` (then `up_mode="asymmetric"`). It changes what `UPGRPOTrainer` changes, nothing else.

    Example:
    ```python
    from up_trl import UPRLOOConfig, UPRLOOTrainer
    args = UPRLOOConfig(output_dir="out", num_iterations=2, beta=0.0)  # 2 passes: the 2nd is off-policy, where UP acts
    trainer = UPRLOOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    """

    up_parent_objective = "RLOO"
    up_ratio_per_sequence = True

    up_config_class = UPRLOOConfig
    up_output_suffix = "-UP-RLOO"

    def _up_on_policy_notice(self) -> tuple[str, str]:
        return (
            "RLOO computes old_logps with the policy being trained just before it is updated, so the ratio is "
            "exactly 1.",
            "set num_iterations > 1, or steps_per_generation > gradient_accumulation_steps.",
        )

    def _compute_loss(self, model, inputs):
        old, routes, batch, seen = inputs["old_logps"], self._routes(inputs), dict(inputs), {}  # a copy: TRL reuses it

        def anchor(per_token_logps):  # pi_theta from the parent's forward, before it reads old_logps
            seen["logps"] = logps = (per_token_logps * inputs["completion_mask"]).sum(1)  # the parent's line
            if routes is not None:
                batch["old_logps"] = anchored_old_logps(old, logps, routes)

        with self._parent_forward(anchor):
            loss = super()._compute_loss(model, batch)
        logps = seen["logps"].detach()  # each completion is one entry of UP's metrics, its probability the product
        mode = "train" if self.model.training else "eval"
        self._log_up_metrics(logps, old, inputs["advantages"], torch.ones_like(logps), logps - old, mode)
        return loss

    def _routes(self, inputs):
        """The sequences whose old_logps are anchored (None under "off"), minus the rare clip's: completions whose
        geometric-mean token probability at sampling time, exp(old_logp / length), is below the bound."""
        if self.up_mode == "off":
            return None
        routes = up_routes(inputs["advantages"], self.up_mode)
        if self.up_positive_min_prob is not None:
            length = inputs["completion_mask"].sum(1).clamp(min=1)
            routes = routes & ~is_rare(inputs["old_logps"] / length, self.up_positive_min_prob)
        return routes
