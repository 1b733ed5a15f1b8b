"""UPGRPOTrainer: TRL's GRPOTrainer with UP's asymmetric objective, and nothing else changed.

How the override stays small: the parent computes everything (forward, KL, masks, normalisation, entropy
bonus, MoE aux loss, metrics) on a *copy* of the batch in which the advantages UP takes over are zeroed, so
its clipped term vanishes exactly there. UP then adds its own term, -A * pi_theta / sg(pi_theta) on those
entries, through the same masks and the same normalisation (`losses.aggregate_loss`). The two parts touch
disjoint entries, so the gradient is exact, not a difference of two large numbers. With `up_mode="off"` the parent
gets the batch unchanged and its loss is returned as it is (`tests/test_off_is_parent.py`: the same weights bit for
bit). The TRL methods the loss overrides or relies on are pinned whole in `tests/trl_pins.json` ('objective' pins).
"""

from __future__ import annotations

import torch
from trl import GRPOTrainer

from ..objective.guards import GUARD_FIELDS, rare_mask, up_capacity_mask, up_positive_branch_loss
from ..objective.losses import (
    GENERATION_BATCH_NORMALISED,
    aggregate_loss,
    clipped_surrogate_loss,
    log_importance_weights,
    up_positive_token_sums,
)
from .grpo_config import CLIPPED_LOSS_TYPES, UPGRPOConfig, check_up_compatible
from .shared import CLIP_RATIO_METRICS, UP_METRICS, UPSyncTrainerMixin, default_output_dir, route_batch
from .shared_prompt import SharedPromptTrainerMixin
from .unscorable import record_scorable

__all__ = ["CLIP_RATIO_METRICS", "UP_METRICS", "UPGRPOTrainer"]  # both re-exported from `shared`


