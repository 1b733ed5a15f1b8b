"""`up-trl eval`: score a model on math benchmarks with k samples per problem: avg@k, pass@k, maj@k.

    up-trl eval                                   # the offline default's model on its held-out task
    up-trl eval --model outputs/quickstart --benchmarks gsm8k math500 --k 4 --limit 50
    up-trl eval --model Qwen/Qwen3-8B --benchmarks aime24 aime25 --k 32 --max_new_tokens 16384   # Hub, vLLM

Generation uses vLLM when it is installed (`--backend auto`), else batched transformers generation; answers are
scored by `rewards.MathAccuracyReward` (math-verify in worker processes, each item with its own time bound).
Problems whose gold answer does not parse, or with a sample whose scoring timed out, are left out of every score
and counted (`excluded` in eval.json). maj@k groups answers by mathematical equivalence, not by spelling
(`pass_at_k`, the estimators). With
`--temperature 0` (greedy) every problem has one sample: k is 1. Writes `<output_dir>/eval.json` and `eval.md`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..cli.options import string_to_bool  # transformers' own, copied: `up-trl eval --help` imports no torch
from .pass_at_k import default_ks, equivalence_tables, score_problem

# benchmark name -> (dataset name in up_trl.data.DATASETS, split)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "gsm8k": ("gsm8k", "test"),
    "math500": ("math500", "test"),
    "minerva": ("minerva", "test"),
    "arithmetic": ("arithmetic", "test"),  # the offline default's task: its held-out problems, each once
    "aime24": ("aime24", "train"),
    "aime25": ("aime25", "train"),
    "amc23": ("amc23", "test"),
    "olympiadbench": ("olympiadbench", "test"),
}
OFFLINE_BENCHMARKS = ("gsm8k", "math500", "minerva", "arithmetic")


def check_benchmarks(
    benchmarks: list[str], k: int, arithmetic_ops: Sequence[str] = ("mul1",), arithmetic_few_shot: int = 0
) -> None:
    from ..data.arithmetic import check_arithmetic_ops, worked_example_turns

    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown:
        raise ValueError(f"Unknown benchmark(s) {unknown}: choose from {sorted(BENCHMARKS)} "
                         f"(offline: {', '.join(OFFLINE_BENCHMARKS)}).")  # fmt: skip
    check_arithmetic_ops(arithmetic_ops, "--arithmetic_ops")
    worked_example_turns(arithmetic_few_shot)  # raises on a count out of range
    if arithmetic_few_shot and "arithmetic" not in benchmarks:
        raise ValueError(f"--arithmetic_few_shot {arithmetic_few_shot} applies to the arithmetic benchmark only, not "
                         f"{benchmarks}: drop it, or add arithmetic to --benchmarks.")  # fmt: skip
    if k < 1:
        raise ValueError(f"--k must be at least 1, got {k}.")


def score_benchmark(samples: list[list[str]], solutions: list, k: int, reward=None) -> tuple[dict, list[dict]]:
    """Score k samples per problem: the summary row (scores over the problems that could be scored, and what was
    left out) and one row per problem. A problem is left out when its gold answer does not parse, or when scoring
    any of its samples timed out: counted, never scored as wrong."""
    from ..rewards import CORRECT, GOLD_UNPARSEABLE, TIMEOUT, make_math_accuracy_reward, verify_many

    reward = reward or make_math_accuracy_reward()
    flat = [c for group in samples for c in group]
    # The answers maj@k groups are the ones the reward judged (extracted once, anti-echo rules applied).
    outcomes, answers = reward.judge(flat, [g for g in solutions for _ in range(k)])
    correct = [float(o == CORRECT) for o in outcomes]
    groups = [answers[i : i + k] for i in range(0, len(flat), k)]
    sames, equivalence_timeouts = equivalence_tables(groups, lambda tasks: verify_many(tasks))
    ks = default_ks(k)
    rows, excluded = [], {"gold_unparseable": 0, "timeout": 0}
    for p, group in enumerate(groups):
        problem_outcomes = outcomes[p * k : (p + 1) * k]
        if GOLD_UNPARSEABLE in problem_outcomes:
            excluded["gold_unparseable"] += 1
            rows.append({"excluded": "gold_unparseable"})
            continue
        if TIMEOUT in problem_outcomes:
            excluded["timeout"] += 1
            rows.append({"excluded": "timeout"})
            continue
        answers = [a[0] if a else None for a in group]
        rows.append(score_problem(answers, correct[p * k : (p + 1) * k], ks, sames[p]))
    scored = [r for r in rows if "excluded" not in r]
    summary: dict = {"problems": len(scored)}
    if scored:
        summary.update({key: round(sum(r[key] for r in scored) / len(scored), 4) for key in scored[0]})
    summary["excluded"] = excluded
    summary["timeout_samples"] = outcomes.count(TIMEOUT)
    summary["equivalence_timeouts"] = equivalence_timeouts
    return summary, rows


def benchmark_sets(benchmarks: list[str], args, system_prompt: str | None) -> dict:
    """Each benchmark's problems as prompts with a `solution` column: the first `args.limit` of its split (for
    `arithmetic`: the held-out problems of `args.arithmetic_ops`, shuffled by `args.seed`)."""
    from ..data import load_math_dataset

    options = {"limit": args.limit, "seed": args.seed, "system_prompt": system_prompt}
    arithmetic = {"ops": args.arithmetic_ops, "few_shot": args.arithmetic_few_shot}
    return {
        b: load_math_dataset(*BENCHMARKS[b], **options, **(arithmetic if b == "arithmetic" else {}))
        for b in benchmarks
    }


def evaluate(model_path: str, benchmarks: list[str], args, sets: dict | None = None) -> dict:
    """Generate k samples per problem on each benchmark and score them; returns the JSON-able report. `sets`: the
    benchmarks' problems when loaded already (`benchmark_sets`)."""
    import torch

    from ..data import system_prompt_from_flag

    check_benchmarks(benchmarks, args.k, args.arithmetic_ops, args.arithmetic_few_shot)
    backend = args.backend
    if backend == "auto":
        backend = "vllm" if importlib.util.find_spec("vllm") and torch.cuda.is_available() else "transformers"
    system_prompt = system_prompt_from_flag(args.system_prompt)
    # Load every benchmark first: a missing or unreachable one (or an unknown arithmetic op) fails before the model.
    sets = benchmark_sets(benchmarks, args, system_prompt) if sets is None else sets
    from .generate import transformers_generator, vllm_generator

    generate = (vllm_generator if backend == "vllm" else transformers_generator)(model_path, args)
    torch.manual_seed(args.seed)
    report = {
        "model": model_path,
        "k": args.k,
        "greedy": args.temperature == 0,
        "backend": backend,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "max_new_tokens": args.max_new_tokens,
        "system_prompt": system_prompt,
        "limit": args.limit,
        "seed": args.seed,
        **(
            {"batch_size": args.batch_size, "share_prompt_prefix": args.share_prompt_prefix}
            if backend == "transformers"
            else {}
        ),
        **(
            {"arithmetic_ops": list(args.arithmetic_ops), "arithmetic_few_shot": args.arithmetic_few_shot}
            if "arithmetic" in benchmarks
            else {}
        ),
        "machine": f"{platform.machine()}, {'cuda' if torch.cuda.is_available() else 'cpu'}, "
        f"{torch.get_num_threads()} torch threads",
        "benchmarks": {},
    }
    for name, data in sets.items():
        start = time.perf_counter()
        samples = generate(data["prompt"], args.k)
        summary, _ = score_benchmark(samples, data["solution"], args.k)
        report["benchmarks"][name] = {**summary, "seconds": round(time.perf_counter() - start, 1)}
        if args.save_samples:
            report["benchmarks"][name]["samples"] = [
                {"solution": g, "completions": s} for g, s in zip(data["solution"], samples)
            ]
    return report


