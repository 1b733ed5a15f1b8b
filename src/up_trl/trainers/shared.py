"""What the three UP trainers (`UPGRPOTrainer`, `UPRLOOTrainer`, `UPAsyncGRPOTrainer`) share, written once.

Each glue class keeps only its loss override (`_compute_loss` / `compute_loss`), its staleness rule
(`up_is_off_policy`) and the advice its on-policy notice gives. Everything else lives here:

- `UPConfigMixin`: the config fields `up_mode`, `skip_nonfinite_steps`, `max_consecutive_nonfinite_steps`, with
  the rare clip's (`guards.GuardConfigMixin`, off by default) and the collapse warning's, checked before the parent's
  own post-init (YAML `off` read as "off");
- `UPTrainerMixin`: reading those fields, the non-finite step guard and its `up/nonfinite_skipped_steps` count,
  the collapse warning (`collapse_warning.CollapseWarningCallback`, only logs unless told to stop),
  the on-policy notice, logging the `up/*` metrics (`losses.up_positive_token_sums`, `indicators`), the citation and
  the model card (`card.write_model_card`);
- `UPSyncTrainerMixin`: what GRPO and RLOO (same sampler, same generate-then-reuse batches) add: their staleness
  rule, the zero-step refusal, the hook that hands the parent's pi_theta to UP's anchor (only during UP's own loss
  call), and the rollout batch saved with every checkpoint (`rollout_checkpoint`).

(`up/unscorable_frac` is not here: `unscorable` counts it from the reward functions each glue class passes on.)

A glue class lists the mixin first, so its names win over the parent's: `class UPRLOOTrainer(UPSyncTrainerMixin,
RLOOTrainer)`; configs likewise: `class UPRLOOConfig(UPConfigMixin, RLOOConfig)`. Nothing here changes what the
parent computes when `up_mode="off"`: the hook only records, and the extra metrics are computed without gradient.

Nothing here overrides `log` or `save_model`: the `up/*` rates and `up/nonfinite_skipped_steps` (through the guard's
callback) go into the parent's `_metrics`, which its own `log` reduces, held by behavioural tests in
`tests/trl_pins.json` ('logs and card' behaviours); `create_model_card`, a public method replaced whole, is checked
there by its signature (our override takes the parameters TRL's callers pass). The on-policy notice mirrors when
TRL's generation computes pi_old, held by a test that runs a job and reads it ('off-policy notice' behaviours).
"""

from __future__ import annotations

import contextlib
import tempfile
import textwrap
from dataclasses import dataclass, field

import torch
from accelerate.logging import get_logger
from transformers import TrainingArguments

from ..objective.guards import GuardConfigMixin
from ..objective.indicators import indicator_rates, leading_indicator_sums
from ..objective.losses import UP_MODES, up_positive_token_sums
from ..quiet import ignore_trl_deprecated_calls
from ..run.callbacks import NonFiniteGuardCallback, UsualFileModesCallback
from ..run.collapse_warning import ADVICE, UP_ADVICE, CollapseWarningCallback, CollapseWarningConfigMixin
from ..run.resume_settings import ResumeSettingsMixin
from ..run.rollout_checkpoint import RolloutCheckpointMixin
from ..versions import warn_if_untested_versions

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
UP_PAPER = {
    "title": "UP: Unbounded Positive Asymmetric Optimization",
    "id": "2607.06987",
    # docstyle-ignore
    "citation": textwrap.dedent("""\
        @article{up2026,
            title        = {{UP: Unbounded Positive Asymmetric Optimization}},
            author       = {Fan, Chongyu and Liu, Pengfei and Huang, Jingjia and Liu, Sijia and Lin, Yi},
            year         = 2026,
            eprint       = {arXiv:2607.06987},
        }"""),
}


