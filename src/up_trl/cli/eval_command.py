"""`up-trl eval`: its options (`evaluation.config.EvalArguments`) checked, then scored (`evaluation.evaluate`).

up-trl eval                                   # the offline default's model on its held-out task
up-trl eval --model outputs/quickstart --benchmarks gsm8k math500 --k 4 --limit 50
up-trl eval --model Qwen/Qwen3-8B --benchmarks aime24 aime25 --k 32 --max_new_tokens 16384   # Hub, vLLM"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..evaluation.config import parse_eval_args
from ..evaluation.evaluate import benchmark_sets, check_benchmarks, evaluate, markdown_table


def main(argv: list[str] | None = None) -> int:
    """`up-trl eval`, writing eval.json and eval.md; bad input is one line, exit status 2, before any model loads."""
    from ..checks import Settings
    from ..checks.ranges import check_ranges
    from ..checks.recipe_and_flags import flags_given
    from ..data import DataError, HubUnavailableError, system_prompt_from_flag
    from ..evaluation.base import choose_base, score_base
    from ..extras import missing
    from ..models.offline import OfflineModelMissingError
    from ..models.source import check_model
    from ..run.job import check_output_folder

    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_eval_args(argv)
    try:
        check_ranges(Settings(vars(args), flags_given(argv), {}, "command line"), "eval")  # before defaults are set
        check_benchmarks(args.benchmarks, args.k, args.arithmetic_ops, args.arithmetic_few_shot, args.arithmetic_split)
        if args.backend == "vllm" and missing("vllm"):
            raise ValueError(f"--backend vllm: {missing('vllm')}")
        notes = args.resolve_defaults()
        check_output_folder(args.output_dir)  # a file, or a place that cannot be written: before any model loads
        args.model = check_model(args.model, "--model")  # transformers' AutoConfig reads its config.json
        base, base_note = choose_base(args)
        sets = benchmark_sets(args.benchmarks, args, system_prompt_from_flag(args.system_prompt))
    except (ValueError, DataError, HubUnavailableError, OfflineModelMissingError) as error:  # incl. ModelNotFoundError
        print(f"up-trl eval: error: {error}", file=sys.stderr)
        return 2
    run = f"{', '.join(args.benchmarks)}, k={args.k}, temperature {args.temperature}, top_p {args.top_p}, "
    run += f"{args.max_new_tokens} new tokens, system prompt {args.system_prompt or 'default (boxed)'}"
    for note in [*notes, *([base_note] if base_note else []), run]:  # the notes, then what runs
        print(f"up-trl eval: {note}", flush=True)
    report = evaluate(args.model, args.benchmarks, args, sets)
    if base is not None:
        base_report, cached = score_base(base, args, sets)
        report["base"] = {"model": base, "cached": cached, "benchmarks": base_report["benchmarks"]}
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    table = markdown_table(report)
    (out / "eval.md").write_text(table)
    print(table)
    print(f"up-trl eval: wrote {out / 'eval.json'} and {out / 'eval.md'}", flush=True)
    return 0
