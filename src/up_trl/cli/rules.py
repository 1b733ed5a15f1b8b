"""The allowed range of every numeric setting of `up-trl train` and `up-trl eval`, in one table (`RULES`), checked
before any model loads: on the command line, in a recipe and in the offline default alike (`check_ranges` runs on
the values the parser is about to build the config from).

A rule is (name, range, why). The range is written as a reader would: `> 0`, `>= 1`, `[0, 1]`, `(0, 1]`, with
the values a range leaves out but TRL gives a meaning (`max_steps -1`: train by epochs) as sentinels, said in the
help and in the error. On top of the table, every float setting must be a finite number (NaN and inf never mean
anything here): `check_ranges` walks every value, not only the table's.

Each failure is one `UsageError` line naming the flag (or the recipe key), the value, the range and why:

    --top_p 1.5 is out of range: top_p must be in (0, 1] (a probability: the share of the sampling mass kept).
    --max_steps 0 is out of range: max_steps must be >= 1 (...); or -1: TRL's default, train ... epochs instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .usage import Settings, UsageError

SEED_MAX = 2**32 - 1  # numpy's seeds (transformers' set_seed seeds numpy too)


@dataclass(frozen=True)
class Rule:
    """`name` must lie in `allowed` (`> 0`, `>= 1`, `[0, 1]`, `(0, 1]`), or be one of `sentinels` (value: meaning).
    `command`: "train", "eval" or "both" (a name both commands share, such as `seed`)."""

    name: str
    allowed: str
    why: str
    sentinels: Mapping[float, str] = field(default_factory=dict)
    command: str = "train"

    def admits(self, value: float) -> bool:
        if value in self.sentinels:
            return True
        low, high, low_closed, high_closed = parse_range(self.allowed)
        above = value >= low if low_closed else value > low
        below = value <= high if high_closed else value < high
        return above and below

    def describe(self) -> str:
        """'must be in (0, 1] (why)', with the sentinels."""
        sentinels = "".join(f"; or {v:g}: {meaning}" for v, meaning in self.sentinels.items())
        low, high, *_ = parse_range(self.allowed)
        where = f"in {self.allowed}" if not (math.isinf(low) or math.isinf(high)) else self.allowed
        return f"must be {where} ({self.why}){sentinels}"


_INTERVAL = re.compile(r"^([\[(])\s*(\S+)\s*,\s*(\S+)\s*([\])])$")
_BOUND = re.compile(r"^(>=|>|<=|<)\s*(\S+)$")


def parse_range(text: str) -> tuple[float, float, bool, bool]:
    """(low, high, low closed, high closed) of a range as `Rule` writes it.

    >>> parse_range("(0, 1]"), parse_range(">= 1")
    ((0.0, 1.0, False, True), (1.0, inf, True, False))
    """
    interval = _INTERVAL.match(text)
    if interval:
        opening, low, high, closing = interval.groups()
        return float(low), float(high), opening == "[", closing == "]"
    bound = _BOUND.match(text)
    if not bound:
        raise ValueError(f"not a range: {text!r}")
    op, value = bound.group(1), float(bound.group(2))
    if op.startswith(">"):
        return value, math.inf, op == ">=", False
    return -math.inf, value, False, op == "<="


_PROBABILITY = "a probability"
RULES: tuple[Rule, ...] = (
    # How long to train, how often to log and save.
    Rule("max_steps", ">= 1", "optimizer steps to train; 0 would still run one",
         sentinels={-1: "TRL's default, train --num_train_epochs epochs instead"}),
    Rule("num_train_epochs", "> 0", "used when max_steps is -1"),
    Rule("save_steps", "> 0", "a checkpoint every N steps; below 1, a fraction of the run"),
    Rule("logging_steps", "> 0", "a log line every N steps; below 1, a fraction of the run"),
    Rule("eval_steps", "> 0", "an evaluation every N steps"),
    Rule("save_total_limit", ">= 1", "checkpoints kept; unset keeps all"),
    Rule("warmup_steps", ">= 0", "learning-rate warm-up steps; below 1, a fraction of the run"),
    # The optimizer.
    Rule("learning_rate", "> 0", "the AdamW step size: 0 trains nothing, a negative one climbs the loss"),
    Rule("weight_decay", ">= 0", "AdamW's decoupled weight decay"),
    Rule("adam_beta1", "[0, 1)", "AdamW's first-moment decay"),
    Rule("adam_beta2", "[0, 1)", "AdamW's second-moment decay"),
    Rule("adam_epsilon", "> 0", "AdamW's denominator floor"),
    Rule("max_grad_norm", ">= 0", "gradient clipping norm; 0 turns clipping off"),
    Rule("label_smoothing_factor", "[0, 1)", _PROBABILITY),
    Rule("gradient_accumulation_steps", ">= 1", "micro-batches per optimizer step"),
    # Batch shape (num_generations and the divisibility of the batch have their own, longer messages).
    Rule("per_device_train_batch_size", ">= 1", "completions per process per micro-batch"),
    Rule("per_device_eval_batch_size", ">= 1", "completions per process per evaluation batch"),
    Rule("steps_per_generation", ">= 1", "optimizer mini-batches per rollout batch"),
    Rule("generation_batch_size", ">= 1", "completions per rollout batch"),
    Rule("num_iterations", ">= 1", "updates per rollout batch"),
    Rule("num_generations_eval", ">= 1", "completions per prompt in evaluation"),
    Rule("max_completion_length", ">= 1", "the longest completion, in tokens"),
    Rule("dataset_limit", ">= 1", "training problems kept; unset keeps all"),
    # Sampling.
    Rule("temperature", "> 0", "sampling divides the logits by it, and training needs samples; TRL refuses 0"),
    Rule("top_p", "(0, 1]", "a probability: the share of the sampling mass kept", command="both"),
    Rule("top_k", ">= 0", "the most likely tokens kept; 0 turns it off"),
    Rule("min_p", "[0, 1]", _PROBABILITY),
    Rule("repetition_penalty", "> 0", "divides the logits of tokens already generated; 1 is off"),
    # The objective.
    Rule("epsilon", "[0, 1]", "the lower clip: ratios below 1 - epsilon are clipped"),
    Rule("epsilon_high", ">= 0", "the upper clip: ratios above 1 + epsilon_high are clipped; unset: epsilon"),
    Rule("delta", ">= 1", "the dual clip's upper bound on the ratio for negative advantages; unset: off"),
    Rule("beta", ">= 0", "the KL coefficient; 0 loads no reference model"),
    Rule("top_entropy_quantile", "[0, 1]", "the share of highest-entropy tokens trained on"),
    Rule("entropy_coef", ">= 0", "the entropy bonus"),
    Rule("ref_model_mixup_alpha", "[0, 1]", "the reference model's mixing weight"),
    Rule("ref_model_sync_steps", ">= 1", "steps between reference-model syncs"),
    Rule("max_consecutive_nonfinite_steps", ">= 1", "skipped steps in a row before the run stops"),
    # Seeds and workers.
    Rule("seed", f"[0, {SEED_MAX}]", "transformers seeds numpy, which takes 0 to 2**32 - 1", command="both"),
    Rule("data_seed", f"[0, {SEED_MAX}]", "numpy takes 0 to 2**32 - 1"),
    Rule("dataloader_num_workers", ">= 0", "data-loading processes; 0 loads in the main one"),
    Rule("vllm_gpu_memory_utilization", "(0, 1]", "the share of GPU memory vLLM may take"),
    Rule("vllm_tensor_parallel_size", ">= 1", "GPUs per vLLM engine"),
    # PEFT.
    Rule("lora_r", ">= 1", "the LoRA rank"),
    Rule("lora_alpha", "> 0", "the LoRA scale"),
    Rule("lora_dropout", "[0, 1)", _PROBABILITY),
    # The async trainer.
    Rule("max_staleness", ">= 0", "model versions a rollout may lag behind"),
    Rule("weight_sync_steps", ">= 1", "optimizer steps between weight syncs"),
    Rule("queue_maxsize", ">= 1", "rollouts the queue holds"),
    Rule("token_budget", ">= 0", "tokens per micro-batch; 0: fixed-count micro-batches"),
    # `up-trl eval`.
    Rule("k", ">= 1", "samples per problem", command="eval"),
    Rule("limit", ">= 1", "problems per benchmark; unset scores all", command="eval"),
    Rule("temperature", ">= 0", "0 decodes greedily, one sample per problem", command="eval"),
    Rule("max_new_tokens", ">= 1", "the longest completion, in tokens", command="eval"),
    Rule("batch_size", ">= 1", "prompts per generate() call", command="eval"),
)  # fmt: skip

# Numeric settings deliberately without a range of their own (they still must be finite), and why; a test checks
# that every numeric setting of the three trainers' parsers is in RULES or here.
UNRANGED: dict[str, str] = {
    "up_positive_min_prob": "ranged by guards.GuardConfigMixin.check_guards when the config is built",
    "num_generations": "checks._check_batch (at least 2, with its own message)",
    "arithmetic_few_shot": "arithmetic.worked_example_turns (0 to 3, naming the examples), before any model loads",
    **dict.fromkeys(("local_rank", "vllm_server_port", "vllm_group_port", "ddp_timeout", "ddp_bucket_cap_mb",
                     "torch_empty_cache_steps", "eval_accumulation_steps", "eval_delay", "dataloader_prefetch_factor",
                     "vllm_server_timeout", "vllm_max_model_length", "max_tool_calling_iterations",
                     "num_completions_to_print", "neftune_noise_alpha", "router_aux_loss_coef",
                     "request_timeout", "weight_sync_timeout", "heartbeat_stale_after_s", "fork_threshold_tokens",
                     "max_inflight_tasks", "pad_to_multiple_of"),
                    "launcher, server or debugging settings that transformers, TRL or accelerate range themselves"),
    **dict.fromkeys(("sapo_temperature_neg", "sapo_temperature_pos", "vespo_k_pos", "vespo_lambda_pos",
                     "vespo_k_neg", "vespo_lambda_neg", "entropy_coef_min", "entropy_coef_max", "entropy_coef_delta",
                     "entropy_target", "vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min",
                     "off_policy_mask_threshold", "vllm_importance_sampling_cap", "reward_weights"),
                    "other objectives' and TRL's own coefficients: any finite value is TRL's to judge"),
}  # fmt: skip


def rules_for(command: str) -> dict[str, Rule]:
    """The rules of `up-trl COMMAND` ("train" or "eval"), by name."""
    return {rule.name: rule for rule in RULES if rule.command in (command, "both")}


def _numbers(value: Any) -> Iterable[float]:
    """The numbers in a setting's value (a list's each), bools and non-numbers left out."""
    values = value if isinstance(value, (list, tuple)) else [value]
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def check_ranges(settings: Settings, command: str = "train") -> None:
    """A UsageError, one line, for the first setting out of its rule's range or not finite."""
    rules = rules_for(command)
    for name in settings.values:
        for value in _numbers(settings[name]):
            if isinstance(value, float) and not math.isfinite(value):
                rule = rules.get(name)
                wanted = rule.describe() if rule else "must be a finite number"
                raise UsageError(f"{settings.show(name)} is not a finite number: {name} {wanted}.")
            rule = rules.get(name)
            if rule is not None and not rule.admits(value):
                raise UsageError(f"{settings.show(name)} is out of range: {name} {rule.describe()}.")


def check_choices(settings: Settings, parser) -> None:
    """A recipe's value for a setting with choices (argparse checks only the command line's)."""
    for action in parser._actions:
        if not action.choices or action.dest not in settings.recipe or action.dest in settings.command_line:
            continue
        value = settings.recipe[action.dest]
        if action.dest == "up_mode" or value is None:  # YAML's on/off booleans: checks._check_up's message
            continue
        spelled = getattr(value, "value", value)
        if str(spelled) not in [str(getattr(c, "value", c)) for c in action.choices]:
            known = [str(getattr(c, "value", c)) for c in action.choices]
            raise UsageError(f"{settings.show(action.dest)} is not one of {', '.join(known)}.")
