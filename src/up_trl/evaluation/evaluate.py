"""What `up-trl eval` runs (the command is `up_trl.cli.eval_command`): k samples per problem of math benchmarks,
scored by `rewards.MathAccuracyReward` as avg@k, pass@k, maj@k (`pass_at_k`). Problems whose gold answer does not
parse, or with a sample whose scoring timed out, are left out of every score and counted (`excluded` in eval.json)."""

from __future__ import annotations

import importlib.util
import platform
import time
from collections.abc import Sequence

from .pass_at_k import default_ks, equivalence_tables, score_problem

# benchmark name -> (dataset name in up_trl.data.DATASETS, split); arithmetic: the offline default's held-out problems
BENCHMARKS: dict[str, tuple[str, str]] = {
    "gsm8k": ("gsm8k", "test"), "math500": ("math500", "test"), "minerva": ("minerva", "test"),
    "arithmetic": ("arithmetic", "test"), "aime24": ("aime24", "train"), "aime25": ("aime25", "train"),
    "amc23": ("amc23", "test"), "olympiadbench": ("olympiadbench", "test"),
}  # fmt: skip


def check_benchmarks(benchmarks: list[str], k: int, ops: Sequence[str] = ("mul1",), few_shot=0, split="test") -> None:
    from ..data import OFFLINE_DATASETS
    from ..data.arithmetic import check_arithmetic_ops, worked_example_turns

    if unknown := [b for b in benchmarks if b not in BENCHMARKS]:
        offline = ", ".join(b for b, (name, _) in BENCHMARKS.items() if name in OFFLINE_DATASETS)
        raise ValueError(f"Unknown benchmark(s) {unknown}: choose from {sorted(BENCHMARKS)} (offline: {offline}).")
    check_arithmetic_ops(ops, "--arithmetic_ops")
    worked_example_turns(few_shot)  # raises on a count out of range
    for flag, value, default in (("few_shot", few_shot, 0), ("split", split, "test")):
        if value != default and "arithmetic" not in benchmarks:
            raise ValueError(
                f"--arithmetic_{flag} {value} applies to the arithmetic benchmark only, not {benchmarks}: drop it, or "
                "add arithmetic to --benchmarks."
            )
    if k < 1:
        raise ValueError(f"--k must be at least 1, got {k}.")


def score_benchmark(samples: list[list[str]], solutions: list, k: int, reward=None) -> tuple[dict, list[dict]]:
    """(summary row, a row per problem) of k samples per problem; a left-out problem is counted, never scored wrong."""
    from ..rewards import CORRECT, GOLD_UNPARSEABLE, TIMEOUT, make_math_accuracy_reward, verify_many

    reward = reward or make_math_accuracy_reward()
    flat = [c for group in samples for c in group]
    # The answers maj@k groups are the ones the reward judged (extracted once, anti-echo rules applied).
    outcomes, answers = reward.judge(flat, [g for g in solutions for _ in range(k)])
    correct = [float(o == CORRECT) for o in outcomes]
    groups = [answers[i : i + k] for i in range(0, len(flat), k)]
    sames, timeouts = equivalence_tables(groups, verify_many)  # comparisons that timed out
    ks = default_ks(k)
    left_out = {GOLD_UNPARSEABLE: "gold_unparseable", TIMEOUT: "timeout"}  # a problem's first reason counts
    rows, excluded = [], dict.fromkeys(left_out.values(), 0)
    for p, group in enumerate(groups):
        why = next((left_out[o] for o in left_out if o in outcomes[p * k : (p + 1) * k]), None)
        if why is not None:
            excluded[why] += 1
            rows.append({"excluded": why})
            continue
        rows.append(score_problem([a[0] if a else None for a in group], correct[p * k : (p + 1) * k], ks, sames[p]))
    scored = [r for r in rows if "excluded" not in r]
    summary: dict = {"problems": len(scored)}
    if scored:
        summary.update({key: round(sum(r[key] for r in scored) / len(scored), 4) for key in scored[0]})
    summary |= {"excluded": excluded, "timeout_samples": outcomes.count(TIMEOUT), "equivalence_timeouts": timeouts}
    return summary, rows


def benchmark_sets(benchmarks: list[str], args, system_prompt: str | None) -> dict:
    """Each benchmark's first `args.limit` problems of its split, as prompts with a `solution` column."""
    from ..data import load_math_dataset

    options = {"limit": args.limit, "seed": args.seed, "system_prompt": system_prompt}
    arithmetic = {"ops": args.arithmetic_ops, "few_shot": args.arithmetic_few_shot, "split": args.arithmetic_split}
    splits = {b: {"split": split} for b, (_, split) in BENCHMARKS.items()} | {"arithmetic": arithmetic}
    return {b: load_math_dataset(BENCHMARKS[b][0], **options, **splits[b]) for b in benchmarks}


