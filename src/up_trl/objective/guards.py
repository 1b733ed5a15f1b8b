"""The optional guards of UP's positive branch (ours, off by default, not in the paper): their config fields and
their pure tensor functions. None of them changes UP unless set; docs/collapse.md measures each one.

    up_positive_log_ratio_bound    routed entries with |log r| above it get no gradient  (`up_guard_mask`)
    up_positive_capacity_share     ... once pi_theta - pi_old > share * (1 - pi_old)     (`up_capacity_mask`)
    up_positive_kl_coef            + coef * KL(pi_old || pi_theta) on routed entries     (`up_positive_branch_loss`)
    up_entropy_fallback_threshold  routed entries: the parent's clip while entropy > it  (`entropy_fallback_active`)
    up_positive_min_prob           positive entries with pi_old < it: the parent's clip  (`rare_mask`)

The last is the one the collapse study found to remove the entropy runaway; with TRL's `beta=0.05` (`SAFE_UP`) it met
the study's goal for DAPO and GRPO on fresh seeds, and the up_dapo and up_grpo recipes switch both on
(docs/collapse.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .ratios import ImportanceSamplingLevel, _as_2d, log_importance_weights, self_anchored_ratio

# "UP + safe", the collapse study's recommendation for DAPO and GRPO (docs/collapse.md): the rare clip for the entropy
# runaway and TRL's KL to the reference for the dead state. The up_dapo and up_grpo recipes set exactly these.
SAFE_UP = {"up_positive_min_prob": 0.05, "beta": 0.05}

GUARD_FIELDS = (
    "up_positive_log_ratio_bound",
    "up_positive_capacity_share",
    "up_positive_kl_coef",
    "up_entropy_fallback_threshold",
    "up_positive_min_prob",
)


@dataclass
class GuardConfigMixin:
    """The guard fields of every UP config (`trainers.shared.UPConfigMixin` extends it); `check_guards` validates
    them."""

    up_positive_log_ratio_bound: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): entries on UP's unclipped branch whose "
            "|log pi_theta - log pi_old| exceeds this bound contribute no gradient (sequence level: the sequence's "
            "log ratio). Bounds the drift UP ignores, e.g. 0.5."
        },
    )
    up_positive_capacity_share: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): a positive-advantage entry on UP's unclipped "
            "branch gets no gradient once its probability has gained more than this share of its capacity at "
            "sampling time, pi_theta - pi_old > share * (1 - pi_old) (sequence level: the geometric-mean token "
            "probability). In (0, 1], e.g. 0.1. See docs/collapse.md."
        },
    )
    up_positive_kl_coef: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): adds coef * KL(pi_old || pi_theta) (k3 "
            "estimate r - 1 - log r) on the entries of UP's unclipped branch, e.g. 0.1. See docs/collapse.md."
        },
    )
    up_positive_min_prob: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): positive-advantage tokens that were rare when "
            "sampled, pi_old < this (sequence level: the geometric-mean token probability), keep the parent's "
            "clipped objective; only the others get UP's unclipped branch. In (0, 1), e.g. 0.05. See "
            "docs/collapse.md."
        },
    )
    up_entropy_fallback_threshold: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): while the mean entropy of a batch's "
            "completion tokens is above this many nats, UP's positive entries take the parent's clipped loss "
            "(GRPOTrainer only). See docs/collapse.md."
        },
    )

    def check_guards(self) -> None:
        """Raise a ValueError naming the field and its range when a guard is set out of range (NaN and inf too)."""
        for name, low, high, high_ok in (
            ("up_positive_log_ratio_bound", 0.0, math.inf, False),
            ("up_positive_capacity_share", 0.0, 1.0, True),
            ("up_positive_kl_coef", 0.0, math.inf, False),
            ("up_positive_min_prob", 0.0, 1.0, False),
            ("up_entropy_fallback_threshold", 0.0, math.inf, False),
        ):
            value = getattr(self, name)
            if value is None:
                continue
            finite_in_range = math.isfinite(value) and low < value and (value <= high if high_ok else value < high)
            if not finite_in_range:
                wanted = "a finite number above 0" if high == math.inf else f"in (0, 1{']' if high_ok else ')'}"
                raise ValueError(
                    f"{name}={value} must be {wanted} (docs/collapse.md gives the values measured), or None to keep "
                    "the paper's objective."
                )


def up_positive_branch_loss(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    importance_sampling_level: ImportanceSamplingLevel = "token",
    positive_log_ratio_bound: float | None = None,
    positive_capacity_share: float | None = None,
    positive_kl_coef: float | None = None,
) -> torch.Tensor:
    """UP's routed-branch loss, the one every trainer uses: per token (B, T) or per sequence (B, 1) in GRPO's layout,
    or one entry per completion (RLOO) or per packed token (async GRPO) when the inputs are 1-D, with the optional
    guards (ours, off by default, not in the paper); with none set it is the paper's -A * r~.

        L = -A * r~ * g  +  c * (r - 1 - log r)

        g = 1{|log r| <= positive_log_ratio_bound}                     (:func:`up_guard_mask`)
          * 1{pi_theta - pi_old <= share * (1 - pi_old)}               (:func:`up_capacity_mask`)
        c = positive_kl_coef:  r - 1 - log r is the k3 estimate of KL(pi_old || pi_theta) on a token sampled from
            pi_old (>= 0, zero at r = 1; gradient c * (r - 1) * grad log pi_theta: pulls back whichever way r drifted)

    r = pi_theta / pi_old per token, or per sequence (GSPO's geometric mean) at sequence level. The KL term carries
    no advantage; the caller keeps this loss only on the routed entries (A > 0 under "asymmetric", every entry under
    "both"), so the term is added there and nowhere else.

    >>> logp = torch.log(torch.tensor([[0.5, 0.5]])); old = torch.log(torch.tensor([[0.25, 0.45]]))
    >>> up_positive_branch_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 2), positive_capacity_share=0.2)
    tensor([[-0., -1.]])
    >>> up_positive_branch_loss(logp[0], old[0], torch.tensor([1.0, -2.0]), torch.ones(2))  # 1-D: entry by entry
    tensor([-1.,  2.])
    """
    advantages = _as_2d(advantages) if per_token_logps.dim() == 2 else advantages  # (B,) against (B, T) rows
    anchored = -self_anchored_ratio(per_token_logps, mask, importance_sampling_level) * advantages
    if positive_log_ratio_bound is None and positive_capacity_share is None and positive_kl_coef is None:
        return anchored
    log_r = log_importance_weights(per_token_logps, old_per_token_logps, mask, importance_sampling_level)
    if positive_log_ratio_bound is not None:
        anchored = anchored * up_guard_mask(log_r, positive_log_ratio_bound)
    if positive_capacity_share is not None:
        old_log_p = log_importance_weights(
            old_per_token_logps, torch.zeros_like(old_per_token_logps), mask, importance_sampling_level
        )
        anchored = anchored * up_capacity_mask(log_r, old_log_p, positive_capacity_share)
    if positive_kl_coef is not None:
        anchored = anchored + positive_kl_coef * (torch.exp(log_r) - 1 - log_r)
    return anchored


def up_guard_mask(log_importance_weights: torch.Tensor, bound: float) -> torch.Tensor:
    """An optional guard for UP's unclipped branch (ours, off by default): keep an entry only while the policy has
    drifted less than `bound` from the one that sampled it, |log pi_theta - log pi_old| <= bound (per token, or
    per sequence at sequence level). Returns a 0/1 float mask without gradient.

    >>> up_guard_mask(torch.tensor([[0.1, -0.5, 2.0]]), bound=0.4)
    tensor([[1., 0., 0.]])
    """
    return (log_importance_weights.detach().abs() <= bound).float()


def up_capacity_mask(log_importance_weights: torch.Tensor, old_log_probs: torch.Tensor, share: float) -> torch.Tensor:
    """The capacity guard (ours, off by default), in the paper's terms: a positive entry keeps its gradient while its
    probability has gained at most `share` of its Probability Capacity under UP at sampling time, 1 - pi_old:

        keep  <=>  pi_theta - pi_old <= share * (1 - pi_old)  <=>  r <= 1 + share * (1 - pi_old) / pi_old

    so a rare token may still grow many-fold in one rollout batch (pi_old = 0.01, share = 0.1: up to 0.109, r <= 10.9,
    where the clip stops at 1 + eps_high) and a likely one hardly (pi_old = 0.9: up to 0.91, r <= 1.011). At sequence
    level both arguments are per-sequence means of log-probabilities (GSPO's geometric-mean token probability).
    Returns a 0/1 float mask without gradient.

    >>> up_capacity_mask(torch.log(torch.tensor([5.0, 20.0, 1.02])), torch.log(torch.tensor([0.01, 0.01, 0.9])), 0.1)
    tensor([1., 0., 0.])
    """
    pi_old = old_log_probs.detach().exp()
    gain = pi_old * (log_importance_weights.detach().exp() - 1)  # pi_theta - pi_old
    return (gain <= share * (1 - pi_old)).float()


def is_rare(old_log_probs: torch.Tensor, min_prob: float) -> torch.Tensor:
    """The rare-token rule on log-probabilities at sampling time (per token, or a sequence's mean): log pi_old <
    log `min_prob`. Every trainer's rare-token guard applies it (`rare_mask` for GRPO's (B, T) layout).

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
    """The rare-token guard (ours, off by default): True where the entry was rare when sampled, pi_old < `min_prob`
    (sequence level: the geometric-mean token probability, (B, 1)). Such entries keep the parent's clipped objective
    even when routed (A > 0 under "asymmetric"; under "both" rare negative entries too), so only tokens that were
    already likely get UP's unclipped branch. On the collapse study's stress task (docs/collapse.md), rare tokens
    inside positive completions drove UP's entropy runaway and this guard removed it; it did not meet the study's
    goal everywhere.

    >>> rare_mask(torch.log(torch.tensor([[0.01, 0.2]])), torch.ones(1, 2), 0.05)
    tensor([[ True, False]])
    """
    old = old_per_token_logps.detach().masked_fill(mask == 0, 0.0)  # padding may hold -inf
    old_log_p = log_importance_weights(old, torch.zeros_like(old), mask, importance_sampling_level)
    return is_rare(old_log_p, min_prob)


def entropy_fallback_active(entropies: torch.Tensor, mask: torch.Tensor, threshold: float) -> bool:
    """The entropy-triggered fallback (ours, off by default): True when the policy's mean entropy over the batch's
    completion tokens, sum(H * m) / sum(m), is above `threshold` nats; UP's routed entries then take the parent's
    clipped loss for this batch (:func:`up_trl.objective.losses.up_per_token_loss` with `positive_fallback=True`). In a
    trainer "the batch" is one micro-batch on one rank: under several processes the ranks decide apart.

    >>> entropy_fallback_active(torch.tensor([[2.0, 4.0, 9.0]]), torch.tensor([[1.0, 1.0, 0.0]]), threshold=2.5)
    True
    """
    mask = mask.float()
    return bool((entropies.detach() * mask).sum() / mask.sum().clamp(min=1.0) > threshold)
