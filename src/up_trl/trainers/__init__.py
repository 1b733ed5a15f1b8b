"""The UP trainers: one glue class per TRL parent, its config beside it (as TRL pairs `x_config.py` with
`x_trainer.py`), each changing only the loss: GRPO (and DAPO, Dr.GRPO, BNPO, GSPO), RLOO and TRL's experimental
asynchronous GRPO (a CUDA GPU and a vLLM server). `shared` is what the three share, written once; what goes beyond
UP is opt-in, in `up_trl.run.parts`. Importing this package imports neither TRL nor torch.
"""

# `up-trl train --trainer NAME`: (config module, config class, trainer module, trainer class), imported when chosen.
TRAINERS: dict[str, tuple[str, str, str, str]] = {
    "grpo": ("trainers.grpo_config", "UPGRPOConfig", "trainers.grpo_trainer", "UPGRPOTrainer"),
    "rloo": ("trainers.rloo_config", "UPRLOOConfig", "trainers.rloo_trainer", "UPRLOOTrainer"),
    "async_grpo": ("trainers.async_grpo_config", "UPAsyncGRPOConfig",
                   "trainers.async_grpo_trainer", "UPAsyncGRPOTrainer"),
}  # fmt: skip
