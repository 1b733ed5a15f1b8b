"""What `up-trl eval` runs: score a trained model (and its base) on held-out problems; the command's options are
`config.EvalArguments` (the command itself, `up_trl.cli.eval_command`; nothing here imports the CLI).

- `config`: the options and their defaults; `evaluate`: the benchmarks and the scoring loop; `generate`: batched
  sampling; `base`: the base model's score, cached beside the run; `pass_at_k`: the unbiased pass@k and maj@k
  estimators.
"""
