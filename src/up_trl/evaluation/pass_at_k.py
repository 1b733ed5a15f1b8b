"""The estimators of `up-trl eval`: pass@k (unbiased), maj@k (the largest cluster of mathematically equal
answers), and the equivalence tables maj@k reads. Pure functions of the scored samples."""

from __future__ import annotations

import math
from collections.abc import Callable


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al., 2021): 1 - C(n-c, k) / C(n, k).

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 4), pass_at_k(4, 0, 2)
    (0.25, 1.0, 0.0)
    """
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got {n}.")
    return 1.0 if n - c < k else 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def majority_cluster(answers: list[str | None], same: Callable[[int, int], bool]) -> int | None:
    """maj@k's winner: the index of the representative (first member) of the largest group of equivalent answers.

    Groups form greedily in sample order: an answer joins the group whose representative it is identical to, else
    the first one it is equivalent to (`same(representative_index, index)`), else starts one. A tie goes to the
    earliest group; None never votes; no answer at all gives None.

    >>> majority_cluster(["1/2", "0.5", "3", "3", None], lambda i, j: {"1/2", "0.5"} == {["1/2", "0.5", "3", "3"][i],
    ...                  ["1/2", "0.5", "3", "3"][j]})
    0
    """
    representatives, sizes = [], []  # a group's first member, and its size
    for index, answer in enumerate(answers):
        if answer is None:
            continue
        identical = [g for g, rep in enumerate(representatives) if answers[rep] == answer]
        equivalent = identical or [g for g, rep in enumerate(representatives) if same(rep, index)][:1]
        if equivalent:
            sizes[equivalent[0]] += 1
        else:
            representatives.append(index)
            sizes.append(1)
    return representatives[sizes.index(max(sizes))] if sizes else None  # index(): the earliest of the largest groups


def majority_correct(answers: list[str | None], correct: list[float], same: Callable[[int, int], bool]) -> float:
    """maj@k: 1.0 if the majority group's representative answer is correct (`majority_cluster`), else 0.0.

    >>> majority_correct(["7", "8", "7", None], [1, 0, 1, 0], lambda i, j: False)
    1.0
    """
    winner = majority_cluster(answers, same)
    return 0.0 if winner is None else float(correct[winner] > 0)


def score_problem(
    answers: list[str | None], correct: list[float], ks: list[int], same: Callable[[int, int], bool] | None = None
) -> dict[str, float]:
    """avg@n, maj@n and pass@k for one problem's n samples (`same`: answer equivalence, default: identical)."""
    n, c = len(correct), int(sum(x > 0 for x in correct))
    row = {f"avg@{n}": c / n, f"maj@{n}": majority_correct(answers, correct, same or (lambda i, j: False))}
    row.update({f"pass@{k}": pass_at_k(n, c, k) for k in ks})
    return row


def equivalence_tables(groups: list[list[tuple[str, str] | None]], verify: Callable) -> tuple[list[Callable], int]:
    """Per problem a `same(i, j)` (math-verify: answer j equals reference i), and the comparisons that timed out;
    only what `majority_cluster` asks is verified, one `verify(tasks) -> outcomes` call a round for every problem."""
    from ..rewards import CORRECT, TIMEOUT

    tables: list[dict[tuple[int, int], bool]] = [{} for _ in groups]
    representatives: list[list[int]] = [[] for _ in groups]
    timeouts = 0
    for position in range(max((len(g) for g in groups), default=0)):
        active = [(p, g) for p, g in enumerate(groups) if position < len(g) and g[position] is not None]
        tasks, where = [], []
        for p, group in active:
            answer = group[position]
            if any(group[rep][0] == answer[0] for rep in representatives[p]):
                continue  # identical to a representative: joins it without a comparison
            for rep in representatives[p]:
                tasks.append((answer[0], answer[1], group[rep][0], group[rep][1]))
                where.append((p, rep, position))
        outcomes = verify(tasks) if tasks else []
        for (p, rep, position), outcome in zip(where, outcomes):
            tables[p][(rep, position)] = outcome == CORRECT
            timeouts += outcome == TIMEOUT
        for p, group in active:
            reps = representatives[p]
            if not any(group[rep][0] == group[position][0] or tables[p].get((rep, position)) for rep in reps):
                reps.append(position)
    return [lambda i, j, t=t: t.get((i, j), False) for t in tables], timeouts


def default_ks(k: int) -> list[int]:
    """1, 2, 4, ... up to k, and k itself."""
    return sorted({2**i for i in range(int(math.log2(k)) + 1)} | {k}) if k >= 1 else [k]
