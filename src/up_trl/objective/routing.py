"""UP's routing by the sign of A and what the trainers measure of it: pure tensor functions, no TRL import (the
routes, Probability Capacity, the sums behind the `up/*` metrics; the losses written from the paper: `paper_losses`).

UP (Unbounded Positive Asymmetric Optimization, arXiv 2607.06987) splits the clipped policy objective
of GRPO / DAPO / GSPO on the sign of the advantage A:

    A > 0:   L = -A * r~,   r~ = pi_theta / sg(pi_theta)                     (self-anchored ratio)
             value 1, gradient -A * grad log pi_theta, never clipped, independent of pi_old.
    A <= 0:  L = -min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A),  r = pi_theta / pi_old
             (the parent's clipped objective; TRL's `delta` caps r from above: the dual clip).

At sequence level (GSPO) both ratios are geometric means over the completion (`ratios`).
Shapes follow TRL: log-probs and `mask` are (B, T), `advantages` (B,) or (B, T); token level returns (B, T),
sequence level (B, 1) (TRL broadcasts it against the mask when it aggregates).
"""

from __future__ import annotations

from typing import Literal

import torch

UpMode = Literal["asymmetric", "both", "off"]
UP_MODES: tuple[str, ...] = ("asymmetric", "both", "off")


def up_routes(advantages: torch.Tensor, up_mode: UpMode = "asymmetric") -> torch.Tensor:
    """Which entries take the self-anchored (unclipped) branch: A > 0 for "asymmetric", all for "both"
    (the paper's unbounded-on-both-signs REINFORCE ablation), none for "off" (the parent objective)."""
    if up_mode == "asymmetric":
        return advantages > 0
    if up_mode == "both":
        return torch.ones_like(advantages, dtype=torch.bool)
    if up_mode == "off":
        return torch.zeros_like(advantages, dtype=torch.bool)
    raise ValueError(f"Unknown up_mode {up_mode!r}: use one of {UP_MODES}.")


def probability_capacity(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor | None = None,
    *,
    epsilon_high: float | None = None,
    rule: Literal["clipped", "up"] = "clipped",
) -> torch.Tensor:
    """Probability Capacity of a positive token (paper, Eq. 11): how much pi_theta may still grow in this
    rollout batch before the objective stops pushing it.

        clipped:  Cap = max(0, min(1, (1 + eps_high) * pi_old) - pi_theta)
        up:       Cap = 1 - pi_theta

    A rare correct token (pi_old = 0.01, eps_high = 0.2) may gain at most 0.002 under the clip, 0.99 under UP:

    >>> old = torch.log(torch.tensor([0.01])); logp = old.clone()
    >>> probability_capacity(logp, old, epsilon_high=0.2)
    tensor([0.0020])
    >>> probability_capacity(logp, rule="up")
    tensor([0.9900])
    """
    pi_theta = per_token_logps.detach().exp()
    if rule == "up":
        return 1.0 - pi_theta
    if rule != "clipped":
        raise ValueError(f"Unknown capacity rule {rule!r}: use 'clipped' or 'up'.")
    if old_per_token_logps is None or epsilon_high is None:
        raise ValueError("The clipped capacity needs old_per_token_logps and epsilon_high.")
    ceiling = torch.clamp((1.0 + epsilon_high) * old_per_token_logps.detach().exp(), max=1.0)
    return torch.clamp(ceiling - pi_theta, min=0.0)


def up_positive_token_sums(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon_high: float,
    log_ratio: torch.Tensor | None = None,
) -> torch.Tensor:
    """Token-level sums behind the `up/*` metrics (no gradient), over positive-advantage tokens (A > 0, mask = 1):

        [#positive, #valid, sum Cap_clipped, sum Cap_up, sum 1{r > 1 + eps_high}, sum |log r_t|]

    The first over the second is `up/positive_token_frac`; the others over the first `up/capacity_clipped_mean`,
    `up/capacity_up_mean`, `up/would_clip_frac`, `up/positive_abs_log_ratio_mean`. `advantages` broadcasts against
    the log-probs; `log_ratio` is the log r the clip sees (per token by default, GSPO's (B, 1) at sequence level).

    >>> logp = torch.log(torch.tensor([0.5, 0.5, 0.2])); old = torch.log(torch.tensor([0.25, 0.5, 0.2]))
    >>> up_positive_token_sums(logp, old, torch.tensor([1.0, 1.0, -1.0]), torch.ones(3), epsilon_high=0.2)
    tensor([2.0000, 3.0000, 0.1000, 1.0000, 1.0000, 0.6931])
    """
    per_token_logps, old_per_token_logps = per_token_logps.detach(), old_per_token_logps.detach()
    positive = ((advantages > 0) & mask.bool()).float().expand_as(per_token_logps)
    per_token_log_ratio = per_token_logps - old_per_token_logps
    log_ratio = per_token_log_ratio if log_ratio is None else log_ratio.detach()
    terms = [
        probability_capacity(per_token_logps, old_per_token_logps, epsilon_high=epsilon_high, rule="clipped"),
        probability_capacity(per_token_logps, rule="up"),
        (log_ratio.exp() > 1 + epsilon_high).float().expand_as(positive),
        per_token_log_ratio.abs(),
    ]
    return torch.stack([positive.sum(), mask.float().sum()] + [(term * positive).sum() for term in terms])
