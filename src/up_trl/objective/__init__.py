"""UP's objective as pure tensor functions: no trainer, no TRL import (a reader of the mathematics starts here).

- `ratios`: r = pi_theta / pi_old, UP's r~ = pi_theta / sg(pi_theta) and `anchored_old_logps`, the substitution
  pi_old := sg(pi_theta) on the routed entries that the trainers apply;
- `routing`: routing by the sign of A, Probability Capacity and the `up/*` metric sums, what the trainers call;
- `paper_losses`: the losses written from the paper, which the closed-form tests compare the trainers with;
- `guards`: the rare clip (`up_positive_min_prob`), UP's one optional guard; `indicators`: collapse indicators.
"""
