"""The UP trainers with each distinct prompt computed once (`shared_prompt`): an opt-in CPU saving, not UP.

`SharedPromptUPGRPOTrainer` and `SharedPromptUPRLOOTrainer` take exactly the arguments of `UPGRPOTrainer` and
`UPRLOOTrainer` and train the same objective; their scoring forwards compute each distinct prompt once, on CPU in one
process (1.23x a step on the offline default, docs/benchmarks "CPU speed"), equal to TRL's computation up to float
rounding, not bit for bit. `up-trl train --share_prompt_prefix true` (the offline default's recipe) uses them. Being
separate classes, they keep the saving out of the UP trainers' own method resolution order.
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
