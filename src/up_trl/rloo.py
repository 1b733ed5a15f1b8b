"""UPRLOOTrainer: TRL's RLOOTrainer with UP's asymmetric objective, and nothing else changed.

RLOO's ratio is on the *summed* completion log-probability, one per sequence, clipped, mean over sequences:

    L = mean_i( -min(r_i * A_i, clip(r_i, 1 - eps_low, 1 + eps_high) * A_i) ),   r_i = exp(logp_i - old_logp_i)

UP routes the sequences with A > 0 ("asymmetric"; every sequence for "both") to the self-anchored ratio:

    L_i = -A_i * exp(logp_i - sg(logp_i))    (value -A_i, gradient -A_i * grad logp_i, never clipped)

Same shape as `UPGRPOTrainer`: the parent computes everything on a *copy* of the batch whose routed advantages
are zeroed (its clipped term vanishes there), and UP adds its term on the routed sequences through the same
`.mean()` over sequences. The summed log-probability is recomputed from the per-token log-probabilities the
parent's forward returns (recorded by a hook on `_get_per_token_logps_and_entropies`), with the parent's own
line. `tests/test_trl_contract.py` pins what this relies on in `RLOOTrainer`.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass, field

import torch
from accelerate.logging import get_logger
from trl import RLOOConfig, RLOOTrainer
from trl.trainer.utils import nanmax, nanmin

from .callbacks import NonFiniteGuardCallback
from .losses import UP_MODES, probability_capacity, self_anchored_ratio, up_guard_mask, up_routes
from .trainer import UP_METRICS, UPGRPOTrainer

logger = get_logger(__name__)


@dataclass
class UPRLOOConfig(RLOOConfig):
    r"""RLOOConfig for [`UPRLOOTrainer`]. Every RLOOConfig argument keeps its meaning.

    Args:
        up_mode (`str`, *optional*, defaults to `"asymmetric"`):
            `"asymmetric"` is UP: sequences with a positive advantage use the self-anchored ratio
            exp(logp - sg(logp)) on the summed completion log-probability, never clipped; the others keep RLOO's
            clipped objective (`epsilon`, `epsilon_high`). `"both"` uses the self-anchored ratio for every sign
            (the paper's REINFORCE ablation). `"off"` is exactly RLOOTrainer's objective, for A/B runs.
        up_positive_log_ratio_bound (`float` or `None`, *optional*, defaults to `None`):
            An optional guard (ours, not the paper's): routed sequences with |logp - old_logp| above it get no
            gradient. `None` keeps the paper's objective.
        skip_nonfinite_steps (`bool`, *optional*, defaults to `True`):
            Skip and count optimizer steps with NaN/inf gradients (see `callbacks.NonFiniteGuardCallback`).
        max_consecutive_nonfinite_steps (`int`, *optional*, defaults to `10`):
            Consecutive skipped steps after which a checkpoint is saved and training stops.
    """

    up_mode: str = field(
        default="asymmetric",
        metadata={
            "help": "UP routing: 'asymmetric' (UP: positive-advantage sequences unclipped, self-anchored), 'both' "
            "(unclipped for every sign, the paper's ablation) or 'off' (the parent RLOO objective).",
            "choices": list(UP_MODES),
        },
    )
    up_positive_log_ratio_bound: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): sequences on UP's unclipped branch whose "
            "|logp - old_logp| (summed log-probabilities) exceeds this bound contribute no gradient."
        },
    )
    skip_nonfinite_steps: bool = field(
        default=True,
        metadata={
            "help": "Skip (and count, as up/nonfinite_skipped_steps) an optimizer step whose gradients are NaN or "
            "inf, instead of writing NaN into the weights. Not active under DeepSpeed, whose engine owns the step."
        },
    )
    max_consecutive_nonfinite_steps: int = field(
        default=10,
        metadata={"help": "After this many skipped steps in a row, save a checkpoint and stop training."},
    )

    def __post_init__(self):
        if self.up_mode is False:  # YAML 1.1 reads an unquoted `up_mode: off` as the boolean false
            self.up_mode = "off"
        check_up_mode(self.up_mode)
        if self.up_positive_log_ratio_bound is not None and self.up_positive_log_ratio_bound <= 0:
            raise ValueError(
                f"up_positive_log_ratio_bound={self.up_positive_log_ratio_bound} must be positive (e.g. 0.5), "
                "or None to keep the paper's objective."
            )
        super().__post_init__()


def check_up_mode(up_mode: str) -> None:
    """RLOO has one objective (no `loss_type`) and no fused loss that bypasses `_compute_loss`: only `up_mode`
    itself can be wrong."""
    if up_mode not in UP_MODES:
        raise ValueError(f"up_mode={up_mode!r} is not one of {UP_MODES}: set up_mode='asymmetric' (UP) or 'off'.")


class UPRLOOTrainer(RLOOTrainer):
    """A drop-in replacement for `trl.RLOOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly RLOOTrainer's arguments; `args` may be a [`UPRLOOConfig`] (for `up_mode`) or a plain
    `RLOOConfig` (then `up_mode="asymmetric"`).

    Example:
    ```python
    from up_trl.rloo import UPRLOOConfig, UPRLOOTrainer
    args = UPRLOOConfig(output_dir="out", num_iterations=2, beta=0.0)
    trainer = UPRLOOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    """

    _tag_names = ["trl", "rloo", "up"]
    _name = "UP-RLOO"

    up_recipe: str | None = None  # set by `up-trl train`: named in the model card

    def __init__(self, model, reward_funcs=None, args=None, *pargs, **kwargs):
        if args is None:
            name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "model")
            args = UPRLOOConfig(f"{str(name).rstrip('/').split('/')[-1]}-UP-RLOO")
        self.up_mode = getattr(args, "up_mode", "asymmetric")
        self.up_guard_bound = getattr(args, "up_positive_log_ratio_bound", None)
        check_up_mode(self.up_mode)
        self._up_seen: dict | None = None  # what the parent's forward returns, during one loss call
        super().__init__(model, reward_funcs, args, *pargs, **kwargs)
        self._refuse_zero_step_setups()
        self._nonfinite_guard = None
        if getattr(args, "skip_nonfinite_steps", True) and not self.is_deepspeed_enabled:
            self._nonfinite_guard = NonFiniteGuardCallback(getattr(args, "max_consecutive_nonfinite_steps", 10))
            self.add_callback(self._nonfinite_guard)
        if self.up_mode != "off" and not self.up_is_off_policy:
            logger.warning(
                f"UP (up_mode={self.up_mode!r}) equals its parent objective (RLOO's) in this configuration: "
                "old_logps are computed by the policy being trained just before it is updated, so the ratio is "
                "exactly 1. UP differs only off-policy: set num_iterations > 1, or steps_per_generation > "
                "gradient_accumulation_steps.",
                main_process_only=True,
            )

    # No super() inside: the same check as UPGRPOTrainer's (RLOO has the same sampler and batch arithmetic).
    _refuse_zero_step_setups = UPGRPOTrainer._refuse_zero_step_setups

    @property
    def up_is_off_policy(self) -> bool:
        """True when a batch is used after an optimizer step: RLOO computes `old_logps` at generation (always, with
        the policy being trained), and reuses a generation for steps_per_generation * num_iterations micro-steps."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        return self.args.gradient_accumulation_steps % generate_every != 0

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        """TRL's model card, plus a section that names UP, its settings, the recipe and the final metrics."""
        super().create_model_card(model_name=model_name, dataset_name=dataset_name, tags=tags)
        if not self.is_world_process_zero():
            return
        with open(os.path.join(self.args.output_dir, "README.md"), "a") as card:
            card.write(model_card_section(self))

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._nonfinite_guard is not None and self.model.training:
            logs["up/nonfinite_skipped_steps"] = self._nonfinite_guard.skipped
        super().log(logs, start_time)

    def _calculate_rewards(self, *args, **kwargs):
        """The parent's rewards, plus `up/unscorable_frac`: completions no reward function gave a finite value."""
        rewards_per_func = super()._calculate_rewards(*args, **kwargs)
        unscorable = ~torch.isfinite(rewards_per_func).any(dim=1)
        self._metrics["train" if self.model.training else "eval"]["up/unscorable_frac"].append(
            unscorable.float().mean().item()
        )
        return rewards_per_func

    # Only records what the parent computes inside `_compute_loss` (during generation `_up_seen` is None).
    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if self._up_seen is not None:
            self._up_seen["per_token_logps"] = out[0]
        return out

    def _compute_loss(self, model, inputs):
        advantages = inputs["advantages"]  # (B,): one per sequence
        routes = up_routes(advantages, self.up_mode)
        # A copy, never the buffered batch itself: TRL reuses it when num_iterations > 1.
        parent_inputs = (
            inputs if self.up_mode == "off" else {**inputs, "advantages": advantages.masked_fill(routes, 0)}
        )
        self._up_seen = {}
        try:
            loss = super()._compute_loss(model, parent_inputs)
            per_token_logps = self._up_seen["per_token_logps"]
        finally:
            self._up_seen = None

        mode = "train" if self.model.training else "eval"
        logps = (per_token_logps * inputs["completion_mask"]).sum(1)  # the parent's line: summed completion logp
        old_logps = inputs["old_logps"]
        log_ratio = logps.detach() - old_logps
        if self.up_mode != "off":
            # Each sequence is one entry of UP's token-level ratio: exp(logp - sg(logp)) on the summed logp.
            anchored = -self_anchored_ratio(logps, torch.ones_like(logps)) * advantages
            if self.up_guard_bound is not None:
                anchored = anchored * up_guard_mask(log_ratio, self.up_guard_bound)
            loss = loss + torch.where(routes, anchored, 0.0).mean()  # RLOO's normalisation: mean over sequences
            self._replace_clip_metrics(torch.exp(log_ratio), advantages, mode)
        self._log_up_metrics(logps.detach(), old_logps, log_ratio, advantages, mode)
        return loss

    @torch.no_grad()
    def _replace_clip_metrics(self, coef_1, advantages, mode):
        """The parent logged clip_ratio/* on the zeroed copy: replace them by its own formulas on the real
        advantages (so a UP run and its `off` twin report the same quantity: how often the clip would bite)."""
        is_low_clipped = (coef_1 < 1 - self.epsilon_low) & (advantages < 0)
        is_high_clipped = (coef_1 > 1 + self.epsilon_high) & (advantages > 0)
        low = self.accelerator.gather(is_low_clipped.float())
        high = self.accelerator.gather(is_high_clipped.float())
        region = self.accelerator.gather((is_low_clipped | is_high_clipped).float())
        for name, value in (
            ("clip_ratio/low_mean", low.nanmean()),
            ("clip_ratio/low_min", nanmin(low)),
            ("clip_ratio/high_mean", high.nanmean()),
            ("clip_ratio/high_max", nanmax(high)),
            ("clip_ratio/region_mean", region.nanmean()),
        ):
            self._metrics[mode][name][-1] = value.item()

    @torch.no_grad()
    def _log_up_metrics(self, logps, old_logps, log_ratio, advantages, mode):
        """UP_METRICS at RLOO's level, the sequence: each entry below is a completion, its probability the product
        over its tokens (RLOO keeps no per-token old log-probabilities). Both capacities whatever up_mode is."""
        positive = (advantages > 0).float()
        cap_clipped = probability_capacity(logps, old_logps, epsilon_high=self.epsilon_high, rule="clipped")
        cap_up = probability_capacity(logps, rule="up")
        would_clip = (log_ratio.exp() > 1 + self.epsilon_high).float()
        guarded = self.up_guard_bound is not None
        sums = torch.stack(
            [
                positive.sum(),
                torch.tensor(float(positive.numel()), device=positive.device),
                (cap_clipped * positive).sum(),
                (cap_up * positive).sum(),
                (would_clip * positive).sum(),
                (log_ratio.abs() * positive).sum(),
            ]
            + ([((1 - up_guard_mask(log_ratio, self.up_guard_bound)) * positive).sum()] if guarded else [])
        )
        sums = self.accelerator.reduce(sums, reduction="sum").tolist()
        n_pos, n_all = sums[0], sums[1]

        def ratio(num, den):
            return num / den if den > 0 else float("nan")  # NaN is skipped by the parent's `log`

        values = [ratio(n_pos, n_all)] + [ratio(s, n_pos) for s in sums[2:]]
        names = UP_METRICS + (("up/guard_masked_frac",) if guarded else ())
        for name, value in zip(names, values):
            self._metrics[mode][name].append(value)


UP_CITATION = textwrap.dedent("""\
    @article{up2026,
        title        = {{UP: Unbounded Positive Asymmetric Optimization}},
        year         = 2026,
        eprint       = {arXiv:2607.06987},
    }""")


def model_card_section(trainer: UPRLOOTrainer) -> str:
    """Markdown naming UP on RLOO, its settings, the recipe and the last logged metrics."""
    args = trainer.args
    settings = {
        "up_mode": trainer.up_mode,
        "epsilon (low)": args.epsilon,
        "epsilon_high": trainer.epsilon_high,
        "beta": args.beta,
        "num_iterations": args.num_iterations,
        "steps_per_generation": args.steps_per_generation,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "off-policy (UP differs from its parent)": trainer.up_is_off_policy,
        "recipe": trainer.up_recipe or "Python API",
    }
    final = {}
    for record in trainer.state.log_history:
        for key in ("reward", "entropy") + UP_METRICS:
            if isinstance(record.get(key), (int, float)):
                final[key] = record[key]
    lines = [
        "",
        "## UP: Unbounded Positive Asymmetric Optimization (on RLOO)",
        "",
        "Trained with [up-trl](https://pypi.org/project/up-trl/) `UPRLOOTrainer`: for completions with a positive "
        "advantage the ratio on the summed completion log-probability is the self-anchored exp(logp - sg(logp)) "
        "(never clipped); for the others RLOO's clipped objective is unchanged "
        "([arXiv 2607.06987](https://arxiv.org/abs/2607.06987)). The up/* metrics are per completion.",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in settings.items()],
        "",
        f"Final metrics (last logged values, step {trainer.state.global_step}):",
        "",
        "| metric | value |",
        "|---|---|",
        *[f"| {k} | {v:.4g} |" for k, v in final.items()],
        "",
        "```bibtex",
        UP_CITATION,
        "```",
        "",
    ]
    return "\n".join(lines)
