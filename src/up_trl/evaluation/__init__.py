"""`up-trl eval`: score a trained model (and its base) on held-out problems.

- `evaluate`: the command and the scoring loop; `generate`: batched sampling; `base`: the base model's score,
  cached beside the run; `pass_at_k`: the unbiased pass@k and maj@k estimators.
"""
