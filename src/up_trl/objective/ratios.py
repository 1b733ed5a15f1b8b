"""UP's two ratios and the one substitution that turns the first into the second: pure tensors.

    r  = pi_theta / pi_old       (the parent's importance ratio; `log_importance_weights` gives log r)
    r~ = pi_theta / sg(pi_theta) (UP's self-anchored ratio: value 1, gradient grad log pi_theta)

`anchored_old_logps` is UP as the trainers apply it: pi_old := sg(pi_theta) on the routed entries, so the parent's
own loss computes r~ there and r elsewhere. At sequence level (GSPO) both are exp of the masked mean log-ratio.
"""

from __future__ import annotations

from typing import Literal

import torch

ImportanceSamplingLevel = Literal["token", "sequence"]


def as_2d(advantages: torch.Tensor) -> torch.Tensor:
    """Advantages as (B, 1) per sequence, or (B, T) per token as given."""
    return advantages.unsqueeze(1) if advantages.dim() == 1 else advantages


def log_importance_weights(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor,
    mask: torch.Tensor,
    importance_sampling_level: ImportanceSamplingLevel = "token",
) -> torch.Tensor:
    """log r: token level `log pi_theta - log pi_old` (B, T); sequence level its masked mean (B, 1).

    >>> logp = torch.tensor([[-1.0, -2.0]]); old = torch.tensor([[-1.5, -2.0]])
    >>> log_importance_weights(logp, old, torch.ones(1, 2), "sequence")
    tensor([[0.2500]])
    """
    log_ratio = per_token_logps - old_per_token_logps
    if importance_sampling_level == "token":
        return log_ratio
    if importance_sampling_level == "sequence":
        return ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    raise ValueError(f"Unknown importance_sampling_level {importance_sampling_level!r}: use 'token' or 'sequence'.")


def anchored_old_logps(old_logps: torch.Tensor, logps: torch.Tensor, routes: torch.Tensor) -> torch.Tensor:
    """pi_old with UP's anchor: sg(log pi_theta) on the routed entries, log pi_old elsewhere (`routes` broadcasts
    against both: (B, 1) routes a whole sequence, (B, T) single tokens, (B,) RLOO's summed log-probabilities).

    A loss built on log r = log pi_theta - anchored then has r = r~ on the routed entries (value 1, inside every clip
    band) and the usual r elsewhere: UP is the parent's loss with this pi_old. No gradient reaches pi_old.

    >>> logp = torch.tensor([[-0.5, -3.0]], requires_grad=True); old = torch.tensor([[-1.0, -1.0]])
    >>> anchored = anchored_old_logps(old, logp, torch.tensor([[True, False]]))
    >>> torch.exp(logp - anchored)
    tensor([[1.0000, 0.1353]], grad_fn=<ExpBackward0>)
    """
    return torch.where(routes, logps.detach(), old_logps)


def self_anchored_ratio(
    per_token_logps: torch.Tensor,
    mask: torch.Tensor,
    importance_sampling_level: ImportanceSamplingLevel = "token",
) -> torch.Tensor:
    """UP's positive-branch ratio r~ = pi_theta / sg(pi_theta) (paper, Sec. 3): value 1, gradient grad log pi_theta
    (sequence level: its mean over t), so -A * r~ has the REINFORCE gradient -A * grad log pi_theta.

    >>> logp = torch.tensor([[-0.5, -3.0]], requires_grad=True)
    >>> self_anchored_ratio(logp, torch.ones(1, 2))
    tensor([[1., 1.]], grad_fn=<ExpBackward0>)
    """
    return torch.exp(
        log_importance_weights(per_token_logps, per_token_logps.detach(), mask, importance_sampling_level)
    )