def transformers_generator(model_path, args):
    """generate(prompts, k) -> k completions per prompt, with batched `model.generate` (CPU or GPU, the model loaded
    once); on CPU with `share_prompt_prefix`, each prompt prefilled once for its k samples (the same samples)."""
    import copy

    import torch
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..speedups.shared_prompt import shared_prompt_generate

    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, args.dtype)).to(device).eval()
    settings = {"do_sample": args.temperature > 0, "temperature": args.temperature if args.temperature > 0 else None}
    settings |= {"top_p": args.top_p, "top_k": 0, "max_new_tokens": args.max_new_tokens}
    settings["pad_token_id"] = tokenizer.pad_token_id
    beams = model.generation_config.num_beams or 1  # a checkpoint's own beams: generate's num_return_sequences path

    def generate(prompts, k):
        share = device == "cpu" and getattr(args, "share_prompt_prefix", True) and k > 1 and beams == 1
        texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
        outputs: list[list[str]] = []
        for start in tqdm(range(0, len(texts), args.batch_size), desc="generating", unit="batch"):
            batch = tokenizer(
                texts[start : start + args.batch_size], return_tensors="pt", padding=True, add_special_tokens=False
            ).to(device)
            with torch.no_grad():
                if share:  # generate's own config, updated with the settings, as `generate(**settings)` builds it
                    config = copy.deepcopy(model.generation_config)
                    config.update(**settings, num_return_sequences=1)  # the k copies are rows already
                    rows = {key: value.repeat_interleave(k, dim=0) for key, value in batch.items()}
                    out = shared_prompt_generate(model.generate, model, **rows, generation_config=config)
                else:
                    out = model.generate(**batch, num_return_sequences=k, **settings)
            decoded = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
            outputs.extend(decoded[i : i + k] for i in range(0, len(decoded), k))
        return outputs

    return generate


def vllm_generator(model_path, args):
    """generate(prompts, k) -> k completions per prompt, with vLLM's offline engine (GPU)."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=model_path, dtype=args.dtype, seed=args.seed)

    def generate(prompts, k):
        params = SamplingParams(
            n=k, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_new_tokens, seed=args.seed
        )
        return [[o.text for o in r.outputs] for r in llm.chat(list(prompts), params, use_tqdm=True)]

    return generate


def evaluate(model_path: str, benchmarks: list[str], args, sets: dict | None = None) -> dict:
    """The JSON-able report: k samples per problem of each benchmark (`sets`, default `benchmark_sets`), scored."""
    import torch

    from ..data import system_prompt_from_flag

    check_benchmarks(benchmarks, args.k, args.arithmetic_ops, args.arithmetic_few_shot, args.arithmetic_split)
    backend = args.backend
    if backend == "auto":
        backend = "vllm" if importlib.util.find_spec("vllm") and torch.cuda.is_available() else "transformers"
    system_prompt = system_prompt_from_flag(args.system_prompt)
    arithmetic = {f"arithmetic_{k}": getattr(args, f"arithmetic_{k}") for k in ("ops", "few_shot", "split")}
    # Load every benchmark first: a missing or unreachable one (or an unknown arithmetic op) fails before the model.
    sets = benchmark_sets(benchmarks, args, system_prompt) if sets is None else sets
    generate = (vllm_generator if backend == "vllm" else transformers_generator)(model_path, args)
    torch.manual_seed(args.seed)
    report = {"model": model_path, "k": args.k, "greedy": args.temperature == 0, "backend": backend}
    report |= {key: getattr(args, key) for key in ("temperature", "top_p", "max_new_tokens")}
    report |= {"system_prompt": system_prompt, "limit": args.limit, "seed": args.seed}
    report |= {key: getattr(args, key) for key in ("batch_size", "share_prompt_prefix") if backend == "transformers"}
    report |= arithmetic if "arithmetic" in benchmarks else {}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    report |= {"machine": f"{platform.machine()}, {device}, {torch.get_num_threads()} torch threads", "benchmarks": {}}
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
    """The report as markdown: a row per benchmark, or three with a base model: evaluated, base and the change."""
    keys = list(dict.fromkeys(k for row in report["benchmarks"].values() for k in row if "@" in k))
    sampling = "greedy (one sample per problem)" if report.get("greedy") else f"temperature {report['temperature']}"
    base = report.get("base")
    head = f"Model `{report['model']}`" + (f", base model `{base['model']}` beside it" if base else "")
    note = " The base model's scores were read from the cache (scored once before)." if base and base["cached"] else ""
    lines = [
        f"{head}, k={report['k']}, {sampling}, "
        f"{report['max_new_tokens']} new tokens, {report['backend']} on {report['machine']}"
        + (f"; arithmetic ops {', '.join(report['arithmetic_ops'])}" if "arithmetic_ops" in report else "")
        + (f", worked examples: {report['arithmetic_few_shot']}" if report.get("arithmetic_few_shot") else "")
        + (f", split {report['arithmetic_split']}." if report.get("arithmetic_split", "test") != "test" else "."),
        "",
        f"| benchmark |{' model |' if base else ''} problems | {' | '.join(keys)} | left out: gold unparseable | "
        "left out: timeout |",
        "|---|---|" + ("---|" if base else "") + "---|" * (len(keys) + 2),
        *comparison_rows(report, keys),
        "",
        "Scores are over the problems scored; left-out problems are counted, never scored as wrong." + note,
    ]
    return "\n".join(lines) + "\n"


def comparison_rows(report: dict, keys: list[str]) -> list[str]:
    """The markdown rows of each benchmark: the evaluated model, its base, and the change (evaluated - base)."""
    base = report.get("base")
    lines = []
    for name, row in report["benchmarks"].items():
        lines.append(_row(name, "evaluated" if base else None, row, keys))
        if base and name in base["benchmarks"]:
            other = base["benchmarks"][name]
            lines.append(_row(name, "base", other, keys))
            change = " | ".join(f"{row[k] - other[k]:+.3f}" if k in row and k in other else "-" for k in keys)
            lines.append(f"| {name} | change | | {change} | | |")
    return lines


def _row(name: str, which: str | None, row: dict, keys: list[str]) -> str:
    scores = " | ".join(f"{row[k]:.3f}" if k in row else "-" for k in keys)
    excluded, model = row["excluded"], f" {which} |" if which else ""
    return f"| {name} |{model} {row['problems']} | {scores} | {excluded['gold_unparseable']} | {excluded['timeout']} |"
