"""What the three UP trainers share, written once: UP's config fields and what a UP trainer adds to its parent.

- `UPConfigMixin`: `up_mode`, the rare clip's field (`guards.GuardConfigMixin`) and the collapse warning's, checked
  before the parent's own post-init (YAML `off` read as "off");
- `UPTrainerMixin`: reading them, the `up/*` metrics, the on-policy notice, the collapse warning (only logs unless
  `up_stop_on_collapse=True`) and the objective's name and paper for TRL's own card (`_name`, `_paper`, `_tag_names`);
- `UPSyncTrainerMixin`: GRPO's and RLOO's staleness rule and the hook that hands the parent's pi_theta to UP's anchor.

A glue class lists the mixin first: `class UPRLOOTrainer(UPSyncTrainerMixin, RLOOTrainer)`. Under `up_mode="off"`
nothing here changes what the parent computes. Nothing overrides `log`, `save_model` or `create_model_card`
('logs and card' behaviours in `tests/trl_pins.json`), and the on-policy notice mirrors when TRL computes pi_old
('off-policy notice' behaviours). What goes beyond UP is opt-in, in `up_trl.run.parts`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch
from accelerate.logging import get_logger
from transformers import TrainingArguments

from ..objective.guards import GuardConfigMixin
from ..objective.routing import UP_MODES, up_positive_token_sums
from .names import UP_PAPER, objective_name, with_up

logger = get_logger(__name__)

# transformers 5.23 renamed TrainingArguments' `gradient_checkpointing` to `activation_checkpointing`
HAS_ACTIVATION_CHECKPOINTING = "activation_checkpointing" in TrainingArguments.__dataclass_fields__

UP_METRICS = (
    "up/positive_token_frac",
    "up/capacity_clipped_mean",
    "up/capacity_up_mean",
    "up/would_clip_frac",
    "up/positive_abs_log_ratio_mean",
)


def check_up_mode(up_mode: str) -> None:
    """Raise a ValueError that names the allowed values when `up_mode` is not one of `losses.UP_MODES`."""
    if up_mode not in UP_MODES:
        yaml = " (YAML reads an unquoted on, yes or true as a boolean)" if up_mode is True else ""
        raise ValueError(
            f"up_mode={up_mode!r} is not one of {UP_MODES}{yaml}: set up_mode='asymmetric' (UP) or 'off'."
        )


def default_output_dir(model, suffix: str) -> str:
    """The output folder a trainer built without `args` uses: the model's last path part plus `suffix`.

    >>> default_output_dir("Qwen/Qwen3-0.6B/", "-UP-RLOO")
    'Qwen3-0.6B-UP-RLOO'
    """
    name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "model")
    return f"{str(name).rstrip('/').split('/')[-1]}{suffix}"


@dataclass
class CollapseWarningConfigMixin:
    """The collapse warning's config fields (`collapse_warning`), in every UP config through `UPConfigMixin`."""

    up_collapse_warning: bool = field(
        default=True,
        metadata={
            "help": "Watch the logged entropy and reward for an entropy runaway or a collapse and log one warning "
            "line that says what to try (`collapse_warning.CollapseWarningCallback`; only logs)."
        },
    )
    up_stop_on_collapse: bool = field(
        default=False,
        metadata={"help": "When the collapse warning fires, save a checkpoint and stop training."},
    )


