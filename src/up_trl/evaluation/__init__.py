"""What `up-trl eval` runs: `config` (its options), `evaluate` (the benchmarks, sampling and the scoring loop), `base`
(the base model's cached score), `pass_at_k`."""
