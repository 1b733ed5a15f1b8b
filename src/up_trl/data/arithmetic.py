"""The `arithmetic` dataset, generated in code (no download): "What is 7 x 8?" with its answer, for the offline
default and its evaluation; train, dev and test never share a problem, and worked examples can precede each problem.

    >>> arithmetic_dataset(2, seed=0, system_prompt=None)[0]["prompt"][-1]["content"].startswith("What is ")
    True
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from datasets import Dataset

from .prompts import DEFAULT_SYSTEM_PROMPT, DataError, make_prompt

# The operand ranges of each op: `mul1` is the times table, `mul` 1-digit x 2-digit, `add` and `sub` 2-digit.
OPERANDS: dict[str, tuple[range, range]] = {
    "mul": (range(2, 10), range(10, 100)),
    "mul1": (range(2, 10), range(2, 10)),
    "add": (range(10, 100), range(10, 100)),
    "sub": (range(10, 100), range(10, 100)),
}
ARITHMETIC_OPS: tuple[str, ...] = tuple(OPERANDS)
ARITHMETIC_DEFAULT_SIZE = 1000
ARITHMETIC_TEST_FRACTION = 0.25  # share of the distinct problems of each op held out for `split="test"`
ARITHMETIC_DEV_FRACTION = 0.10  # the next share, `split="dev"`: for choosing settings without looking at test
ARITHMETIC_SPLITS = ("train", "dev", "test")
DEV_END = ARITHMETIC_TEST_FRACTION + ARITHMETIC_DEV_FRACTION

# Worked examples (`few_shot`) in the reply format the reward reads, outside its op's operand ranges: in no split.
ARITHMETIC_WORKED_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("What is 3 + 5?", "3 + 5 = 8. The answer is 8."),
    ("What is 12 x 11?", "12 x 11 = 132. The answer is 132."),
    ("What is 9 - 4?", "9 - 4 = 5. The answer is 5."),
)


def arithmetic_problem(op: str, a: int, b: int) -> tuple[str, int]:
    """The problem text and answer for operands `a`, `b` (`sub` puts the larger first: never negative).

    >>> arithmetic_problem("sub", 12, 30)
    ('What is 30 - 12?', 18)
    """
    check_arithmetic_ops([op])
    if op == "sub":
        a, b = max(a, b), min(a, b)
    symbol = {"add": "+", "sub": "-"}.get(op, "x")
    return f"What is {a} {symbol} {b}?", {"+": a + b, "-": a - b, "x": a * b}[symbol]


def arithmetic_split(op: str, a: int, b: int) -> str:
    """The split of a problem, fixed by a hash of its sorted operands: disjoint splits, and "7 x 8" and "8 x 7"
    share one, so no held-out fact is trained in the other order.

    >>> arithmetic_split("mul1", 7, 8) == arithmetic_split("mul1", 8, 7)
    True
    """
    key = f"{'mul' if op == 'mul1' else op}:{min(a, b)},{max(a, b)}".encode()
    bucket = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64
    return "test" if bucket < ARITHMETIC_TEST_FRACTION else "dev" if bucket < DEV_END else "train"


def arithmetic_problems(op: str, split: str) -> list[tuple[int, int]]:
    """Every distinct operand pair `(a, b)` of `op` in `split`, in a fixed order."""
    check_arithmetic_ops([op])
    first, second = OPERANDS[op]
    pairs = [(a, b) for a in first for b in second if not (op == "sub" and a < b)]  # sub: one order per pair
    return [(a, b) for a, b in pairs if arithmetic_split(op, a, b) == split]


def worked_example_turns(few_shot: int) -> list[dict]:
    """The first `few_shot` of `ARITHMETIC_WORKED_EXAMPLES` as alternating user and assistant turns."""
    if not 0 <= few_shot <= len(ARITHMETIC_WORKED_EXAMPLES):
        most = len(ARITHMETIC_WORKED_EXAMPLES)
        raise DataError(f"Worked examples (few_shot, --arithmetic_few_shot) must number 0 to {most}, got {few_shot}.")
    pairs = ARITHMETIC_WORKED_EXAMPLES[:few_shot]
    return [{"role": role, "content": text} for pair in pairs for role, text in zip(("user", "assistant"), pair)]


def check_arithmetic_ops(ops: Sequence[str], flag: str | None = None) -> None:
    """A DataError naming the first of `ops` that `arithmetic_dataset` cannot generate (and the `flag` that set it).

    >>> check_arithmetic_ops(["mul1", "add"])
    """
    for op in ops:
        if op not in ARITHMETIC_OPS:
            where = f" ({flag})" if flag else ""
            raise DataError(f"Unknown arithmetic op {op!r}{where}; use any of {ARITHMETIC_OPS}.")


def arithmetic_dataset(
    size: int = ARITHMETIC_DEFAULT_SIZE,
    *,
    ops: Sequence[str] = ("mul1",),
    seed: int = 0,
    split: str = "train",
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    few_shot: int = 0,
) -> Dataset:
    """Generated problems, the same for the same `(size, ops, seed, split)`: "train" draws `size` with replacement from
    the train problems (like epochs); "dev" and "test" are the distinct problems of `ops`, shuffled by `seed`, at most
    `size` (all / test / dev: `mul1` 64 / 16 / 9, `mul` 720 / 172 / 54, `add` 8,100 / 2,124 / 829, `sub` 4,095 / 1,001
    / 408). `few_shot=n` puts the first `n` worked examples first (docs/benchmarks/index.md, "Learning signal")."""
    if split not in ARITHMETIC_SPLITS:
        raise DataError(f"arithmetic has splits {ARITHMETIC_SPLITS}, not {split!r}.")
    pools = {op: arithmetic_problems(op, split) for op in dict.fromkeys(ops)}  # checks each op
    shots = worked_example_turns(few_shot)
    rng = random.Random(f"{split}-{seed}")  # a str seed does not depend on PYTHONHASHSEED
    if split != "train":
        chosen = [(op, a, b) for op, pairs in pools.items() for a, b in pairs]
        rng.shuffle(chosen)
        chosen = chosen[:size]
    else:  # with replacement: an op, then one of its problems, `size` times
        chosen = [(op, *rng.choice(pools[op])) for op in (rng.choice(list(ops)) for _ in range(size))]
    rows = []
    for op, a, b in chosen:
        problem, answer = arithmetic_problem(op, a, b)
        prompt = make_prompt(problem, system_prompt)
        prompt[-1:-1] = shots  # the worked examples go between the system turn and the problem
        rows.append({"prompt": prompt, "solution": str(answer), "op": op})
    return Dataset.from_list(rows)