@dataclass
class UPConfigMixin(GuardConfigMixin, CollapseWarningConfigMixin):
    """UP's config fields, for `class UPXConfig(UPConfigMixin, XConfig)`; every parent argument keeps its meaning.

    Args:
        up_mode (`str`, *optional*, defaults to `"asymmetric"`):
            `"asymmetric"` is UP: tokens (or sequences, where the parent's ratio is per sequence) with a positive
            advantage use the self-anchored ratio pi_theta/sg(pi_theta), never clipped; the others keep the parent's
            clipped objective. `"both"`: every sign (the paper's REINFORCE ablation). `"off"`: exactly the parent's.
        up_positive_min_prob (`float` or `None`, *optional*, defaults to `None`):
            The rare clip (ours, not the paper's; `guards.GuardConfigMixin`): routed entries rare when sampled keep
            pi_old, so the parent's clip. `None` keeps the paper's objective; docs/collapse.md measures it.
        up_collapse_warning (`bool`, *optional*, defaults to `True`):
            The early warning (`CollapseWarningConfigMixin`): it only logs one line; with
            `up_stop_on_collapse` (default `False`) it also saves a checkpoint and stops.
    """

    up_mode: str = field(
        default="asymmetric",
        metadata={
            "help": "UP routing: 'asymmetric' (UP: positive advantages unclipped, self-anchored), 'both' "
            "(unclipped for every sign, the paper's ablation) or 'off' (the parent trainer's objective, e.g. "
            "GRPO/DAPO/GSPO or RLOO).",
            "choices": list(UP_MODES),
        },
    )
    # TRL's `gradient_checkpointing=True` default warns on transformers >= 5.23 (renamed `activation_checkpointing`):
    # unset here, __post_init__ keeps TRL's default; both names work on every supported transformers.
    gradient_checkpointing: bool | None = field(
        default=None,
        metadata={"help": "Deprecated alias of --activation_checkpointing (default: on, as in TRL)."},
    )
    if not HAS_ACTIVATION_CHECKPOINTING:
        activation_checkpointing: bool | None = field(
            default=None,
            metadata={"help": "Recompute activations in the backward pass to save memory (default: on, as in TRL)."},
        )

    def __post_init__(self):
        if self.gradient_checkpointing is None and self.activation_checkpointing is None:
            self.activation_checkpointing = True
        if not HAS_ACTIVATION_CHECKPOINTING:  # transformers < 5.23 reads gradient_checkpointing only
            if self.activation_checkpointing is None:
                self.activation_checkpointing = self.gradient_checkpointing
            self.gradient_checkpointing = self.activation_checkpointing
        self.check_guards()
        if self.up_mode is False:  # YAML 1.1 reads an unquoted `up_mode: off` as the boolean false
            self.up_mode = "off"
        # Checked before the parent's own post-init so a wrong combination fails before any other work.
        self.check_up(self.up_mode, self)
        super().__post_init__()

    @staticmethod
    def check_up(up_mode, args) -> None:
        """The one check of UP's settings against the parent's `args` (this config's, or a plain parent config a UP
        trainer was given); a config whose parent has settings UP cannot work with (GRPO's `loss_type`, `delta`
        below 1) overrides this."""
        check_up_mode(up_mode)


