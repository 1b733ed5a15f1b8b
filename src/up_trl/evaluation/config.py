"""`up-trl eval`'s options as a dataclass, parsed by transformers' `HfArgumentParser` as `up-trl train`'s are by TRL's
(`--flag true|false`, `--benchmarks a b`), and the defaults it fills in for the options left unset."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..options import option
from .evaluate import BENCHMARKS

# Defaults for options left unset: the offline default's task as trained (recipe quickstart), others ask for \boxed{}.
OFFLINE_TASK_DEFAULTS = {"system_prompt": "none", "max_new_tokens": 64, "temperature": 1.0, "top_p": 1.0}
BENCHMARK_DEFAULTS = {"system_prompt": None, "max_new_tokens": 512, "temperature": 0.6, "top_p": 0.95}
DEFAULT_MODEL_DIR = "outputs/quickstart"  # where `up-trl train` (the offline default) leaves its model
_UNSET = "(default: {} for arithmetic alone, else {})"


@dataclass
class EvalArguments:
    """Score a model on math benchmarks. With no options: the model `up-trl train` left in outputs/quickstart (else
    the base SmolLM2-135M-Instruct) on the held-out arithmetic problems."""

    model: str | None = option(
        None, f"Path or Hub id (default: {DEFAULT_MODEL_DIR} if it holds a model, else the offline SmolLM2)."
    )
    benchmarks: list[str] = option(
        ["arithmetic"],
        f"Any of {sorted(BENCHMARKS)} (default: arithmetic, the offline default's held-out test split).",
    )
    k: int = option(4, "Samples per problem (1 with --temperature 0).")
    limit: int | None = option(None, "Only the first N problems of each benchmark.")
    temperature: float | None = option(None, _UNSET.format(1.0, 0.6))
    top_p: float | None = option(None, _UNSET.format(1.0, 0.95))
    max_new_tokens: int | None = option(None, _UNSET.format(64, 512))
    batch_size: int = option(8, "Prompts per generate() call (transformers).")
    share_prompt_prefix: bool = option(
        True, "transformers on CPU: prefill each prompt once for its k samples (true; the same samples) or k times."
    )
    backend: str = option("auto", "vLLM when installed (auto), or one.", choices=["auto", "vllm", "transformers"])
    dtype: str = option("float32", "The weights' dtype.", choices=["float32", "bfloat16", "float16"])
    system_prompt: str | None = option(
        None, "'none' for no system turn (the default for arithmetic alone); otherwise the default asks for \\boxed{}."
    )
    arithmetic_ops: list[str] = option(
        ["mul1"], "arithmetic only: its held-out problems of mul1 (the default), mul, add and sub, as trained on."
    )
    arithmetic_few_shot: int = option(
        0, "arithmetic only: worked examples before each problem (0 to 3), as trained with."
    )
    arithmetic_split: str = option(
        "test", "arithmetic only: test (what results report) or dev (to choose settings by).", choices=["test", "dev"]
    )
    seed: int = 0
    output_dir: str | None = option(
        None, "Where eval.json and eval.md go (default: <model>/eval for a local model, else outputs/eval)."
    )
    save_samples: bool = option(False, "Keep every completion in eval.json.")
    base_model: str = option(
        "auto",
        "Score this model beside --model on the same problems (cached: once per model and settings): auto (the "
        "default) is the base a run folder was trained from, none skips it, or a folder or Hub id.",
    )

    def resolve_defaults(self) -> list[str]:
        """Fill the options left unset (see OFFLINE_TASK_DEFAULTS); returns notes to print about what was chosen."""
        notes = []
        defaults = OFFLINE_TASK_DEFAULTS if self.benchmarks == ["arithmetic"] else BENCHMARK_DEFAULTS
        for name, value in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if self.model is None:
            if (Path(DEFAULT_MODEL_DIR) / "config.json").exists():
                self.model = DEFAULT_MODEL_DIR
                notes.append(f"model: {DEFAULT_MODEL_DIR} (what `up-trl train` left there)")
            else:
                from ..models.offline import smollm2_path

                self.model = smollm2_path()
                notes.append(f"model: the base SmolLM2-135M-Instruct (no trained model in {DEFAULT_MODEL_DIR} yet)")
        if self.temperature == 0 and self.k != 1:
            notes.append(f"--temperature 0 is greedy decoding: one sample per problem, so k=1 (not {self.k})")
            self.k = 1
        if self.output_dir is None:
            self.output_dir = str(Path(self.model) / "eval") if Path(self.model).is_dir() else "outputs/eval"
        return notes


def parse_eval_args(argv: list[str]) -> EvalArguments:
    """`up-trl eval`'s arguments, by transformers' HfArgumentParser; an unknown option or a dashed spelling
    (`--top-p`) is argparse's usage error."""
    from transformers import HfArgumentParser

    # argparse's plain formatter: each help says its own default (HfArgumentParser's adds "(default: None)")
    parser = HfArgumentParser(
        EvalArguments, prog="up-trl eval", description=EvalArguments.__doc__, formatter_class=argparse.HelpFormatter
    )
    if dashed := [arg for arg in argv if arg.startswith("--") and "-" in arg.split("=", 1)[0][2:]]:
        parser.error(f"unrecognized arguments: {' '.join(dashed)} (options are spelt with underscores: --top_p)")
    args, rest = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args
