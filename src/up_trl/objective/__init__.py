"""UP's objective as pure tensor functions: no trainer, no TRL import (a reader of the mathematics starts here).

- `ratios`: the importance ratio r = pi_theta / pi_old, UP's self-anchored r~ = pi_theta / sg(pi_theta), and
  `anchored_old_logps`, the substitution pi_old := sg(pi_theta) on the routed entries that the trainers apply;
- `losses`: the parent's clipped surrogate, the reference `up_per_token_loss` (the paper's two branches), routing by
  the sign of A, Probability Capacity and the sums behind the `up/*` metrics (re-exports `ratios`);
- `guards`: the rare clip (`up_positive_min_prob`), UP's one optional guard, and its config field;
- `indicators`: leading indicators of a collapse, from tensors the loss already holds.
"""
