"""UPAsyncGRPOConfig: TRL's AsyncGRPOConfig plus UP's fields (`shared.UPConfigMixin`)."""

from __future__ import annotations

from dataclasses import dataclass

from trl.experimental.async_grpo import AsyncGRPOConfig

from .shared import UPConfigMixin


@dataclass
class UPAsyncGRPOConfig(UPConfigMixin, AsyncGRPOConfig):
    r"""AsyncGRPOConfig for `UPAsyncGRPOTrainer`. Every AsyncGRPOConfig argument keeps its meaning; the UP fields
    are `trainers.shared.UPConfigMixin`'s. pi_old is the sampler's (`old_log_probs`), up to `max_staleness` policy
    versions old, so UP acts on every step.
    """
