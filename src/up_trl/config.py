"""UPGRPOConfig: TRL's GRPOConfig plus the one switch UP needs."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from .losses import UP_MODES

# Loss types whose objective is the clipped surrogate UP splits; the others are different objectives.
CLIPPED_LOSS_TYPES: tuple[str, ...] = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")


# TRL 1.16's other objectives: UP does not apply to them (trainable with up_mode="off").
OTHER_LOSS_TYPES: tuple[str, ...] = ("cispo", "sapo", "vespo")


def check_up_compatible(up_mode: str, loss_type: str, use_liger_kernel: bool) -> None:
    """Raise a ValueError that says what to set when UP cannot apply to this configuration."""
    if up_mode not in UP_MODES:
        raise ValueError(f"up_mode={up_mode!r} is not one of {UP_MODES}.")
    if loss_type not in CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES:  # TRL itself would only fail at the first step
        raise ValueError(f"Unknown loss_type={loss_type!r}: use one of {CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES}.")
    if up_mode == "off":
        return
    if loss_type not in CLIPPED_LOSS_TYPES:
        raise ValueError(
            f"loss_type={loss_type!r} is a different objective from the clipped surrogate UP modifies. "
            f"Use one of {CLIPPED_LOSS_TYPES} with up_mode={up_mode!r}, or set up_mode='off' to train "
            f"{loss_type!r} unchanged."
        )
    if use_liger_kernel:
        raise ValueError(
            "use_liger_kernel=True routes GRPO through Liger's fused loss, which never calls UP's objective. "
            "Set use_liger_kernel=False (or up_mode='off')."
        )


@dataclass
class UPGRPOConfig(GRPOConfig):
    r"""GRPOConfig for [`UPGRPOTrainer`]. Every GRPOConfig argument keeps its meaning.

    Args:
        up_mode (`str`, *optional*, defaults to `"asymmetric"`):
            `"asymmetric"` is UP: tokens (or sequences, with `importance_sampling_level="sequence"`) with a
            positive advantage use the self-anchored ratio pi_theta/sg(pi_theta), never clipped; the others keep
            the parent's clipped objective (`epsilon`, `epsilon_high`, `delta`). `"both"` uses the
            self-anchored ratio for every sign (the paper's REINFORCE ablation). `"off"` is exactly the parent
            objective, for A/B runs with one flag.

            Under `"asymmetric"`, `epsilon_high` acts only through the dual clip: for A < 0 TRL's loss is
            |A| * clip(r, 1 - epsilon, max(delta, 1 + epsilon_high)), so `epsilon_high` changes anything only when
            `delta` < 1 + `epsilon_high` (then it replaces `delta` as the cap on r). With `delta` unset or
            `delta` >= 1 + `epsilon_high` (the paper recipes: `delta=3.0`, verl's `clip_ratio_c`) it acts on no token.
        up_positive_log_ratio_bound (`float` or `None`, *optional*, defaults to `None`):
            An optional guard (ours, not the paper's): routed tokens with |log pi_theta - log pi_old| above it get no
            gradient. `None` keeps the paper's objective.
        skip_nonfinite_steps (`bool`, *optional*, defaults to `True`):
            Skip and count optimizer steps with NaN/inf gradients (see `callbacks.NonFiniteGuardCallback`).
        max_consecutive_nonfinite_steps (`int`, *optional*, defaults to `10`):
            Consecutive skipped steps after which a checkpoint is saved and training stops.
    """

    up_mode: str = field(
        default="asymmetric",
        metadata={
            "help": "UP routing: 'asymmetric' (UP: positive advantages unclipped, self-anchored), 'both' "
            "(unclipped for every sign, the paper's ablation) or 'off' (the parent GRPO/DAPO/GSPO objective).",
            "choices": list(UP_MODES),
        },
    )

    up_positive_log_ratio_bound: float | None = field(
        default=None,
        metadata={
            "help": "Optional guard, not in the paper (off by default): tokens on UP's unclipped branch whose "
            "|log pi_theta - log pi_old| exceeds this bound contribute no gradient (sequence level: the mean log "
            "ratio). Bounds the drift UP ignores, e.g. 0.5."
        },
    )
    skip_nonfinite_steps: bool = field(
        default=True,
        metadata={
            "help": "Skip (and count, as up/nonfinite_skipped_steps) an optimizer step whose gradients are NaN or "
            "inf, instead of writing NaN into the weights. Not active under DeepSpeed, whose engine owns the step."
        },
    )
    max_consecutive_nonfinite_steps: int = field(
        default=10,
        metadata={"help": "After this many skipped steps in a row, save a checkpoint and stop training."},
    )

    def __post_init__(self):
        if self.up_positive_log_ratio_bound is not None and self.up_positive_log_ratio_bound <= 0:
            raise ValueError(
                f"up_positive_log_ratio_bound={self.up_positive_log_ratio_bound} must be positive (e.g. 0.5), "
                "or None to keep the paper's objective."
            )
        if self.up_mode is False:  # YAML 1.1 reads an unquoted `up_mode: off` as the boolean false
            self.up_mode = "off"
        # Checked before TRL's own post-init so a wrong combination fails before any other work.
        check_up_compatible(self.up_mode, self.loss_type, self.use_liger_kernel)
        super().__post_init__()
