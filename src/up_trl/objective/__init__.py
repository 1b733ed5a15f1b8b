"""UP's objective as pure tensor functions: no trainer, no TRL import (a reader of the mathematics starts here).

- `ratios`: the importance ratio r = pi_theta / pi_old and UP's self-anchored r~ = pi_theta / sg(pi_theta);
- `losses`: the parent's clipped surrogate, UP's per-token loss, routing by the sign of A, Probability Capacity,
  the loss aggregations of TRL's loss types (re-exports `ratios` and the positive branch);
- `guards`: the positive branch `up_positive_branch_loss`, the one function every trainer calls, with its optional
  guards (ours, off by default) and their config fields;
- `indicators`: leading indicators of a collapse, from tensors the loss already holds.
"""
