r"""How often does each math scorer give a reward it should not? Labelled cases, three scorers side by side.

Scores `benchmarks/data/scorer_cases.jsonl` (written by `make_scorer_cases.py`: completions built from MATH-500 and
GSM8K golds, right by construction or wrong by a stated perturbation) with

- up-trl: `up_trl.rewards.math_accuracy_reward` (strict answer extraction, math-verify in worker processes;
  `UP_TRL_REWARD_WORKERS` as set), called on batches of `--batch_size` completions as a trainer would;
- TRL: `trl.rewards.accuracy_reward` (math-verify on the whole reply, LaTeX only, boxed first; returns None for
  an unparseable gold: counted as skipped);
- plain math-verify: `verify(parse(gold), parse(completion))` with math-verify's defaults.

A reward of 1 on a label-0 case is a false positive (what an unclipped positive branch learns from at full
strength), a reward below 1 on a label-1 case a false negative. Precision = TP / (TP + FP) and recall =
TP / (TP + FN) over the scored (not skipped) cases; items/s is the scorer's wall-clock throughput on this machine,
after one warm-up call (imports, worker start-up) timed apart as `startup_s`.

    python benchmarks/scorer.py               # all cases; writes outputs/benchmarks/scorer/{results.json,table.md}
    python benchmarks/scorer.py --output_dir benchmarks/results/scorer     # the published tuned-set figures
    python benchmarks/scorer.py --limit 20    # a smoke run on 20 cases spread over the file

Other labelled sets, each scored with `--cases benchmarks/data/<set>.jsonl --output_dir benchmarks/results/<name>`:
`scorer_cases_heldout` (`scorer_heldout`, written without reading the rules, since read to fix its classes),
`scorer_cases_blind2` (`scorer_blind2`, written blind by another author) and `scorer_cases_issue17`
(`scorer_issue17`, the classes of issue 17, written by the developer who wrote their rules: not blind).

The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "data" / "scorer_cases.jsonl"
OUTPUT = Path("outputs") / "benchmarks" / "scorer"  # outside the source tree; published: --output_dir
SCORERS = ("up-trl", "trl", "math-verify")


def load_cases(path: Path, limit: int | None) -> list[dict]:
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if limit is not None and limit < len(cases):
        step = len(cases) / limit  # spread over the file, so a smoke run sees many categories
        cases = [cases[int(i * step)] for i in range(limit)]
    return cases


def score_up_trl(cases: list[dict], batch_size: int) -> tuple[list[float | None], dict]:
    from up_trl.rewards import math_accuracy_reward

    math_accuracy_reward.stats.reset()
    rewards: list[float | None] = []
    for start in range(0, len(cases), batch_size):
        batch = cases[start : start + batch_size]
        completions = [[{"role": "assistant", "content": c["completion"]}] for c in batch]
        rewards += math_accuracy_reward(completions, solution=[c["gold"] for c in batch])
    return rewards, {"timeouts": math_accuracy_reward.stats.timeouts}


def score_trl(cases: list[dict], batch_size: int) -> tuple[list[float | None], dict]:
    from trl.rewards import accuracy_reward

    rewards: list[float | None] = []
    for start in range(0, len(cases), batch_size):
        batch = cases[start : start + batch_size]
        completions = [[{"role": "assistant", "content": c["completion"]}] for c in batch]
        rewards += accuracy_reward(completions, [c["gold"] for c in batch])
    return rewards, {}


def score_math_verify(cases: list[dict], batch_size: int) -> tuple[list[float | None], dict]:
    from math_verify import parse, verify

    rewards: list[float | None] = []
    for case in cases:
        gold = parse(case["gold"])
        rewards.append(float(verify(gold, parse(case["completion"]))) if gold else None)
    return rewards, {}


SCORE: dict[str, Callable[[list[dict], int], tuple[list[float | None], dict]]] = {
    "up-trl": score_up_trl,
    "trl": score_trl,
    "math-verify": score_math_verify,
}


def metrics(cases: list[dict], rewards: list[float | None]) -> dict:
    tp = fp = fn = tn = skipped = 0
    false_positives, false_negatives = [], []
    for case, reward in zip(cases, rewards, strict=True):
        if reward is None:
            skipped += 1
            continue
        hit = reward >= 1.0
        if case["label"] == 1:
            tp, fn = tp + hit, fn + (not hit)
            if not hit:
                false_negatives.append(case)
        else:
            fp, tn = fp + hit, tn + (not hit)
            if hit:
                false_positives.append(case)
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "true_negatives": tn,
        "skipped": skipped,
        "false_positive_cases": false_positives,
        "false_negative_cases": false_negatives,
    }


def per_category(cases: list[dict], rewards: dict[str, list[float | None]]) -> list[dict]:
    rows: dict[str, dict] = {}
    for i, case in enumerate(cases):
        row = rows.setdefault(case["category"], {"category": case["category"], "labels": set(), "n": 0})
        row["labels"].add(case["label"])
        row["n"] += 1
        for name in SCORERS:
            reward = rewards[name][i]
            wrong = reward is not None and (reward >= 1.0) != (case["label"] == 1)
            row[f"{name} errors"] = row.get(f"{name} errors", 0) + wrong
            row[f"{name} skipped"] = row.get(f"{name} skipped", 0) + (reward is None)
    out = []
    for row in sorted(rows.values(), key=lambda r: (-max(r["labels"]), r["category"])):
        row["labels"] = "/".join(str(label) for label in sorted(row["labels"], reverse=True))
        out.append(row)
    return out


def machine() -> str:
    return (
        f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPU cores (shared with other jobs), "
        f"Python {platform.python_version()}, trl {version('trl')}, math-verify {version('math-verify')}, "
        f"UP_TRL_REWARD_WORKERS={os.environ.get('UP_TRL_REWARD_WORKERS', 'unset (default)')}"
    )


def _case_line(case: dict) -> str:
    text = case["completion"].replace("\n", "\\n").replace("|", "\\|")
    gold = case["gold"].replace("|", "\\|")
    return f"| {case['category']} | `{gold}` | `{text}` | {case['source']} |"


def table(summary: dict, categories: list[dict], results: dict, command: str) -> str:
    lines = [
        f"Command: `{command}`. Cases: {summary['cases']} ({summary['right']} right, {summary['wrong']} wrong). "
        f"Machine: {summary['machine']}.",
        "",
        "| scorer | precision | recall | false positives | false negatives | skipped | items/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in SCORERS:
        m = results[name]
        lines.append(
            f"| {name} | {m['precision']} | {m['recall']} | {m['false_positives']} | "
            f"{m['false_negatives']} | {m['skipped']} | {m['items_per_s']} |"
        )
    lines += [
        "",
        "Errors per category (false positives for label 0, false negatives for label 1; skipped in "
        "parentheses where any):",
        "",
        "| category | label | cases | " + " | ".join(f"{n} errors" for n in SCORERS) + " |",
        "|---|---|---|" + "---|" * len(SCORERS),
    ]
    for row in categories:
        cells = [
            f"{row[f'{n} errors']}" + (f" ({row[f'{n} skipped']})" if row[f"{n} skipped"] else "") for n in SCORERS
        ]
        lines.append(f"| {row['category']} | {row['labels']} | {row['n']} | " + " | ".join(cells) + " |")
    for name in SCORERS:
        for kind in ("false_positive", "false_negative"):
            found = results[name][f"{kind}_cases"]
            lines += ["", f"### {name}: {len(found)} {kind.replace('_', ' ')}s", ""]
            if found:
                lines += ["| category | gold | completion | source |", "|---|---|---|---|"]
                lines += [_case_line(case) for case in found]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--limit", type=int, default=None, help="score only N cases spread over the file (smoke run)")
    parser.add_argument("--batch_size", type=int, default=256, help="completions per reward call, as in a trainer")
    parser.add_argument("--output_dir", type=Path, default=None, help=f"default {OUTPUT}; with --limit, no files")
    parser.add_argument("--scorers", nargs="+", default=list(SCORERS), choices=SCORERS)
    args = parser.parse_args(argv)

    cases = load_cases(args.cases, args.limit)
    rewards, results = {}, {}
    for name in SCORERS:
        if name not in args.scorers:
            rewards[name] = [None] * len(cases)
            results[name] = {**metrics(cases, rewards[name]), "items_per_s": None, "seconds": None}
            continue
        start = time.perf_counter()
        SCORE[name](cases[:1], 1)  # warm-up: imports, worker processes; timed apart as startup_s
        startup = time.perf_counter() - start
        start = time.perf_counter()
        rewards[name], extra = SCORE[name](cases, args.batch_size)
        seconds = time.perf_counter() - start
        timing = {"startup_s": round(startup, 2), "seconds": round(seconds, 2)}
        results[name] = {**metrics(cases, rewards[name]), **extra, **timing}
        results[name]["items_per_s"] = round(len(cases) / seconds, 1)
        m = results[name]
        print(
            f"{name:12s} precision {m['precision']}  recall {m['recall']}  FP {m['false_positives']}  "
            f"FN {m['false_negatives']}  skipped {m['skipped']}  {m['items_per_s']} items/s",
            file=sys.stderr,
        )

    categories = per_category(cases, rewards)
    summary = {
        "cases": len(cases),
        "right": sum(c["label"] for c in cases),
        "wrong": sum(1 - c["label"] for c in cases),
        "machine": machine(),
        **{name: {k: v for k, v in results[name].items() if not k.endswith("_cases")} for name in SCORERS},
    }
    output_dir = args.output_dir or (None if args.limit else OUTPUT)
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
        command = "python benchmarks/scorer.py" + (" " + " ".join(argv) if argv else " ".join([""] + sys.argv[1:]))
        report = {"summary": summary, "per_category": categories, "scorers": results}
        (output_dir / "results.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
        (output_dir / "table.md").write_text(table(summary, categories, results, command.strip()))
        summary["output_dir"] = str(output_dir)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
