"""UPRLOOConfig: TRL's RLOOConfig plus UP's fields (`shared.UPConfigMixin`) and the opt-in shared-prompt forward."""

from __future__ import annotations

from dataclasses import dataclass

from trl import RLOOConfig

from .shared import UPConfigMixin


@dataclass
class UPRLOOConfig(UPConfigMixin, RLOOConfig):
    r"""RLOOConfig for `UPRLOOTrainer`. Every RLOOConfig argument keeps its meaning and its default; the UP fields
    are `trainers.shared.UPConfigMixin`'s.

    Under `up_mode="asymmetric"`, sequences with a positive advantage use the self-anchored ratio exp(logp - sg(logp))
    on the summed completion log-probability, never clipped; the others keep RLOO's clipped objective (`epsilon`,
    `epsilon_high`). `up_positive_min_prob` keeps a completion that was rare when sampled (its geometric-mean token
    probability) on RLOO's clip. RLOO has one objective (no `loss_type`): only `up_mode` itself can be wrong.
    """
