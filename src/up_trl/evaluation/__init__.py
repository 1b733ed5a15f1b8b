"""What `up-trl eval` runs: `config` (its options), `evaluate` (the benchmarks and the scoring loop), `generate`
(sampling), `base` (the base model's cached score), `pass_at_k`."""
