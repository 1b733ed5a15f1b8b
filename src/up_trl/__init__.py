"""up-trl: UP (Unbounded Positive Asymmetric Optimization, arXiv 2607.06987) for Hugging Face TRL.

UP lives in `up_trl.objective` (the equations and guards) and `up_trl.trainers` (one glue class per TRL parent);
docs/maintaining.md maps the rest. Names are imported on first use (PEP 562), so `up-trl train --help` does not pay
for torch and TRL's trainer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__ as __version__  # the one place it is written

_EXPORTS = {"UPGRPOConfig": "trainers.grpo_config", "UPGRPOTrainer": "trainers.grpo_trainer",
            "UPRLOOConfig": "trainers.rloo_config", "UPRLOOTrainer": "trainers.rloo_trainer",
            "UPAsyncGRPOConfig": "trainers.async_grpo_config", "UPAsyncGRPOTrainer": "trainers.async_grpo_trainer",
            "probability_capacity": "objective.routing", "self_anchored_ratio": "objective.ratios",
            "up_per_token_loss": "objective.paper_losses",
            "CollapseWarningCallback": "trainers.collapse_warning"}  # fmt: skip
# = list(_EXPORTS), spelt out for linters
__all__ = ["UPGRPOConfig", "UPGRPOTrainer", "UPRLOOConfig", "UPRLOOTrainer", "UPAsyncGRPOConfig", "UPAsyncGRPOTrainer",
           "probability_capacity", "self_anchored_ratio", "up_per_token_loss", "CollapseWarningCallback"]  # fmt: skip

if TYPE_CHECKING:
    from .objective.paper_losses import up_per_token_loss
    from .objective.ratios import self_anchored_ratio
    from .objective.routing import probability_capacity
    from .trainers.async_grpo_config import UPAsyncGRPOConfig
    from .trainers.async_grpo_trainer import UPAsyncGRPOTrainer
    from .trainers.collapse_warning import CollapseWarningCallback
    from .trainers.grpo_config import UPGRPOConfig
    from .trainers.grpo_trainer import UPGRPOTrainer
    from .trainers.rloo_config import UPRLOOConfig
    from .trainers.rloo_trainer import UPRLOOTrainer


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)  # once
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
