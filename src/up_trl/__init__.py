"""up-trl: UP (Unbounded Positive Asymmetric Optimization, arXiv 2607.06987) for Hugging Face TRL.

Where UP lives: `up_trl.losses` (the equations, pure tensors) and `up_trl.trainer` (the glue to TRL).
Names are imported on first use (PEP 562), so `up-trl train --help` does not pay for torch and TRL's trainer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "UPGRPOConfig": "config",
    "UPGRPOTrainer": "trainer",
    "probability_capacity": "losses",
    "self_anchored_ratio": "losses",
    "up_per_token_loss": "losses",
}
__all__ = ["UPGRPOConfig", "UPGRPOTrainer", "probability_capacity", "self_anchored_ratio", "up_per_token_loss"]

if TYPE_CHECKING:
    from .config import UPGRPOConfig
    from .losses import probability_capacity, self_anchored_ratio, up_per_token_loss
    from .trainer import UPGRPOTrainer


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
