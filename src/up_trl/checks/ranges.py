"""The value ranges `up-trl train` and `up-trl eval` check before any model loads (command line, recipe and offline
default alike). A train rule is kept only while TRL's config accepts a value outside it, which would fail only after
the model loads or train on silently: `tests/test_cli_checks.py::test_library_accepts_what_we_refuse[NAME]` (and
`[nonfinite]`: every float must be finite); the day it fails for a name, delete the rule. A failure is one line:

    --top_p 1.5 is out of range: top_p must be in (0, 1] (a probability: the share of the sampling mass kept)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import Settings, UsageError

SEED_MAX = 2**32 - 1  # numpy's seeds (transformers' set_seed seeds numpy too)


@dataclass(frozen=True)
class Rule:
    """`name` must lie in `allowed` (`> 0`, `>= 1`, `[0, 1]`, `(0, 1]`), or be one of `sentinels` (value: meaning)."""

    name: str
    allowed: str
    why: str
    sentinels: Mapping[float, str] = field(default_factory=dict)

    def admits(self, value: float) -> bool:
        low, high, low_closed, high_closed = parse_range(self.allowed)
        inside = (value >= low if low_closed else value > low) and (value <= high if high_closed else value < high)
        return inside or value in self.sentinels

    def describe(self) -> str:
        """'must be in (0, 1] (why)', with the sentinels."""
        sentinels = "".join(f"; or {v:g}: {meaning}" for v, meaning in self.sentinels.items())
        where = f"in {self.allowed}" if self.allowed[0] in "[(" else self.allowed
        return f"must be {where} ({self.why}){sentinels}"


def parse_range(text: str) -> tuple[float, float, bool, bool]:
    """(low, high, low closed, high closed) of a range as `Rule` writes it.

    >>> parse_range("(0, 1]"), parse_range(">= 1")
    ((0.0, 1.0, False, True), (1.0, inf, True, False))
    """
    if text.startswith(">"):
        return float(text.lstrip(">= ")), math.inf, text.startswith(">="), False
    low, high = text[1:-1].split(",")
    return float(low), float(high), text[0] == "[", text[-1] == "]"


_PROBABILITY = "a probability"
TRAIN_RULES: tuple[Rule, ...] = (
    Rule("max_steps", ">= 1", "optimizer steps to train; 0 would still run one",
         sentinels={-1: "TRL's default, train --num_train_epochs epochs instead"}),
    Rule("num_train_epochs", "> 0", "used when max_steps is -1"),
    Rule("save_steps", "> 0", "a checkpoint every N steps; below 1, a fraction of the run"),
    Rule("logging_steps", "> 0", "a log line every N steps; below 1, a fraction of the run"),
    Rule("eval_steps", "> 0", "an evaluation every N steps"),
    Rule("save_total_limit", ">= 1", "checkpoints kept; unset keeps all"),
    Rule("learning_rate", "> 0", "the AdamW step size: 0 trains nothing, a negative one climbs the loss"),
    Rule("weight_decay", ">= 0", "AdamW's decoupled weight decay"),
    Rule("adam_beta1", "[0, 1)", "AdamW's first-moment decay"),
    Rule("adam_beta2", "[0, 1)", "AdamW's second-moment decay"),
    Rule("adam_epsilon", "> 0", "AdamW's denominator floor"),
    Rule("max_grad_norm", ">= 0", "gradient clipping norm; 0 turns clipping off"),
    Rule("label_smoothing_factor", "[0, 1)", _PROBABILITY),
    Rule("gradient_accumulation_steps", ">= 1", "micro-batches per optimizer step"),
    # Batch shape (TRL refuses a batch --num_generations does not divide itself).
    Rule("num_generations", ">= 2", "a group per prompt: an advantage is a completion's reward against its group's"),
    Rule("per_device_train_batch_size", ">= 1", "completions per process per micro-batch"),
    Rule("per_device_eval_batch_size", ">= 1", "completions per process per evaluation batch"),
    Rule("steps_per_generation", ">= 1", "optimizer mini-batches per rollout batch"),
    Rule("generation_batch_size", ">= 1", "completions per rollout batch"),
    Rule("num_iterations", ">= 1", "updates per rollout batch"),
    Rule("num_generations_eval", ">= 1", "completions per prompt in evaluation"),
    Rule("max_completion_length", ">= 1", "the longest completion, in tokens"),
    Rule("dataset_limit", ">= 1", "training problems kept; unset keeps all"),
    Rule("temperature", "> 0", "sampling divides the logits by it, and training needs samples"),
    Rule("top_p", "(0, 1]", "a probability: the share of the sampling mass kept"),
    Rule("top_k", ">= 0", "the most likely tokens kept; 0 turns it off"),
    Rule("min_p", "[0, 1]", _PROBABILITY),
    Rule("repetition_penalty", "> 0", "divides the logits of tokens already generated; 1 is off"),
    # The objective (UP's configs refuse --delta below 1 themselves).
    Rule("epsilon", "[0, 1]", "the lower clip: ratios below 1 - epsilon are clipped"),
    Rule("epsilon_high", ">= 0", "the upper clip: ratios above 1 + epsilon_high are clipped; unset: epsilon"),
    Rule("beta", ">= 0", "the KL coefficient; 0 loads no reference model"),
    Rule("top_entropy_quantile", "[0, 1]", "the share of highest-entropy tokens trained on"),
    Rule("entropy_coef", ">= 0", "the entropy bonus"),
    Rule("ref_model_mixup_alpha", "[0, 1]", "the reference model's mixing weight"),
    Rule("ref_model_sync_steps", ">= 1", "steps between reference-model syncs"),
    Rule("max_consecutive_nonfinite_steps", ">= 1", "skipped steps in a row before the run stops"),
    Rule("seed", f"[0, {SEED_MAX}]", "transformers seeds numpy, which takes 0 to 2**32 - 1"),
    Rule("data_seed", f"[0, {SEED_MAX}]", "numpy takes 0 to 2**32 - 1"),
    Rule("dataloader_num_workers", ">= 0", "data-loading processes; 0 loads in the main one"),
    Rule("vllm_gpu_memory_utilization", "(0, 1]", "the share of GPU memory vLLM may take"),
    Rule("vllm_tensor_parallel_size", ">= 1", "GPUs per vLLM engine"),
    # PEFT (its LoraConfig takes any value; LoRA layers check r only when they wrap the loaded model).
    Rule("lora_r", ">= 1", "the LoRA rank"),
    Rule("lora_alpha", "> 0", "the LoRA scale"),
    Rule("lora_dropout", "[0, 1)", _PROBABILITY),
    Rule("max_staleness", ">= 0", "model versions a rollout may lag behind"),
    Rule("weight_sync_steps", ">= 1", "optimizer steps between weight syncs"),
    Rule("queue_maxsize", ">= 1", "rollouts the queue holds"),
    Rule("token_budget", ">= 0", "tokens per micro-batch; 0: fixed-count micro-batches"),
)  # fmt: skip

# `up-trl eval` (argparse checks no range; `evaluation.check_benchmarks` checks --k and --arithmetic_few_shot).
EVAL_RULES: tuple[Rule, ...] = (
    Rule("limit", ">= 1", "problems per benchmark; unset scores all"),
    Rule("temperature", ">= 0", "0 decodes greedily, one sample per problem"),
    Rule("max_new_tokens", ">= 1", "the longest completion, in tokens"),
    Rule("batch_size", ">= 1", "prompts per generate() call"),
    *(rule for rule in TRAIN_RULES if rule.name in ("top_p", "seed")),  # train's, word for word
)


def rules_for(command: str) -> dict[str, Rule]:
    """The rules of `up-trl COMMAND` ("train" or "eval"), by name."""
    return {rule.name: rule for rule in (TRAIN_RULES if command == "train" else EVAL_RULES)}


def check_ranges(settings: Settings, command: str = "train") -> None:
    """A UsageError, one line, for the first setting out of its rule's range or not finite."""
    rules = rules_for(command)
    for name in settings.values:
        rule, given = rules.get(name), settings[name]
        values = given if isinstance(given, (list, tuple)) else [given]
        for value in (v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)):  # a list's each
            if isinstance(value, float) and not math.isfinite(value):
                wanted = rule.describe() if rule else "must be a finite number"
                raise UsageError(f"{settings.show(name)} is not a finite number: {name} {wanted}.")
            if rule is not None and not rule.admits(value):
                raise UsageError(f"{settings.show(name)} is out of range: {name} {rule.describe()}.")
