"""The rare clip, UP's one optional guard (ours, off by default, not in the paper): its config field and tensors.

    up_positive_min_prob    routed entries with pi_old < it keep pi_old, so the parent's clip    (`rare_mask`)

Rare tokens of positive completions drove UP's entropy runaway, and this guard removed it (docs/collapse.md, which
also names the last commit with the four other guards measured there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .ratios import ImportanceSamplingLevel, log_importance_weights

# The rare clip alone, the collapse study's recommendation for DAPO and GRPO (docs/collapse.md, PRE-REGISTRATION 3),
# which replaced its second study's "+ safe" bundle (the rare clip and beta 0.05, the name kept from then); a recipe's
# beta (KL to the reference) stays its parent's.
SAFE_UP = {"up_positive_min_prob": 0.05}


@dataclass
class GuardConfigMixin:
    """The rare clip's field in every UP config (`trainers.shared.UPConfigMixin` extends it)."""

    up_positive_min_prob: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): positive-advantage tokens that were rare when "
            "sampled, pi_old < this (sequence level: the geometric-mean token probability), keep the parent's "
            "clipped objective; only the others get UP's unclipped branch. In (0, 1), e.g. 0.05. See "
            "docs/collapse.md."
        },
    )

    def check_guards(self) -> None:
        """Raise a ValueError naming the field and its range when it is set out of (0, 1) (NaN and inf too)."""
        value = self.up_positive_min_prob
        if value is not None and not (math.isfinite(value) and 0.0 < value < 1.0):
            raise ValueError(
                f"up_positive_min_prob={value} must be in (0, 1) (docs/collapse.md gives the values measured), or "
                "None to keep the paper's objective."
            )


def is_rare(old_log_probs: torch.Tensor, min_prob: float) -> torch.Tensor:
    """The rare-token rule on log-probabilities at sampling time (per token, or a sequence's mean): log pi_old <
    log `min_prob`. Every trainer's rare clip applies it (`rare_mask` for GRPO's (B, T) layout).

    >>> is_rare(torch.log(torch.tensor([0.01, 0.05, 0.2])), 0.05)
    tensor([ True, False, False])
    """
    return old_log_probs < math.log(min_prob)


def rare_mask(
    old_per_token_logps: torch.Tensor,
    mask: torch.Tensor,
    min_prob: float,
    importance_sampling_level: ImportanceSamplingLevel = "token",
) -> torch.Tensor:
    """The rare clip: True where the entry was rare when sampled, pi_old < `min_prob` (sequence level: the
    geometric-mean token probability, (B, 1)). Such entries keep pi_old, hence the parent's clip, even when routed
    (under "both", rare negative entries too): only tokens already likely get UP's unclipped branch.

    >>> rare_mask(torch.log(torch.tensor([[0.01, 0.2]])), torch.ones(1, 2), 0.05)
    tensor([[ True, False]])
    """
    old = old_per_token_logps.detach().masked_fill(mask == 0, 0.0)  # padding may hold -inf
    old_log_p = log_importance_weights(old, torch.zeros_like(old), mask, importance_sampling_level)
    return is_rare(old_log_p, min_prob)
