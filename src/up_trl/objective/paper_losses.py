"""The reference losses, written from the paper: the parent's clipped surrogate as TRL computes it, and UP's two
branches. The trainers do not call them (they run the parent's own loss on `ratios.anchored_old_logps`); the
closed-form tests, the docs and the examples compare the trainers against them. Pure tensor functions, no TRL import.
"""

from __future__ import annotations

import torch

from .guards import rare_mask
from .ratios import ImportanceSamplingLevel, as_2d, log_importance_weights, self_anchored_ratio
from .routing import UpMode, up_routes


def clipped_surrogate_loss(
    coef_1: torch.Tensor,
    advantages: torch.Tensor,
    *,
    epsilon_low: float,
    epsilon_high: float,
    delta: float | None = None,
) -> torch.Tensor:
    """The parent's (PPO / GRPO / DAPO / GSPO) per-token loss, exactly as TRL computes it.

        L = -min(min(r, delta) * A, clip(r, 1 - eps_low, 1 + eps_high) * A)

    `delta` (TRL's dual clip) only bites for A < 0 (for A > 0 the clip already caps r at 1 + eps_high < delta):

        A < 0:   L = |A| * clip(r, 1 - eps_low, max(delta, 1 + eps_high))         (delta = inf when None)

    so eps_high acts on negative tokens only when delta < 1 + eps_high: under UP, the only place it still acts.

    >>> clipped_surrogate_loss(torch.tensor([[1.5, 0.5]]), torch.tensor([1.0]), epsilon_low=0.2, epsilon_high=0.2)
    tensor([[-1.2000, -0.5000]])
    """
    advantages = as_2d(advantages)
    coef_2 = torch.clamp(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    if delta is not None:
        coef_1 = torch.clamp(coef_1, max=delta)
    return -torch.min(coef_1 * advantages, coef_2 * advantages)


def up_per_token_loss(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon_low: float,
    epsilon_high: float,
    delta: float | None = None,
    importance_sampling_level: ImportanceSamplingLevel = "token",
    up_mode: UpMode = "asymmetric",
    positive_min_prob: float | None = None,
) -> torch.Tensor:
    """The unnormalised UP loss to minimise, per token (B, T) or per sequence (B, 1), the trainers' reference.

        L = -A * r~                                                 where routed (A > 0 for "asymmetric")
        L = -min(min(r, delta) * A, clip(r, 1-eps_low, 1+eps_high) * A)   elsewhere

    `positive_min_prob` (the rare clip, ours) keeps the clipped loss on routed entries that were rare when sampled
    (:func:`up_trl.objective.guards.rare_mask`). No gradient reaches `old_per_token_logps` through the routed branch.

    >>> logp = torch.log(torch.tensor([[0.5, 0.5]])); old = torch.log(torch.tensor([[0.25, 0.25]]))
    >>> up_per_token_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 2), epsilon_low=0.2, epsilon_high=0.2)
    tensor([[-1., -1.]])
    >>> up_per_token_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 2), epsilon_low=0.2, epsilon_high=0.2,
    ...                   up_mode="off")
    tensor([[-1.2000, -1.2000]])
    """
    coef_1 = torch.exp(log_importance_weights(per_token_logps, old_per_token_logps, mask, importance_sampling_level))
    parent = clipped_surrogate_loss(
        coef_1, advantages, epsilon_low=epsilon_low, epsilon_high=epsilon_high, delta=delta
    )
    if up_mode == "off":
        return parent
    advantages = as_2d(advantages)
    routes = up_routes(advantages, up_mode)
    if positive_min_prob is not None:
        routes = routes & ~rare_mask(old_per_token_logps, mask, positive_min_prob, importance_sampling_level)
    anchored = -self_anchored_ratio(per_token_logps, mask, importance_sampling_level) * advantages
    return torch.where(routes, anchored, parent)