class UPTrainerMixin:
    """The parts every UP glue class shares, its construction included; the glue class supplies its config class, its
    default folder's suffix, `up_is_off_policy`, `_up_on_policy_notice()` ((why this configuration is on-policy, what
    to set so that it is not), in its words) and its loss override, which calls `_log_up_metrics(...)`."""

    up_config_class: type  # the glue class's UP config (built when no `args` is given; its `check_up`)
    up_output_suffix: str = "-UP"  # the default output folder: the model's name plus this
    up_parent_objective: str | None = None  # the parent's name in the card ("RLOO"); None: from GRPO's loss_type
    up_ratio_per_sequence: bool = False  # the parent's ratio is one per completion (RLOO)
    up_logs_sums: bool = False  # the parent's `log` reduces (num, den) tuples of a window exactly (async GRPO)
    up_mode: str = "asymmetric"
    up_positive_min_prob: float | None = None

    up_is_off_policy: bool  # each glue class's staleness rule (a property)

    def __init__(self, model, reward_funcs=None, args=None, *pargs, **kwargs):
        """UP's settings read from `args` (a plain parent config means UP, no rare clip) and checked by the one check
        a UP config runs when it is built (`check_up`), the parent's constructor through `super()` by design, then
        the collapse warning and the on-policy notice."""
        args = self.up_config_class(default_output_dir(model, self.up_output_suffix)) if args is None else args
        self.up_mode = getattr(args, "up_mode", "asymmetric")
        self.up_positive_min_prob = getattr(args, "up_positive_min_prob", None)
        self.up_config_class.check_up(self.up_mode, args)  # again for a UP config: it may have changed since built
        if self.up_mode == "off" and self.up_positive_min_prob is not None:
            logger.warning(
                "up_mode='off' trains the parent objective: up_positive_min_prob acts only on UP's branch and "
                "changes nothing here."
            )
        super().__init__(model, reward_funcs, args, *pargs, **kwargs)
        self._finish_up_init(*self._up_on_policy_notice())

    def _finish_up_init(self, on_policy_reason: str, advice: str) -> None:
        """After the parent's constructor: the collapse warning callback, then the on-policy notice."""
        if getattr(self.args, "up_collapse_warning", True):
            from .collapse_warning import ADVICE, UP_ADVICE, CollapseWarningCallback

            stop = getattr(self.args, "up_stop_on_collapse", False)
            # the rare-token option only where it is not on already (the up_dapo / up_grpo recipes set it)
            to_try = UP_ADVICE if self.up_mode != "off" and self.up_positive_min_prob is None else ADVICE
            self.add_callback(CollapseWarningCallback(stop, advice=to_try, stop_flag="up_stop_on_collapse"))
        if self.up_mode != "off" and not self.up_is_off_policy:
            logger.warning(
                f"UP (up_mode={self.up_mode!r}) equals its parent objective in this configuration: "
                f"{on_policy_reason} UP differs only off-policy: {advice}",
                main_process_only=True,
            )

    @torch.no_grad()
    def _log_up_metrics(self, logps, old_logps, advantages, mask, log_ratio, mode: str) -> None:
        """Log `UP_METRICS` of one loss call, summed over ranks, whatever up_mode is. Entries are GRPO's tokens
        ((B, T)) or RLOO's completions / async GRPO's packed tokens (1-D, `mask` all ones); `old_logps` are the real
        pi_old, never the anchored ones. The opt-in part `run.parts.LeadingIndicatorsMixin` extends it."""
        sums = up_positive_token_sums(
            logps, old_logps, advantages, mask, epsilon_high=self.epsilon_high, log_ratio=log_ratio
        )
        sums = self.accelerator.reduce(sums, reduction="sum").tolist()
        n_pos, n_valid = sums[0], sums[1]
        rates = [(n_pos, n_valid)] + [(s, n_pos) for s in sums[2:]]
        for name, (num, den) in zip(UP_METRICS, rates):
            self._metrics[mode][name].append(self._up_rate(num, den))

    def _up_rate(self, num: float, den: float):
        """The value one call logs: num / den, NaN when den is 0 (the parent's `log` skips NaN); (num, den) where the
        parent's `log` reduces a window of tuples exactly, sum / sum (`up_logs_sums`)."""
        if self.up_logs_sums:
            return num, den
        return num / den if den > 0 else float("nan")

    # TRL's `create_model_card` reads these three: UP's name, settings and paper, or the parent's under "off".
    @property
    def _name(self) -> str:
        parent = _parents_attribute(self, "_name")
        if self.up_mode == "off":
            return parent
        p_min = self.up_positive_min_prob  # the settings themselves: the run card's table
        if self.up_parent_objective is None:  # GRPO: the loss type names it (DAPO, GSPO at sequence level, ...)
            return objective_name(self.args.loss_type, self.args.importance_sampling_level, self.up_mode, p_min)
        return with_up(self.up_parent_objective, self.up_mode, p_min)

    @property
    def _paper(self) -> dict:
        return _parents_attribute(self, "_paper") if self.up_mode == "off" else UP_PAPER

    @property
    def _tag_names(self) -> list[str]:
        tags = list(_parents_attribute(self, "_tag_names"))
        return tags if getattr(self, "up_mode", "asymmetric") == "off" else [*tags, "up"]


def _parents_attribute(trainer, name: str):
    """The TRL parent's class attribute `name` (the first plain value in the MRO: the mixins define properties)."""
    for cls in type(trainer).__mro__:
        value = vars(cls).get(name)
        if value is not None and not isinstance(value, property):
            return value
    raise AttributeError(name)


class UPSyncTrainerMixin(UPTrainerMixin):
    """`UPTrainerMixin` plus what TRL's synchronous trainers (GRPOTrainer, RLOOTrainer) share: one rollout batch is
    generated, then trained on for steps_per_generation * num_iterations micro-steps."""

    @property
    def up_is_off_policy(self) -> bool:
        """True when some optimizer steps train on a batch sampled by older weights (TRL's condition
        `gradient_accumulation_steps % (steps_per_generation * num_iterations) != 0`): the only case where UP differs
        from its parent. vLLM does not change this (TRL then recomputes pi_old with the current weights)."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        if generate_every < 1:  # no notice: TRL refuses a 0 when it builds its dataloader
            return True
        return self.args.gradient_accumulation_steps % generate_every != 0

    @contextlib.contextmanager
    def _parent_forward(self, anchor):
        """While the parent's `_compute_loss` runs, its policy forward hands its per-token log-probs to `anchor`
        (which anchors pi_old in the batch); set on the instance only meanwhile: other forward calls are untouched."""
        self.__dict__["_up_anchor"] = anchor
        try:
            yield
        finally:
            del self.__dict__["_up_anchor"]

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        """The parent's forward through `super()`; its log-probs handed to the anchor while one is set."""
        out = super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
        )
        anchor = vars(self).get("_up_anchor")
        if anchor is not None:
            anchor(out[0])
        return out
