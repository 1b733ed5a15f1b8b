"""up-trl: UP (Unbounded Positive Asymmetric Optimization, arXiv 2607.06987) for Hugging Face TRL.

Where UP lives: `up_trl.losses` (the equations, pure tensors), one glue class per TRL parent (`trainer`: GRPO,
`rloo`: RLOO, `async_grpo`: TRL's asynchronous GRPO) and what they share (`glue`).
Names are imported on first use (PEP 562), so `up-trl train --help` does not pay for torch and TRL's trainer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "UPGRPOConfig": "config",
    "UPGRPOTrainer": "trainer",
    "UPRLOOConfig": "rloo",
    "UPRLOOTrainer": "rloo",
    "UPAsyncGRPOConfig": "async_grpo",
    "UPAsyncGRPOTrainer": "async_grpo",
    "probability_capacity": "losses",
    "self_anchored_ratio": "losses",
    "up_per_token_loss": "losses",
    "CollapseWarningCallback": "collapse_warning",
}
__all__ = [
    "UPGRPOConfig",
    "UPGRPOTrainer",
    "UPRLOOConfig",
    "UPRLOOTrainer",
    "UPAsyncGRPOConfig",
    "UPAsyncGRPOTrainer",
    "probability_capacity",
    "self_anchored_ratio",
    "up_per_token_loss",
    "CollapseWarningCallback",
]  # = list(_EXPORTS), spelt out for linters

if TYPE_CHECKING:
    from .async_grpo import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
    from .collapse_warning import CollapseWarningCallback
    from .config import UPGRPOConfig
    from .losses import probability_capacity, self_anchored_ratio, up_per_token_loss
    from .rloo import UPRLOOConfig, UPRLOOTrainer
    from .trainer import UPGRPOTrainer


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
