"""UP's objective as pure tensor functions: no trainer, no TRL import (a reader of the mathematics starts here).

- `ratios`: the importance ratio r = pi_theta / pi_old, UP's self-anchored r~ = pi_theta / sg(pi_theta), and
  `anchored_old_logps`, the substitution pi_old := sg(pi_theta) on the routed entries that the trainers apply;
- `losses`: routing by the sign of A, Probability Capacity and the sums behind the `up/*` metrics, what the trainers
  call (re-exports `ratios`);
- `reference`: the losses written from the paper, which the trainers do not call and the closed-form tests compare
  them with: the parent's clipped surrogate and `up_per_token_loss` (UP's two branches);
- `guards`: the rare clip (`up_positive_min_prob`), UP's one optional guard, and its config field;
- `indicators`: leading indicators of a collapse, from tensors the loss already holds.
"""
