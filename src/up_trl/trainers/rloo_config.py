"""UPRLOOConfig: TRL's RLOOConfig plus UP's fields (`shared.UPConfigMixin`) and the opt-in shared-prompt forward."""

from __future__ import annotations

from dataclasses import dataclass

from trl import RLOOConfig

from .shared import UPConfigMixin


@dataclass
class UPRLOOConfig(UPConfigMixin, RLOOConfig):
    r"""RLOOConfig for `UPRLOOTrainer`. Every RLOOConfig argument keeps its meaning and its default; the UP fields
    are `trainers.shared.UPConfigMixin`'s.

    UP acts per sequence, on RLOO's summed completion log-probability; `up_positive_min_prob` reads a completion's
    geometric-mean token probability. RLOO has one objective (no `loss_type`): only `up_mode` itself can be wrong.
    """
