"""UPGRPOTrainer: TRL's GRPOTrainer with UP's asymmetric objective, and nothing else changed.

UP in one substitution: on the routed entries (A > 0, minus the rare clip's), pi_old := sg(pi_theta). TRL's
`_compute_loss` reads `old_per_token_logps` only after its policy forward and only through log r, so its own code
(masks, vLLM correction, KL, normalisation, entropy bonus, aux loss, metrics) computes UP, nothing copied:

    routed:     r = pi_theta / sg(pi_theta) = r~   value 1, inside every clip band, gradient A * grad log pi_theta
    elsewhere:  r = pi_theta / pi_old              the parent's clipped objective, unchanged

The anchor (`shared.UPSyncTrainerMixin._parent_forward`) writes to a copy of the batch (TRL reuses a buffered one).
`up_mode="off"` is the parent bit for bit (`tests/test_off_is_parent.py`); TRL's methods are pinned whole in
`tests/trl_pins.json` ('objective' pins).
"""

from __future__ import annotations

from trl import GRPOTrainer

from ..objective.guards import rare_mask
from ..objective.ratios import anchored_old_logps, as_2d, log_importance_weights
from ..objective.routing import up_routes
from .grpo_config import CLIPPED_LOSS_TYPES, UPGRPOConfig
from .shared import UP_METRICS, UPSyncTrainerMixin

__all__ = ["UP_METRICS", "UPGRPOTrainer"]  # UP_METRICS re-exported from `shared`


class UPGRPOTrainer(UPSyncTrainerMixin, GRPOTrainer):
    """A drop-in replacement for `trl.GRPOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly GRPOTrainer's arguments; `args` may be a `UPGRPOConfig` (for `up_mode`) or a plain
    `GRPOConfig` (then `up_mode="asymmetric"`). It changes the objective (`_compute_loss`) and adds the `up/*`
    metrics, a notice when the configuration is on-policy (UP then equals its parent), the collapse warning (only
    logs unless `up_stop_on_collapse=True`) and UP's name and paper in TRL's card. All else is the parent's;
    `up_trl.run.parts` has the opt-in extras `up-trl train` uses.

    Example:
    ```python
    from up_trl import UPGRPOConfig, UPGRPOTrainer
    args = UPGRPOConfig(output_dir="out", loss_type="dapo", epsilon_high=0.28, num_iterations=2)  # 2nd: off-policy
    trainer = UPGRPOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    """

    up_config_class = UPGRPOConfig

    def _up_on_policy_notice(self) -> tuple[str, str]:
        a = self.args
        return (
            f"gradient_accumulation_steps={a.gradient_accumulation_steps} is a multiple of steps_per_generation"
            f" * num_iterations = {a.steps_per_generation} * {self.num_iterations}, so each batch is trained on"
            " only by the weights that generated it and the ratio pi_theta/pi_old is exactly 1 (with vLLM too: "
            "TRL then recomputes pi_old with the current weights).",
            "set num_iterations > 1, or steps_per_generation > gradient_accumulation_steps, so that "
            "gradient_accumulation_steps is not a multiple of their product.",
        )

    def _compute_loss(self, model, inputs):
        if self.loss_type not in CLIPPED_LOSS_TYPES:  # cispo, sapo, vespo (up_mode="off" only): the parent, untouched
            return super()._compute_loss(model, inputs)
        old, mask, routes = inputs.get("old_per_token_logps"), self._loss_mask(inputs), self._routes(inputs)
        batch, seen = dict(inputs), {}  # a copy: TRL reuses a buffered batch
        if old is not None and self.off_policy_mask_threshold is not None:  # without vLLM the mask reads pi_old:
            batch.setdefault("sampling_per_token_logps", old)  # the real one, so anchored entries keep their drift

        def anchor(per_token_logps):  # pi_theta from the parent's forward, before it reads pi_old
            seen["logps"] = per_token_logps
            if old is not None and routes is not None:
                batch["old_per_token_logps"] = anchored_old_logps(old, per_token_logps, routes)

        with self._parent_forward(anchor):
            loss = super()._compute_loss(model, batch)
        logps = seen["logps"].detach()
        old = logps if old is None else old
        advantages = as_2d(inputs["advantages"])
        log_ratio = log_importance_weights(logps, old, mask, self.importance_sampling_level)
        self._log_up_metrics(logps, old, advantages, mask, log_ratio, "train" if self.model.training else "eval")
        return loss

    @staticmethod
    def _loss_mask(inputs):
        """The positions the parent's loss counts: completion tokens, minus tool output where there is any."""
        mask = inputs["completion_mask"]
        return mask if "tool_mask" not in inputs else mask * inputs["tool_mask"]

    def _routes(self, inputs):
        """Where pi_old is anchored: `up_routes` of the advantages, (B, 1) per sequence or (B, T) per token, minus the
        rare clip's entries (`up_positive_min_prob`, `guards.rare_mask`), which keep pi_old; None under "off"."""
        if self.up_mode == "off":
            return None
        routes = up_routes(as_2d(inputs["advantages"]), self.up_mode)
        old = inputs.get("old_per_token_logps")
        if self.up_positive_min_prob is not None and old is not None:
            level, mask = self.importance_sampling_level, self._loss_mask(inputs)
            routes = routes & ~rare_mask(old, mask, self.up_positive_min_prob, level)
        return routes
