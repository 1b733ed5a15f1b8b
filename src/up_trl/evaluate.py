"""`up-trl eval`: score a model on math benchmarks with k samples per problem: avg@k, pass@k, maj@k.

    up-trl eval --model outputs/quickstart --benchmarks gsm8k math500 --k 4 --limit 50
    up-trl eval --model Qwen/Qwen3-8B --benchmarks aime24 aime25 --k 32 --max_new_tokens 16384   # Hub, vLLM

Generation uses vLLM when it is installed (`--backend auto`), else batched transformers generation; answers are
scored by `rewards.MathAccuracyReward` (math-verify in worker processes with timeouts). Writes
`<output_dir>/eval.json` and `<output_dir>/eval.md`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import time
from collections import Counter
from pathlib import Path

import torch

# benchmark name -> (dataset name in up_trl.data.DATASETS, split)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "gsm8k": ("gsm8k", "test"),
    "math500": ("math500", "test"),
    "minerva": ("minerva", "test"),
    "arithmetic": ("arithmetic", "test"),  # the offline default's task, a held-out stream
    "aime24": ("aime24", "train"),
    "aime25": ("aime25", "train"),
    "amc23": ("amc23", "test"),
    "olympiadbench": ("olympiadbench", "test"),
}
OFFLINE_BENCHMARKS = ("gsm8k", "math500", "minerva", "arithmetic")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al., 2021): 1 - C(n-c, k) / C(n, k).

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 4), pass_at_k(4, 0, 2)
    (0.25, 1.0, 0.0)
    """
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got {n}.")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def majority_correct(answers: list[str | None], correct: list[float]) -> float:
    """maj@k: 1 if the most frequent extracted answer (ties: the earliest) is correct; no answer never wins.

    >>> majority_correct(["7", "8", "7", None], [1, 0, 1, 0]), majority_correct([None, None], [0, 0])
    (1.0, 0.0)
    """
    votes = Counter(a for a in answers if a is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    winner = next(a for a in answers if a is not None and votes[a] == top)
    return float(correct[answers.index(winner)] > 0)


def score_problem(answers: list[str | None], correct: list[float], ks: list[int]) -> dict[str, float]:
    n, c = len(correct), int(sum(x > 0 for x in correct))
    row = {f"avg@{n}": c / n, f"maj@{n}": majority_correct(answers, correct)}
    row.update({f"pass@{k}": pass_at_k(n, c, k) for k in ks})
    return row


def default_ks(k: int) -> list[int]:
    """1, 2, 4, ... up to k, and k itself."""
    ks = [2**i for i in range(int(math.log2(k)) + 1)] if k >= 1 else []
    return sorted(set(ks + [k]))


def transformers_generator(model_path, args):
    """Batched `model.generate` (model loaded once); returns generate(prompts, k) -> k completions per prompt."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[args.dtype]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype).to(device).eval()
    return lambda prompts, k: _generate_transformers(model, tokenizer, prompts, k, args, device)


def _generate_transformers(model, tokenizer, prompts, k, args, device):
    from tqdm.auto import tqdm

    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    outputs: list[list[str]] = []
    for start in tqdm(range(0, len(texts), args.batch_size), desc="generating", unit="batch"):
        batch = tokenizer(texts[start : start + args.batch_size], return_tensors="pt", padding=True,
                          add_special_tokens=False).to(device)  # fmt: skip
        with torch.no_grad():
            out = model.generate(
                **batch,
                do_sample=args.temperature > 0,
                temperature=args.temperature if args.temperature > 0 else None,
                top_p=args.top_p,
                top_k=0,
                max_new_tokens=args.max_new_tokens,
                num_return_sequences=k,
                pad_token_id=tokenizer.pad_token_id,
            )
        decoded = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
        outputs.extend(decoded[i : i + k] for i in range(0, len(decoded), k))
    return outputs


def vllm_generator(model_path, args):
    """vLLM offline generation (GPU); returns generate(prompts, k) -> k completions per prompt."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=model_path, dtype=args.dtype, seed=args.seed)

    def generate(prompts, k):
        params = SamplingParams(n=k, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_new_tokens,
                                seed=args.seed)  # fmt: skip
        return [[o.text for o in r.outputs] for r in llm.chat(list(prompts), params, use_tqdm=True)]

    return generate


def check_benchmarks(benchmarks: list[str], k: int) -> None:
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown:
        raise ValueError(f"Unknown benchmark(s) {unknown}: choose from {sorted(BENCHMARKS)} "
                         f"(offline: {', '.join(OFFLINE_BENCHMARKS)}).")  # fmt: skip
    if k < 1:
        raise ValueError(f"--k must be at least 1, got {k}.")


def evaluate(model_path: str, benchmarks: list[str], args) -> dict:
    """Generate k samples per problem on each benchmark and score them; returns the JSON-able report."""
    from .data import load_math_dataset, system_prompt_from_flag
    from .rewards import extract_answer, make_math_accuracy_reward

    check_benchmarks(benchmarks, args.k)
    backend = args.backend
    if backend == "auto":
        backend = "vllm" if importlib.util.find_spec("vllm") and torch.cuda.is_available() else "transformers"
    system_prompt = system_prompt_from_flag(args.system_prompt)
    # Load every benchmark first: a missing or unreachable one fails before the model is loaded.
    sets = {b: load_math_dataset(BENCHMARKS[b][0], BENCHMARKS[b][1], limit=args.limit, seed=args.seed,
                                 system_prompt=system_prompt) for b in benchmarks}  # fmt: skip
    generate = (vllm_generator if backend == "vllm" else transformers_generator)(model_path, args)
    reward = make_math_accuracy_reward()
    ks = default_ks(args.k)
    torch.manual_seed(args.seed)
    report = {
        "model": model_path,
        "k": args.k,
        "backend": backend,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "max_new_tokens": args.max_new_tokens,
        "limit": args.limit,
        "seed": args.seed,
        "machine": f"{platform.machine()}, {'cuda' if torch.cuda.is_available() else 'cpu'}, "
        f"{torch.get_num_threads()} torch threads",
        "benchmarks": {},
    }
    for name, data in sets.items():
        start = time.perf_counter()
        samples = generate(data["prompt"], args.k)
        flat = [s for group in samples for s in group]
        golds = [g for g in data["solution"] for _ in range(args.k)]
        correct = reward(flat, solution=golds)
        correct = [0.0 if c is None else c for c in correct]
        answers = [(a[0] if a else None) for a in map(extract_answer, flat)]
        rows = [
            score_problem(answers[i : i + args.k], correct[i : i + args.k], ks) for i in range(0, len(flat), args.k)
        ]
        summary = {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
        report["benchmarks"][name] = {
            "problems": len(rows),
            **{key: round(v, 4) for key, v in summary.items()},
            "seconds": round(time.perf_counter() - start, 1),
        }
        if args.save_samples:
            report["benchmarks"][name]["samples"] = [
                {"solution": g, "completions": s} for g, s in zip(data["solution"], samples)
            ]
    return report


def markdown_table(report: dict) -> str:
    names = list(report["benchmarks"])
    keys = [k for k in report["benchmarks"][names[0]] if "@" in k]
    lines = [
        f"Model `{report['model']}`, k={report['k']}, temperature {report['temperature']}, "
        f"{report['max_new_tokens']} new tokens, {report['backend']} on {report['machine']}.",
        "",
        "| benchmark | problems | " + " | ".join(keys) + " |",
        "|---|---|" + "---|" * len(keys),
    ]
    for name in names:
        row = report["benchmarks"][name]
        lines.append(f"| {name} | {row['problems']} | " + " | ".join(f"{row[k]:.3f}" for k in keys) + " |")
    return "\n".join(lines) + "\n"


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="up-trl eval", description="Score a model on math benchmarks.")
    parser.add_argument("--model", default=None, help="Path or Hub id (default: the offline SmolLM2-135M-Instruct).")
    parser.add_argument("--benchmarks", nargs="+", default=["gsm8k"], help=f"Any of {sorted(BENCHMARKS)}.")
    parser.add_argument("--k", type=int, default=4, help="Samples per problem.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N problems of each benchmark.")
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--top_p", type=float, default=0.95)
    parser.add_argument("--max_new_tokens", type=int, default=512)
    parser.add_argument("--batch_size", type=int, default=8, help="Prompts per generate() call (transformers).")
    parser.add_argument("--backend", choices=["auto", "vllm", "transformers"], default="auto")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument("--system_prompt", default=None, help="Default asks for \\boxed{}; 'none' for none.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output_dir", default="outputs/eval")
    parser.add_argument("--save_samples", action="store_true", help="Keep every completion in eval.json.")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    check_benchmarks(args.benchmarks, args.k)
    model = args.model
    if model is None:
        from .models import smollm2_path

        model = smollm2_path()
    report = evaluate(model, args.benchmarks, args)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(report, indent=2))
    table = markdown_table(report)
    (out / "eval.md").write_text(table)
    print(table)
    return 0
