"""The UP trainers with each distinct prompt computed once (`shared_prompt`): an opt-in CPU saving, not UP.

They take exactly the UP trainers' arguments and train the same objective, equal to TRL's computation up to float
rounding (1.23x a step on the offline default, docs/benchmarks "CPU speed"), outside the UP trainers' MRO.
"""

from __future__ import annotations

from ..trainers.grpo_trainer import UPGRPOTrainer
from ..trainers.rloo_trainer import UPRLOOTrainer
from .shared_prompt import SharedPromptTrainerMixin


class SharedPromptUPGRPOTrainer(SharedPromptTrainerMixin, UPGRPOTrainer):
    """`UPGRPOTrainer`, each distinct prompt of a batch computed once in its scoring forwards (CPU, one process)."""


class SharedPromptUPRLOOTrainer(SharedPromptTrainerMixin, UPRLOOTrainer):
    """`UPRLOOTrainer`, each distinct prompt of a batch computed once in its scoring forwards (CPU, one process)."""


SHARED_PROMPT_TRAINERS = {UPGRPOTrainer: SharedPromptUPGRPOTrainer, UPRLOOTrainer: SharedPromptUPRLOOTrainer}
