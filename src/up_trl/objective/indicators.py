"""Leading indicators of a collapse, from tensors the loss already holds (pure functions, no gradient, no TRL).

Two failures that end alike (entropy high, reward gone) differ before (docs/collapse.md): an entropy runaway from rare
tokens of positive completions, and a negative-branch shock leaving every advantage 0. The opt-in part
`run.parts.LeadingIndicatorsMixin` (which `up-trl train` attaches) logs, per call:

    up/logp_adv_cov                     Cov(log pi_theta, A) over the batch's tokens (Cui et al., arXiv 2505.22617:
                                        the entropy falls when it is positive and rises when it is negative)
    up/positive_tokens                  tokens (RLOO: completions) with A > 0 in the call, summed over ranks
    up/negative_tokens                  ... with A < 0
    up/negative_clipped_log_ratio_mean  mean log r of negative tokens past the clip, r < 1 - epsilon_low (how far
                                        the negative branch has pushed what it samples; NaN when none is clipped)
"""

from __future__ import annotations

import torch

INDICATOR_METRICS = (
    "up/logp_adv_cov",
    "up/positive_tokens",
    "up/negative_tokens",
    "up/negative_clipped_log_ratio_mean",
)


@torch.no_grad()
def leading_indicator_sums(
    per_token_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    log_ratio: torch.Tensor,
    *,
    epsilon_low: float,
) -> torch.Tensor:
    """Sums behind `INDICATOR_METRICS` over the tokens with mask = 1, additive over ranks and micro-batches:

        [n, sum log p, sum A, sum A log p, #(A > 0), #(A < 0), sum log r over clipped negatives, #clipped negatives]

    `advantages` and `log_ratio` broadcast against the log-probs ((B,) or (B, T) alike); `indicator_rates` turns the
    sums into the metrics.

    >>> logp = torch.log(torch.tensor([0.5, 0.25, 0.5])); log_r = torch.tensor([0.0, -0.5, 0.1])
    >>> leading_indicator_sums(logp, torch.tensor([1.0, -1.0, -1.0]), torch.ones(3), log_r, epsilon_low=0.2)
    tensor([ 3.0000, -2.7726, -1.0000,  1.3863,  1.0000,  2.0000, -0.5000,  1.0000])
    """
    logp = per_token_logps.detach().float()
    mask = mask.float().expand_as(logp)
    logp = logp.masked_fill(mask == 0, 0.0)  # padding may hold -inf
    advantages = advantages.detach().float().expand_as(logp)
    log_ratio = log_ratio.detach().float().expand_as(logp)
    negative = (advantages < 0).float() * mask
    clipped = negative * (log_ratio.exp() < 1 - epsilon_low).float()
    return torch.stack(
        [
            mask.sum(),
            (logp * mask).sum(),
            (advantages * mask).sum(),
            (advantages * logp * mask).sum(),
            ((advantages > 0).float() * mask).sum(),
            negative.sum(),
            (log_ratio.masked_fill(clipped == 0, 0.0) * clipped).sum(),
            clipped.sum(),
        ]
    )


def indicator_rates(sums: list[float]) -> dict[str, tuple[float, float]]:
    """`INDICATOR_METRICS` from `leading_indicator_sums` (summed over ranks) as (numerator, denominator) pairs, the
    value being their ratio (NaN where the denominator is 0): the form the trainers' `_up_rate` logs.

    >>> rates = indicator_rates([3.0, -2.7726, -1.0, 1.3863, 1.0, 2.0, -0.5, 1.0])
    >>> round(rates["up/logp_adv_cov"][0], 4), rates["up/negative_clipped_log_ratio_mean"]
    (0.154, (-0.5, 1.0))
    """
    n, sum_logp, sum_adv, sum_adv_logp, n_pos, n_neg, sum_clipped_log_r, n_clipped = sums
    cov = sum_adv_logp / n - (sum_logp / n) * (sum_adv / n) if n > 0 else 0.0
    pairs = ((cov, float(n > 0)), (n_pos, 1.0), (n_neg, 1.0), (sum_clipped_log_r, n_clipped))
    return dict(zip(INDICATOR_METRICS, pairs))