def markdown_table(report: dict) -> str:
    """The report as markdown: one row per benchmark, or, with a base model scored beside the evaluated one
    (`report["base"]`, `evaluation.base`), three: the evaluated model, the base and the change."""
    from .base import comparison_rows

    names = list(report["benchmarks"])
    keys = list(dict.fromkeys(k for name in names for k in report["benchmarks"][name] if "@" in k))
    sampling = "greedy (one sample per problem)" if report.get("greedy") else f"temperature {report['temperature']}"
    base = report.get("base")
    head = f"Model `{report['model']}`" + (f", base model `{base['model']}` beside it" if base else "")
    lines = [
        f"{head}, k={report['k']}, {sampling}, "
        f"{report['max_new_tokens']} new tokens, {report['backend']} on {report['machine']}"
        + (f"; arithmetic ops {', '.join(report['arithmetic_ops'])}" if "arithmetic_ops" in report else "")
        + (f", worked examples: {report['arithmetic_few_shot']}." if report.get("arithmetic_few_shot") else "."),
        "",
        "| benchmark |"
        + (" model |" if base else "")
        + " problems | "
        + " | ".join(keys)
        + " | left out: gold unparseable | left out: timeout |",
        "|---|---|" + ("---|" if base else "") + "---|" * (len(keys) + 2),
        *comparison_rows(report, keys),
        "",
        "Scores are over the problems scored; left-out problems are counted, never scored as wrong."
        + (
            " The base model's scores were read from the cache (scored once before)."
            if base and base["cached"]
            else ""
        ),
    ]
    return "\n".join(lines) + "\n"


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
    parser.add_argument("--model", default=None, help=f"Path or Hub id (default: {DEFAULT_MODEL_DIR} if it holds "
                        "a model, else the offline SmolLM2-135M-Instruct).")  # fmt: skip
    parser.add_argument("--benchmarks", nargs="+", default=["arithmetic"], help=f"Any of {sorted(BENCHMARKS)} "
                        "(default: arithmetic, the offline default's held-out test split).")  # fmt: skip
    parser.add_argument("--k", type=int, default=4, help="Samples per problem (1 with --temperature 0).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N problems of each benchmark.")
    unset = " (default: {} for arithmetic alone, else {})"
    for name, kind in (("temperature", float), ("top_p", float), ("max_new_tokens", int)):
        parser.add_argument(f"--{name}", type=kind, default=None,
                            help=unset.format(OFFLINE_TASK_DEFAULTS[name], BENCHMARK_DEFAULTS[name]))  # fmt: skip
    parser.add_argument("--batch_size", type=int, default=8, help="Prompts per generate() call (transformers).")
    parser.add_argument("--share_prompt_prefix", type=string_to_bool, default=True,
                        help="transformers on CPU: prefill each prompt once for its k samples (true, the default; the "
                        "same samples) or k times (false).")  # fmt: skip
    parser.add_argument("--backend", choices=["auto", "vllm", "transformers"], default="auto")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument("--system_prompt", default=None, help="'none' for no system turn (the default for arithmetic "
                        "alone); otherwise the default asks for \\boxed{}.")  # fmt: skip
    parser.add_argument("--arithmetic_ops", nargs="+", default=["mul1"], help="arithmetic only: its held-out "
                        "problems of mul1 (1-digit x 1-digit, the default), mul (1-digit x 2-digit), add and sub "
                        "(2-digit), as `up-trl train --arithmetic_ops` trained on.")  # fmt: skip
    parser.add_argument("--arithmetic_few_shot", type=int, default=0, help="arithmetic only: worked examples before "
                        "each problem (0 to 3), as `up-trl train --arithmetic_few_shot` trained with.")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output_dir", default=None, help="Where eval.json and eval.md go (default: <model>/eval "
                        "for a local model, else outputs/eval).")  # fmt: skip
    parser.add_argument("--save_samples", action="store_true", help="Keep every completion in eval.json.")
    parser.add_argument("--base_model", default="auto", help="Score this model beside --model on the same problems "
                        "(cached: once per model and settings): auto (the default) is the base a run folder was "
                        "trained from, none skips it, or a folder or Hub id (up_trl.evaluation.base).")  # fmt: skip
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
    """`up-trl eval`. Bad input (an unknown benchmark, a model folder that does not exist, holds no model or no
    weights, or whose config transformers cannot read, an output folder that is a file or cannot be written, a
    benchmark that needs the unreachable Hub) is one line and exit status 2, before any model loads."""
    from ..cli.checks import Settings, check_output_folder, flags_given
    from ..cli.rules import check_ranges
    from ..data import DataError, HubUnavailableError, system_prompt_from_flag
    from ..data.model_source import check_model_type, locate_model
    from ..data.models import OfflineModelMissingError
    from ..extras import missing
    from .base import choose_base, score_base

    args = make_parser().parse_args(argv)
    try:
        given = flags_given(sys.argv[1:] if argv is None else argv)
        check_ranges(Settings(vars(args), given, {}, "command line"), "eval")  # before any default is filled in
        check_benchmarks(args.benchmarks, args.k, args.arithmetic_ops, args.arithmetic_few_shot)
        if args.backend == "vllm" and missing("vllm"):
            raise ValueError(f"--backend vllm: {missing('vllm')}")
        notes = resolve_defaults(args)
        check_output_folder(args.output_dir)  # a file, or a place that cannot be written: before any model loads
        args.model = locate_model(args.model, "--model", near=["outputs"])
        check_model_type(args.model, "--model")
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