def check_up_mode(up_mode: str) -> None:
    """Raise a ValueError that names the allowed values when `up_mode` is not one of `losses.UP_MODES`."""
    if up_mode not in UP_MODES:
        raise ValueError(f"up_mode={up_mode!r} is not one of {UP_MODES}: set up_mode='asymmetric' (UP) or 'off'.")


def default_output_dir(model, suffix: str) -> str:
    """The output folder a trainer built without `args` uses: the model's last path part plus `suffix`.

    >>> default_output_dir("Qwen/Qwen3-0.6B/", "-UP-RLOO")
    'Qwen3-0.6B-UP-RLOO'
    """
    name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "model")
    return f"{str(name).rstrip('/').split('/')[-1]}{suffix}"


@contextlib.contextmanager
def reference_from_object(model, beta: float, peft_config=None):
    """Around the parent's constructor: with `beta > 0` and a model *object* built in code, TRL builds its reference
    model from `model.config._name_or_path`, which is empty there (it ended in an unclear OSError). The object is
    saved to a temporary folder first (before any ZeRO-3 sharding) and the reference loaded from it: the reference
    is the policy as passed. Nothing happens for a path, for beta 0, with PEFT (TRL disables the adapters instead),
    or for an object that names where it was loaded from (TRL reads that name for the processor and vLLM too)."""
    peft = peft_config is not None or getattr(model, "peft_config", None) is not None
    if isinstance(model, str) or not beta or peft or model.config._name_or_path:
        yield
        return
    original = model.config._name_or_path
    with tempfile.TemporaryDirectory(prefix="up-trl-reference-") as folder:
        model.save_pretrained(folder)
        model.config._name_or_path = folder
        try:
            yield
        finally:
            model.config._name_or_path = original