class UPGRPOTrainer(UPSyncTrainerMixin, SharedPromptTrainerMixin, GRPOTrainer):
    """A drop-in replacement for `trl.GRPOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly GRPOTrainer's arguments; `args` may be a `UPGRPOConfig` (for `up_mode`) or a plain
    `GRPOConfig` (then `up_mode="asymmetric"`).

    Example:
    ```python
    from up_trl import UPGRPOConfig, UPGRPOTrainer
    args = UPGRPOConfig(output_dir="out", loss_type="dapo", epsilon_high=0.28, num_iterations=2)
    trainer = UPGRPOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    """

    _tag_names = ["trl", "grpo", "up"]
    _name = "UP-GRPO"
    up_supported_guards = GUARD_FIELDS
    rollout_keys_for_beta = ("ref_per_token_logps",)  # read by GRPO's loss when beta > 0 (`run.rollout_checkpoint`)

    def __init__(self, model, reward_funcs=None, args=None, *pargs, **kwargs):
        args = UPGRPOConfig(default_output_dir(model, "-UP")) if args is None else args
        self._read_up_args(args)
        check_up_compatible(self.up_mode, args.loss_type, args.use_liger_kernel)
        super().__init__(model, reward_funcs, args, *pargs, **kwargs)
        # up/unscorable_frac (`unscorable`): the reward functions as TRL holds them (models loaded, an environment's
        # reward added), each plain callable wrapped; the rewards are unchanged
        self.reward_funcs, _ = record_scorable(self.reward_funcs)
        self._refuse_zero_step_setups()
        a = self.args
        self._finish_up_init(
            f"gradient_accumulation_steps={a.gradient_accumulation_steps} is a multiple of steps_per_generation"
            f" * num_iterations = {a.steps_per_generation} * {self.num_iterations}, so each batch is trained on"
            " only by the weights that generated it and the ratio pi_theta/pi_old is exactly 1 (with vLLM too: "
            "TRL then recomputes pi_old with the current weights).",
            "set num_iterations > 1, or steps_per_generation > gradient_accumulation_steps, so that "
            "gradient_accumulation_steps is not a multiple of their product.",
        )

    # Records, as `_get_per_token_logps_and_entropies` does (`shared`), what the parent computes in `_compute_loss`.
    def get_high_entropy_mask(self, entropies, mask, threshold):
        entropy_mask = super().get_high_entropy_mask(entropies, mask, threshold)
        seen = vars(self).get("_up_seen")  # set only inside UP's own loss call (`trainers.shared._recording_parent`)
        if seen is not None:
            seen["entropy_mask"] = entropy_mask
        return entropy_mask

    def _compute_loss(self, model, inputs):
        if self.loss_type not in CLIPPED_LOSS_TYPES:  # cispo, sapo, vespo (up_mode="off" only): the parent, untouched
            return super()._compute_loss(model, inputs)
        advantages = inputs["advantages"]
        routes, parent_inputs = route_batch(inputs, self.up_mode, self._rare_entries(inputs))
        with self._recording_parent() as seen:
            loss = super()._compute_loss(model, parent_inputs)

        mode = "train" if self.model.training else "eval"
        per_token_logps = seen["per_token_logps"]
        mask = self._loss_mask(inputs)
        old_per_token_logps = inputs.get("old_per_token_logps")
        old_per_token_logps = per_token_logps.detach() if old_per_token_logps is None else old_per_token_logps
        advantages = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
        routes = routes.unsqueeze(1) if routes.dim() == 1 else routes

        fallback = self._entropy_fallback(seen.get("entropies"), mask, mode)
        if self.up_mode != "off":
            anchored = self._routed_loss(per_token_logps, old_per_token_logps, advantages, mask, fallback)
            up_loss = self._apply_token_weights(torch.where(routes, anchored, 0.0), inputs, seen, advantages, mask)
            loss = loss + self._aggregate(up_loss, mask, inputs, mode)

        self._log_up_metrics(
            per_token_logps, old_per_token_logps, advantages, routes, mask, inputs, seen, mode, fallback
        )
        return loss

    @staticmethod
    def _loss_mask(inputs):
        """The positions the parent's loss counts: completion tokens, minus tool output where there is any."""
        mask = inputs["completion_mask"]
        return mask if "tool_mask" not in inputs else mask * inputs["tool_mask"]

    def _rare_entries(self, inputs):
        """The rare-token guard's entries (`up_positive_min_prob`, `guards.rare_mask`), kept on the parent's clip;
        None without the guard or on-policy (no old log-probs: the ratio is 1 and the two branches agree)."""
        old = inputs.get("old_per_token_logps")
        if self.up_positive_min_prob is None or old is None:
            return None
        mask = self._loss_mask(inputs)
        return rare_mask(old, mask, self.up_positive_min_prob, self.importance_sampling_level)

    def _routed_loss(self, per_token_logps, old_per_token_logps, advantages, mask, fallback):
        """The per-entry loss of UP's routed entries: -A * r~ (the paper), with the optional guards of the positive
        branch (`guards.up_positive_branch_loss`), or the parent's clipped loss while the entropy fallback is on."""
        level = self.importance_sampling_level
        if fallback:
            coef_1 = torch.exp(log_importance_weights(per_token_logps, old_per_token_logps, mask, level))
            return clipped_surrogate_loss(
                coef_1, advantages, epsilon_low=self.epsilon_low, epsilon_high=self.epsilon_high, delta=self.args.delta
            )
        return up_positive_branch_loss(
            per_token_logps, old_per_token_logps, advantages, mask, importance_sampling_level=level, **self.up_guards
        )

    def _apply_token_weights(self, per_token_loss, inputs, seen, advantages, mask):
        """The parent's per-token multipliers, in its order: off-policy mask, entropy mask, vLLM IS ratio."""
        if self.off_policy_mask_threshold is not None:
            old = inputs.get("old_per_token_logps", seen["per_token_logps"].detach())
            per_token_loss = per_token_loss * self.get_off_policy_mask(
                advantages=advantages,
                per_token_logps=seen["per_token_logps"],
                sampling_per_token_logps=inputs.get("sampling_per_token_logps", old),
                mask=mask,
                off_policy_threshold=self.off_policy_mask_threshold,
            )
        if seen.get("entropy_mask") is not None:
            per_token_loss = per_token_loss * seen["entropy_mask"]
        if self.use_vllm and self.vllm_importance_sampling_correction:
            per_token_loss = per_token_loss * inputs["importance_sampling_ratio"]
        return per_token_loss

    def _aggregate(self, per_token_loss, mask, inputs, mode, scale_for_accumulation=True):
        """`losses.aggregate_loss` with TRL's batch-size and gradient-accumulation factors."""
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1
        num_items = None
        if self.loss_type in GENERATION_BATCH_NORMALISED:  # by the generation batch's tokens, rescaled to one window
            num_items = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
            if mode == "train":
                num_items = num_items * accumulation / self.args.steps_per_generation
        loss = aggregate_loss(
            per_token_loss, mask, self.loss_type, max_completion_length=self.max_completion_length, num_items=num_items
        )
        if scale_for_accumulation and self.loss_type not in GENERATION_BATCH_NORMALISED:
            loss = loss / accumulation
        return loss

    @torch.no_grad()
    def _log_up_metrics(
        self, per_token_logps, old_per_token_logps, advantages, routes, mask, inputs, seen, mode, fallback=False
    ):
        level = self.importance_sampling_level
        log_ratio = log_importance_weights(per_token_logps, old_per_token_logps, mask, level)
        coef_1 = torch.exp(log_ratio)
        self._log_indicators(per_token_logps, advantages, mask, log_ratio, mode)

        # policy_loss: the objective's value as TRL defines it (before accumulation scaling), for every up_mode.
        parent = clipped_surrogate_loss(
            coef_1, advantages, epsilon_low=self.epsilon_low, epsilon_high=self.epsilon_high, delta=self.args.delta
        )
        if fallback:
            routed = parent
        elif self.up_guards:
            routed = self._routed_loss(per_token_logps, old_per_token_logps, advantages, mask, fallback)
        else:
            routed = -advantages  # the value of -A * r~ (r~ = 1)
        per_token_loss = self._apply_token_weights(torch.where(routes, routed, parent), inputs, seen, advantages, mask)
        if self.beta != 0.0:
            ref = inputs["ref_per_token_logps"]
            per_token_kl = torch.exp(ref - per_token_logps) - (ref - per_token_logps) - 1
            if self.args.use_bias_correction_kl:
                per_token_kl = per_token_kl * coef_1
            per_token_loss = per_token_loss + self.beta * per_token_kl
        policy_loss = self._aggregate(per_token_loss, mask, inputs, mode, scale_for_accumulation=False)
        if self._entropy_bonus_enabled:  # the parent logged its own (clipped-only) value: replace it
            self._metrics[mode]["policy_loss"].pop()
        self._metrics[mode]["policy_loss"].append(self.accelerator.gather(policy_loss).nanmean().item())
        if self.up_mode != "off":
            self._recount_clip_ratios(coef_1, advantages, mask, mode, delta=self.args.delta)

        # Capacity and drift on positive-advantage tokens (both rules, whatever up_mode is: A/B comparable).
        sums = up_positive_token_sums(
            per_token_logps,
            old_per_token_logps,
            advantages,
            mask,
            epsilon_high=self.epsilon_high,
            log_ratio=log_ratio,
            guard_bound=self.up_guard_bound,
        )
        self._log_up_sums(sums, mode)
        if self.up_capacity_share is not None and self.up_mode != "off":  # off: the guard acts on nothing
            old_log_p = log_importance_weights(old_per_token_logps, torch.zeros_like(mask), mask, level)
            kept = up_capacity_mask(log_ratio, old_log_p, self.up_capacity_share).expand_as(mask)
            self._log_up_rate(
                "up/capacity_masked_frac",
                ((1 - kept) * (advantages > 0) * mask).sum(),
                ((advantages > 0) * mask).sum(),
                mode,
            )
