"""The UP trainers: one glue class per TRL parent, its config beside it (as TRL pairs `x_config.py` with
`x_trainer.py`), each changing only the loss.

- `grpo_config` / `grpo_trainer`: `UPGRPOConfig`, `UPGRPOTrainer` (GRPO, DAPO, Dr.GRPO, BNPO, GSPO);
- `rloo_config` / `rloo_trainer`: `UPRLOOConfig`, `UPRLOOTrainer`;
- `async_grpo_config` / `async_grpo_trainer`: `UPAsyncGRPOConfig`, `UPAsyncGRPOTrainer` (TRL's experimental
  asynchronous GRPO: a CUDA GPU and a vLLM server);
- `shared`: what the three share, written once (the config mixin, the anchor hook, `up/*` metrics, notices, the
  objective's name and paper for TRL's card).

What goes beyond UP is opt-in, in `up_trl.run.parts`.
"""

# --trainer: (config module, config class, trainer module, trainer class), imported only when chosen
# (`up-trl train --trainer NAME`; importing this package imports neither TRL nor torch).
TRAINERS: dict[str, tuple[str, str, str, str]] = {
    "grpo": ("trainers.grpo_config", "UPGRPOConfig", "trainers.grpo_trainer", "UPGRPOTrainer"),
    "rloo": ("trainers.rloo_config", "UPRLOOConfig", "trainers.rloo_trainer", "UPRLOOTrainer"),
    "async_grpo": (
        "trainers.async_grpo_config",
        "UPAsyncGRPOConfig",
        "trainers.async_grpo_trainer",
        "UPAsyncGRPOTrainer",
    ),
}
