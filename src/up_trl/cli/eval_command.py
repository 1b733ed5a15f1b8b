"""`up-trl eval`: its options (argparse, no torch: `--help` answers at once), their defaults and checks, then the
scoring (`up_trl.evaluation.evaluate`) and what it writes: `<output_dir>/eval.json` and `eval.md`.

    up-trl eval                                   # the offline default's model on its held-out task
    up-trl eval --model outputs/quickstart --benchmarks gsm8k math500 --k 4 --limit 50
    up-trl eval --model Qwen/Qwen3-8B --benchmarks aime24 aime25 --k 32 --max_new_tokens 16384   # Hub, vLLM
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from transformers.hf_argparser import string_to_bool  # `--flag true|false` as `up-trl train` reads it (no torch)

from ..evaluation.evaluate import BENCHMARKS, benchmark_sets, check_benchmarks, evaluate, markdown_table

# Defaults for options left unset. The offline default's task is scored the way it was trained (no system prompt,
# 64 new tokens, temperature 1, no top-p: the recipe quickstart); other benchmarks ask for \boxed{}.
OFFLINE_TASK_DEFAULTS = {"system_prompt": "none", "max_new_tokens": 64, "temperature": 1.0, "top_p": 1.0}
BENCHMARK_DEFAULTS = {"system_prompt": None, "max_new_tokens": 512, "temperature": 0.6, "top_p": 0.95}
DEFAULT_MODEL_DIR = "outputs/quickstart"  # where `up-trl train` (the offline default) leaves its model


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="up-trl eval",
        description="Score a model on math benchmarks. With no options: the model `up-trl train` left in "
        f"{DEFAULT_MODEL_DIR} (else the base SmolLM2-135M-Instruct) on the held-out arithmetic problems.",
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"Path or Hub id (default: {DEFAULT_MODEL_DIR} if it holds "
        "a model, else the offline SmolLM2-135M-Instruct).",
    )
    parser.add_argument(
        "--benchmarks",
        nargs="+",
        default=["arithmetic"],
        help=f"Any of {sorted(BENCHMARKS)} (default: arithmetic, the offline default's held-out test split).",
    )
    parser.add_argument("--k", type=int, default=4, help="Samples per problem (1 with --temperature 0).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N problems of each benchmark.")
    unset = " (default: {} for arithmetic alone, else {})"
    for name, kind in (("temperature", float), ("top_p", float), ("max_new_tokens", int)):
        parser.add_argument(
            f"--{name}",
            type=kind,
            default=None,
            help=unset.format(OFFLINE_TASK_DEFAULTS[name], BENCHMARK_DEFAULTS[name]),
        )
    parser.add_argument("--batch_size", type=int, default=8, help="Prompts per generate() call (transformers).")
    parser.add_argument(
        "--share_prompt_prefix",
        type=string_to_bool,
        default=True,
        help="transformers on CPU: prefill each prompt once for its k samples (true, the default; the "
        "same samples) or k times (false).",
    )
    parser.add_argument("--backend", choices=["auto", "vllm", "transformers"], default="auto")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument(
        "--system_prompt",
        default=None,
        help="'none' for no system turn (the default for arithmetic alone); otherwise the default asks for \\boxed{}.",
    )
    parser.add_argument(
        "--arithmetic_ops",
        nargs="+",
        default=["mul1"],
        help="arithmetic only: its held-out "
        "problems of mul1 (1-digit x 1-digit, the default), mul (1-digit x 2-digit), add and sub "
        "(2-digit), as `up-trl train --arithmetic_ops` trained on.",
    )
    parser.add_argument(
        "--arithmetic_few_shot",
        type=int,
        default=0,
        help="arithmetic only: worked examples before "
        "each problem (0 to 3), as `up-trl train --arithmetic_few_shot` trained with.",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--output_dir",
        default=None,
        help="Where eval.json and eval.md go (default: <model>/eval for a local model, else outputs/eval).",
    )
    parser.add_argument("--save_samples", action="store_true", help="Keep every completion in eval.json.")
    parser.add_argument(
        "--base_model",
        default="auto",
        help="Score this model beside --model on the same problems "
        "(cached: once per model and settings): auto (the default) is the base a run folder was "
        "trained from, none skips it, or a folder or Hub id (up_trl.evaluation.base).",
    )
    return parser


def resolve_defaults(args: argparse.Namespace) -> list[str]:
    """Fill the options left unset (see OFFLINE_TASK_DEFAULTS); returns notes to print about what was chosen."""
    notes = []
    defaults = OFFLINE_TASK_DEFAULTS if args.benchmarks == ["arithmetic"] else BENCHMARK_DEFAULTS
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.model is None:
        if (Path(DEFAULT_MODEL_DIR) / "config.json").exists():
            args.model = DEFAULT_MODEL_DIR
            notes.append(f"model: {DEFAULT_MODEL_DIR} (what `up-trl train` left there)")
        else:
            from ..data.models import smollm2_path

            args.model = smollm2_path()
            notes.append(f"model: the base SmolLM2-135M-Instruct (no trained model in {DEFAULT_MODEL_DIR} yet)")
    if args.temperature == 0 and args.k != 1:
        notes.append(f"--temperature 0 is greedy decoding: one sample per problem, so k=1 (not {args.k})")
        args.k = 1
    if args.output_dir is None:
        local = Path(args.model).is_dir()
        args.output_dir = str(Path(args.model) / "eval") if local else "outputs/eval"
    return notes


def main(argv: list[str] | None = None) -> int:
    """`up-trl eval`. Bad input (an unknown benchmark, a model transformers' AutoConfig cannot read, a folder with no
    weights, an output folder that is a file or cannot be written, a
    benchmark that needs the unreachable Hub) is one line and exit status 2, before any model loads."""
    from ..data import DataError, HubUnavailableError, system_prompt_from_flag
    from ..data.model_source import check_model
    from ..data.models import OfflineModelMissingError
    from ..evaluation.base import choose_base, score_base
    from ..extras import missing
    from ..run.preflight import check_output_folder
    from .checks import Settings, flags_given
    from .rules import check_ranges

    args = make_parser().parse_args(argv)
    try:
        given = flags_given(sys.argv[1:] if argv is None else argv)
        check_ranges(Settings(vars(args), given, {}, "command line"), "eval")  # before any default is filled in
        check_benchmarks(args.benchmarks, args.k, args.arithmetic_ops, args.arithmetic_few_shot)
        if args.backend == "vllm" and missing("vllm"):
            raise ValueError(f"--backend vllm: {missing('vllm')}")
        notes = resolve_defaults(args)
        check_output_folder(args.output_dir)  # a file, or a place that cannot be written: before any model loads
        args.model = check_model(args.model, "--model")  # transformers' AutoConfig reads its config.json
        base, base_note = choose_base(args)
        sets = benchmark_sets(args.benchmarks, args, system_prompt_from_flag(args.system_prompt))
    except (ValueError, DataError, HubUnavailableError, OfflineModelMissingError) as error:  # incl. ModelNotFoundError
        print(f"up-trl eval: error: {error}", file=sys.stderr)
        return 2
    for note in notes + ([base_note] if base_note else []):
        print(f"up-trl eval: {note}", flush=True)
    print(
        f"up-trl eval: {', '.join(args.benchmarks)}, k={args.k}, temperature {args.temperature}, top_p {args.top_p}, "
        f"{args.max_new_tokens} new tokens, system prompt {args.system_prompt or 'default (boxed)'}",
        flush=True,
    )
    report = evaluate(args.model, args.benchmarks, args, sets)
    if base is not None:
        base_report, cached = score_base(base, args, lambda model, names, a: evaluate(model, names, a, sets))
        report["base"] = {"model": base, "cached": cached, "benchmarks": base_report["benchmarks"]}
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    table = markdown_table(report)
    (out / "eval.md").write_text(table)
    print(table)
    print(f"up-trl eval: wrote {out / 'eval.json'} and {out / 'eval.md'}", flush=True)
    return 0
