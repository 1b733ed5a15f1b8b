"""UPGRPOConfig: TRL's GRPOConfig plus the one switch UP needs."""

from __future__ import annotations

from dataclasses import dataclass

from trl import GRPOConfig

from .shared import UPConfigMixin, check_up_mode

# Loss types whose objective is the clipped surrogate UP splits; the others are different objectives.
CLIPPED_LOSS_TYPES: tuple[str, ...] = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")

# TRL 1.16's other objectives: UP does not apply to them (trainable with up_mode="off").
OTHER_LOSS_TYPES: tuple[str, ...] = ("cispo", "sapo", "vespo")


def check_up_compatible(up_mode: str, loss_type: str, delta: float | None = None) -> None:
    """Raise a ValueError that says what to set when UP cannot apply to this configuration."""
    check_up_mode(up_mode)
    if up_mode == "off":  # the parent's objective: whatever the parent accepts
        return
    if loss_type not in CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES:  # TRL itself would only fail at the first step
        raise ValueError(f"Unknown loss_type={loss_type!r}: use one of {CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES}.")
    if loss_type not in CLIPPED_LOSS_TYPES:
        raise ValueError(
            f"loss_type={loss_type!r} is a different objective from the clipped surrogate UP modifies. "
            f"Use one of {CLIPPED_LOSS_TYPES} with up_mode={up_mode!r}, or set up_mode='off' to train "
            f"{loss_type!r} unchanged."
        )
    if delta is not None and delta < 1.0:  # TRL caps r at delta: UP's r~ = 1 would be clamped, its gradient gone
        raise ValueError(
            f"delta={delta} caps the ratio below 1, which cancels UP's gradient on every routed entry (r~ = 1 "
            "becomes clamp(1, max=delta)): set delta above 1 + epsilon_high (the paper's recipes use 3.0), or unset "
            "it."
        )


@dataclass
class UPGRPOConfig(UPConfigMixin, GRPOConfig):
    r"""GRPOConfig for `UPGRPOTrainer`. Every GRPOConfig argument keeps its meaning and its default; the UP fields
    (`up_mode`, `up_positive_min_prob`, the collapse warning's two) are `shared.UPConfigMixin`'s.

    Under `up_mode="asymmetric"`, tokens (or sequences, with `importance_sampling_level="sequence"`) with a positive
    advantage are never clipped; the others keep the parent's clipped objective (`epsilon`, `epsilon_high`,
    `delta`). So `epsilon_high` acts only on the rare clip's entries and through the dual clip: for A < 0 TRL's loss is
    |A| * clip(r, 1 - epsilon, max(delta, 1 + epsilon_high)), so with `delta` unset or >= 1 + `epsilon_high` (the
    paper recipes: `delta=3.0`, verl's `clip_ratio_c`) it acts on no negative token.
    """

    @staticmethod
    def check_up(up_mode, args) -> None:
        check_up_compatible(up_mode, args.loss_type, args.delta)