@dataclass
class UPConfigMixin(GuardConfigMixin, CollapseWarningConfigMixin):
    """UP's config fields, for `class UPXConfig(UPConfigMixin, XConfig)`; every parent argument keeps its meaning.

    Args:
        up_mode (`str`, *optional*, defaults to `"asymmetric"`):
            `"asymmetric"` is UP: tokens (or sequences, where the parent's ratio is per sequence) with a positive
            advantage use the self-anchored ratio pi_theta/sg(pi_theta), never clipped; the others keep the
            parent's clipped objective. `"both"` uses the self-anchored ratio for every sign (the paper's REINFORCE
            ablation). `"off"` is exactly the parent objective, for A/B runs with one flag.
        up_positive_min_prob (`float` or `None`, *optional*, defaults to `None`):
            The rare clip (ours, not the paper's; `guards.GuardConfigMixin`): routed entries that were rare when
            sampled keep pi_old, so the parent's clip. `None` keeps the paper's objective; docs/collapse.md measures
            it.
        up_collapse_warning (`bool`, *optional*, defaults to `True`):
            The early warning (`collapse_warning.CollapseWarningConfigMixin`); `up_stop_on_collapse` (default
            `False`) makes it save a checkpoint and stop.
        skip_nonfinite_steps (`bool`, *optional*, defaults to `True`):
            Skip and count optimizer steps with NaN/inf gradients (see `callbacks.NonFiniteGuardCallback`).
        max_consecutive_nonfinite_steps (`int`, *optional*, defaults to `10`):
            Consecutive skipped steps after which a checkpoint is saved and training stops.
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
    # TRL defaults `gradient_checkpointing=True`, a name transformers 5.23 deprecates in favour of
    # `activation_checkpointing`, so every TRL config warns once there, whatever the user set. Unset here;
    # __post_init__ keeps TRL's default (checkpointing on). Both names work on every supported transformers: before
    # 5.23, `activation_checkpointing` is this field, which sets the only name transformers reads there.
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
        self.check_up_applies()
        super().__post_init__()

    def check_up_applies(self) -> None:
        """Raise a ValueError that says what to set when UP cannot apply; a config whose parent has settings UP
        cannot work with (GRPO's `loss_type`, `delta` below 1) overrides this."""
        check_up_mode(self.up_mode)


class UPTrainerMixin(ResumeSettingsMixin):
    """The parts every UP glue class shares; the glue class supplies `up_is_off_policy` and its loss override. A
    resumed run trains with its own optimizer settings, not the checkpoint's (`run.resume_settings`).

    In `__init__`: `self._read_up_args(args)` before the parent's constructor, `self._finish_up_init(why, advice)`
    after it. In the loss: `self._log_up_metrics(...)`.
    """

    _paper = UP_PAPER
    up_parent_objective: str | None = None  # the parent's name in the card ("RLOO"); None: from GRPO's loss_type
    up_ratio_per_sequence: bool = False  # the parent's ratio is one per completion (RLOO)
    up_mode: str = "asymmetric"
    up_positive_min_prob: float | None = None
    up_recipe: str | None = None  # set by `up-trl train`: named in the model card
    up_dataset_name: str | None = None  # set by `up-trl train`: the card's data when push_to_hub does not pass it
    _nonfinite_guard: NonFiniteGuardCallback | None = None

    up_is_off_policy: bool  # each glue class's staleness rule (a property)

    def _read_up_args(self, args) -> None:
        """`up_mode` and the rare clip from `args`; a plain parent config means UP (`"asymmetric"`), no clip."""
        self.up_mode = getattr(args, "up_mode", "asymmetric")
        self.up_positive_min_prob = getattr(args, "up_positive_min_prob", None)
        check_up_mode(self.up_mode)
        if self.up_mode == "off" and self.up_positive_min_prob is not None:
            logger.warning(
                "up_mode='off' trains the parent objective: up_positive_min_prob acts only on UP's branch and "
                "changes nothing here."
            )

    def _finish_up_init(self, on_policy_reason: str, advice: str) -> None:
        """After the parent's constructor: the non-finite step guard, the collapse warning (only logs unless
        `up_stop_on_collapse`), then the on-policy notice."""
        warn_if_untested_versions(main_process=self.is_world_process_zero())  # trl/transformers outside the pins
        ignore_trl_deprecated_calls()  # TRL's own calls of names transformers 5 deprecates (`up_trl.quiet`)
        if getattr(self.args, "skip_nonfinite_steps", True) and not self.is_deepspeed_enabled:
            most = getattr(self.args, "max_consecutive_nonfinite_steps", 10)
            self._nonfinite_guard = NonFiniteGuardCallback(most, record=self._record_nonfinite_steps)
            self.add_callback(self._nonfinite_guard)
        self.add_callback(UsualFileModesCallback())  # each checkpoint's weights readable as the files beside them
        if getattr(self.args, "up_collapse_warning", True):
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
        """Log `UP_METRICS` and the leading indicators (`indicators.INDICATOR_METRICS`) of one loss call, summed over
        ranks, whatever up_mode is (so that a UP run and its parent are comparable). Entries are GRPO's tokens
        ((B, T), `log_ratio` per token or (B, 1) per sequence), or RLOO's completions or async GRPO's packed tokens
        (1-D, `mask` all ones); `old_logps` are the real pi_old, never the anchored ones."""
        sums = up_positive_token_sums(
            logps, old_logps, advantages, mask, epsilon_high=self.epsilon_high, log_ratio=log_ratio
        )
        sums = self.accelerator.reduce(sums, reduction="sum").tolist()
        n_pos, n_valid = sums[0], sums[1]
        rates = [(n_pos, n_valid)] + [(s, n_pos) for s in sums[2:]]
        for name, (num, den) in zip(UP_METRICS, rates):
            self._metrics[mode][name].append(self._up_rate(num, den))
        sums = leading_indicator_sums(logps, advantages, mask, log_ratio, epsilon_low=self.epsilon_low)
        for name, (num, den) in indicator_rates(self.accelerator.reduce(sums, reduction="sum").tolist()).items():
            self._metrics[mode][name].append(self._up_rate(num, den))

    def _record_nonfinite_steps(self, count: int) -> None:
        """`up/nonfinite_skipped_steps` into the log the parent writes next: through `_metrics`, which it reduces
        (one value a logging window: the count so far)."""
        self._metrics["train"]["up/nonfinite_skipped_steps"].append(self._up_rate(count, 1))

    @staticmethod
    def _up_rate(num: float, den: float):
        """The value one call logs: num / den, NaN when den is 0 (the parent's `log` skips NaN)."""
        return num / den if den > 0 else float("nan")

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        """Write the model card (`up_trl.run.card`): base model, data, objective, settings, final metrics and
        citations."""
        if self.is_world_process_zero():
            from ..run.card import write_model_card

            write_model_card(self, model_name=model_name, dataset_name=dataset_name, tags=tags)


class UPSyncTrainerMixin(RolloutCheckpointMixin, UPTrainerMixin):
    """`UPTrainerMixin` plus what TRL's synchronous trainers (GRPOTrainer, RLOOTrainer) share: one rollout batch is
    generated, then trained on for steps_per_generation * num_iterations micro-steps (and saved with every
    checkpoint, `rollout_checkpoint.RolloutCheckpointMixin`, so that a resumed run continues the same cycle)."""

    @property
    def up_is_off_policy(self) -> bool:
        """True when some optimizer steps train on a batch sampled by older weights, so that the old log-probs
        (GRPO's `old_per_token_logps`, RLOO's `old_logps`) are stale: TRL's condition
        `gradient_accumulation_steps % (steps_per_generation * num_iterations) != 0`. The only case where UP
        differs from its parent.

        vLLM does not change this: with aligned steps TRL recomputes the old log-probs with the current weights
        (ratio 1), and its importance-sampling correction for the sampler/trainer mismatch multiplies UP's branch
        and the parent's alike.
        """
        generate_every = self.args.steps_per_generation * self.num_iterations
        return self.args.gradient_accumulation_steps % generate_every != 0

    def _finish_up_init(self, on_policy_reason: str, advice: str) -> None:
        self.add_rollout_checkpoint()  # the rollout batch in every checkpoint (`rollout_checkpoint`)
        super()._finish_up_init(on_policy_reason, advice)

    def _refuse_zero_step_setups(self) -> None:
        """Fail before training where TRL would silently run zero steps (or fail later with an unclear error)."""
        for name in ("num_iterations", "steps_per_generation"):
            if getattr(self.args, name) < 1:
                raise ValueError(f"{name}={getattr(self.args, name)} must be at least 1 (1 is the default).")
        dataset, per_batch = self.train_dataset, self.args.generation_batch_size // self.num_generations
        if hasattr(dataset, "__len__") and len(dataset) < per_batch:  # TRL's sampler drops a partial batch
            raise ValueError(
                f"train_dataset has {len(dataset)} prompt(s), but one generation batch takes {per_batch} "
                f"(generation_batch_size={self.args.generation_batch_size} / num_generations={self.num_generations}"
                "), so training would run zero steps. Use more prompts, or lower per_device_train_batch_size or "
                "steps_per_generation."
            )

    @contextlib.contextmanager
    def _parent_forward(self, anchor):
        """Around the parent's `_compute_loss` in UP's own: the parent's policy forward
        (`_get_per_token_logps_and_entropies`) hands its per-token log-probs to `anchor`, which anchors pi_old in the
        batch the parent reads next (`objective.anchored_old_logps`). Set on the instance only while this runs, so
        every other call of the method (the old-log-prob pass, a test calling it on a mock) is untouched."""
        self.__dict__["_up_anchor"] = anchor
        try:
            yield
        finally:
            del self.__dict__["_up_anchor"]

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        out = super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
        )
        anchor = vars(self).get("_up_anchor")
        if anchor is not None:
            anchor(out[0])
        return out
