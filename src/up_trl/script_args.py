"""`up-trl train`'s script arguments: `trl grpo`'s and ours after them, as open-r1's `configs.py` extends TRL's
(`up_trl.cli.parse` puts them in TRL's parser). Importing this imports TRL."""

from __future__ import annotations

import json
from dataclasses import dataclass

from trl.scripts.grpo import GRPOScriptArguments

from .options import option
from .trainers import TRAINERS


@dataclass
class TrainScriptArguments(GRPOScriptArguments):
    """`trl grpo`'s script arguments, and ours after them. Our defaults where TRL's differ: `dataset_name` is
    `arithmetic` (runs offline with nothing named), `dataset_train_split` None (a short name's first split: math500
    has only `test`), `reward_funcs` `math_accuracy` unless a reward model is named (TRL's none scores nothing)."""

    dataset_name: str = option(
        "arithmetic",
        "What datasets.load_dataset takes (a Hub id, a local folder, a data file) or a folder "
        "written by save_to_disk; or a short name from up_trl.data.DATASETS (offline: gsm8k, math, math500, "
        "minerva, arithmetic). A `prompt` column (text or messages) is used as written, a `problem` one gets "
        "--system_prompt; the gold answer is read into `solution`.",
    )
    dataset_train_split: str | None = option(None, "Split to train on (default: train; a short name's first split).")
    reward_funcs: list[str] | None = option(
        None,
        "Default: math_accuracy, none beside --reward_model_name_or_path (as in trl grpo). Reward names from "
        "up_trl.rewards.REWARD_FUNCS, TRL's (accuracy_reward, reasoning_accuracy_reward, think_format_reward, "
        "get_soft_overlong_punishment), or dotted import paths.",
    )
    dataset_limit: int | None = option(None, "Keep only this many training problems.")
    column_mapping: str | None = option(
        None, 'JSON mapping of your columns to problem/prompt/answer, e.g. {"question": "problem"}.'
    )
    system_prompt: str | None = option(
        None,
        "System prompt (default asks for \\boxed{}); 'none' for no system turn. A dataset's `prompt` "
        "column gets it only when set, and only where it has no system turn.",
    )
    arithmetic_ops: list[str] = option(
        ["mul1"],
        "`arithmetic` only: the problems to generate, any of mul1 (1-digit x 1-digit, the default), "
        "mul (1-digit x 2-digit), add and sub (2-digit), e.g. --arithmetic_ops add sub.",
    )
    arithmetic_few_shot: int = option(
        0,
        "`arithmetic` only: worked examples (earlier chat turns, up_trl.data.arithmetic.ARITHMETIC_WORKED_EXAMPLES) "
        "before each problem, 0 to 3. With 2, SmolLM2-135M gets about one 2-digit sum in five (one in 60 without).",
    )
    share_prompt_prefix: bool = option(
        False,
        "Opt-in CPU saving, not part of UP (grpo and rloo; run.parts.SharedPromptTrainerMixin): on "
        "CPU, in one process, compute each distinct prompt of a batch once in the scoring forwards (the "
        "num_generations completions of a prompt share it), instead of once per completion. Log-probs and "
        "gradients equal TRL's to float rounding, not bit for bit.",
    )
    plot: bool = option(True, "Write metrics.png in the output directory at the end.")
    skip_nonfinite_steps: bool = option(
        True,
        "Skip (and count, as up/nonfinite_skipped_steps) an optimizer step whose gradients are NaN or "
        "inf, instead of writing NaN into the weights (up_trl.run.parts.nonfinite_guard). Not active under "
        "DeepSpeed, whose engine owns the step; under fp16 it leaves the loss scaler's overflows to the scaler "
        "while the scale is above 1.",
    )
    max_consecutive_nonfinite_steps: int = option(
        10, "After this many skipped steps in a row, save a checkpoint and stop training."
    )
    overwrite_output_dir: bool = option(
        False,
        "An --output_dir that holds a previous run is refused; with this flag that run's files "
        "(model, metrics, card, checkpoints) are removed first (up_trl.run.folder).",
    )
    trainer: str = option(
        "grpo",
        "grpo (UPGRPOTrainer), rloo (UPRLOOTrainer) or async_grpo (UPAsyncGRPOTrainer: a CUDA GPU "
        "and a `trl vllm-serve` server). A recipe may name it with a `trainer:` key.",
        choices=list(TRAINERS),
    )

    def __post_init__(self):
        parse_column_mapping(self.column_mapping)  # its JSON, read before anything loads
        if self.reward_funcs is None:
            self.reward_funcs = [] if self.reward_model_name_or_path else ["math_accuracy"]


def parse_column_mapping(text: str | None) -> dict[str, str] | None:
    """`--column_mapping`'s JSON as a dict of column names, or a ValueError saying how to write it."""
    if not text:
        return None
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"--column_mapping {text!r} is not JSON ({error}): write it like "
            '\'{"question": "problem", "solution": "answer"}\' (double quotes inside single quotes).'
        ) from None
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise ValueError(f'--column_mapping {text!r} must map column names to names, like \'{{"q": "problem"}}\'.')
    return mapping
