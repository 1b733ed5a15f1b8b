"""UPAsyncGRPOConfig: TRL's AsyncGRPOConfig plus UP's fields (`shared.UPConfigMixin`)."""

from __future__ import annotations

from dataclasses import dataclass

from trl.experimental.async_grpo import AsyncGRPOConfig

from .shared import UPConfigMixin


@dataclass
class UPAsyncGRPOConfig(UPConfigMixin, AsyncGRPOConfig):
    r"""AsyncGRPOConfig for `UPAsyncGRPOTrainer`. Every AsyncGRPOConfig argument keeps its meaning; the UP fields
    are `trainers.shared.UPConfigMixin`'s.

    Under `up_mode="asymmetric"`, tokens with a positive advantage use the self-anchored ratio pi_theta/sg(pi_theta),
    never clipped; the others keep the parent's clipped objective (`epsilon`, `epsilon_high`). pi_old is the
    sampler's (`old_log_probs`), up to `max_staleness` policy versions old.
    """
