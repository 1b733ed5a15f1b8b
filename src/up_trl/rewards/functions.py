"""Reward functions with TRL's signature: `MathAccuracyReward`, the format rewards, DAPO's soft overlong punishment."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .extraction import MAX_CHARS, completion_text, extract_answer, extract_gold, last_boxed, prediction
from .pool import ITEM_TIMEOUT_S, STARTUP_TIMEOUT_S, score
from .sentences import is_name
from .verification import CORRECT, GOLD_UNPARSEABLE, TIMEOUT, WRONG

_STATS_LOCK = threading.Lock()  # for the `stats` updates: a reward may be called from several threads


@dataclass
class RewardStats:
    """Running totals of one accuracy reward (`reward.stats`); `as_dict()` for logging, `reset()` to zero them."""

    calls: int = 0
    completions: int = 0
    correct: int = 0
    skipped_gold: int = 0
    no_answer: int = 0
    timeouts: int = 0
    worker_restarts: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def reset(self) -> None:
        self.__init__()  # every field back to its default, 0


class MathAccuracyReward:
    r"""math-verify accuracy of the strictly extracted answer: `correct` / `incorrect`, None for an unparseable gold
    (TRL skips it), `timeout_reward` (default `incorrect`) for an item not scored within `item_timeout_s`. Picklable.

    >>> reward = make_math_accuracy_reward(correct=1.0, incorrect=-1.0)
    >>> reward([[{"role": "assistant", "content": r"\boxed{42}"}], "41"], solution=["42", "42"])
    [1.0, -1.0]
    >>> reward.outcomes(["The answer is 2x + 3.", "The answer is 2x + 3."], ["$2x+3$", "3"])  # CORRECT, WRONG
    [1, 0]
    """

    def __init__(
        self,
        correct: float = 1.0,
        incorrect: float = 0.0,
        *,
        timeout_reward: float | None = None,
        solution_column: str = "solution",
        name: str = "math_accuracy_reward",
        num_workers: int | None = None,
        item_timeout_s: float = ITEM_TIMEOUT_S,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        max_chars: int = MAX_CHARS,
    ):
        self.correct, self.incorrect = float(correct), float(incorrect)
        self.timeout_reward = self.incorrect if timeout_reward is None else float(timeout_reward)
        self.__name__ = name  # TRL logs rewards/<__name__>/mean
        self.solution_column, self.num_workers, self.max_chars = solution_column, num_workers, max_chars
        self.item_timeout_s, self.startup_timeout_s = item_timeout_s, startup_timeout_s
        self.stats = RewardStats()

    def __repr__(self) -> str:
        return f"<{self.__name__}: correct={self.correct}, incorrect={self.incorrect}>"

    def _score(self, completions: Sequence[Any], solution: Sequence[Any]) -> tuple[list[int], list, list, int]:
        """Outcomes, predictions, golds and workers replaced; duplicate (answer, gold) pairs are verified once."""
        if len(solution) != len(completions):
            raise ValueError(f"{self.__name__}: {len(completions)} completions but {len(solution)} gold answers.")
        golds = [extract_gold(g, self.max_chars) for g in solution]
        preds = [
            prediction(extract_answer(completion_text(c), self.max_chars, names=is_name(g[0])), g[0]) if g else None
            for c, g in zip(completions, golds)
        ]
        keys = [(p[0] if p else None, p[1] if p else "", *g) if g else None for p, g in zip(preds, golds)]
        unique = list(dict.fromkeys(k for k in keys if k is not None))  # G samples of one prompt share answers
        statuses, replaced = score(unique, self.num_workers, self.item_timeout_s, self.startup_timeout_s)
        by_key = dict(zip(unique, statuses))
        return [by_key[k] if k is not None else GOLD_UNPARSEABLE for k in keys], preds, golds, replaced

    def outcomes(self, completions: Sequence[Any], solution: Sequence[Any]) -> list[int]:
        """One outcome per completion (CORRECT, WRONG, GOLD_UNPARSEABLE, TIMEOUT), without touching stats or logs."""
        return self._score(completions, solution)[0]

    def judge(self, completions: Sequence[Any], solution: Sequence[Any]) -> tuple[list[int], list]:
        """`outcomes` and the `(answer, kind)` each was judged on, None for none (`up-trl eval`'s maj@k votes)."""
        return self._score(completions, solution)[:2]

    def __call__(self, completions: Sequence[Any], solution: Sequence[Any] | None = None, **kwargs) -> list:
        golds_raw = kwargs.get(self.solution_column) if self.solution_column != "solution" else solution
        if golds_raw is None:
            raise ValueError(
                f"{self.__name__} needs the gold answers in a dataset column named {self.solution_column!r}; "
                "add that column or build the reward with make_math_accuracy_reward(solution_column=...)."
            )
        outcomes, preds, golds, replaced = self._score(completions, golds_raw)
        value = {CORRECT: self.correct, WRONG: self.incorrect, TIMEOUT: self.timeout_reward, GOLD_UNPARSEABLE: None}
        rewards = [value[o] for o in outcomes]

        n = len(outcomes)
        counts = {  # by metric name, in the order they are logged
            "skipped_gold": outcomes.count(GOLD_UNPARSEABLE),
            "no_answer": sum(p is None and o == WRONG for p, o in zip(preds, outcomes)),
            "timeout": outcomes.count(TIMEOUT),
        }
        with _STATS_LOCK:
            s = self.stats
            s.calls, s.completions, s.correct = s.calls + 1, s.completions + n, s.correct + outcomes.count(CORRECT)
            s.skipped_gold, s.timeouts = s.skipped_gold + counts["skipped_gold"], s.timeouts + counts["timeout"]
            s.no_answer, s.worker_restarts = s.no_answer + counts["no_answer"], s.worker_restarts + replaced
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if callable(log_metric) and n:
            for key, count in counts.items():
                log_metric(f"rewards/{self.__name__}/{key}_frac", count / n)
        if callable(log_extra):
            log_extra(f"{self.__name__}/answer", [p[0] if p else "" for p in preds])
            log_extra(f"{self.__name__}/gold", [g[0] if g else "[unparseable]" for g in golds])
        return rewards


def make_math_accuracy_reward(correct: float = 1.0, incorrect: float = 0.0, **options: Any) -> MathAccuracyReward:
    """A math-verify accuracy reward scoring `correct` / `incorrect`; `options` as `MathAccuracyReward` takes them.

    >>> make_math_accuracy_reward(correct=1.0, incorrect=-1.0).__name__
    'math_accuracy_reward_1_-1'
    """
    suffix = "" if (correct, incorrect) == (1, 0) else f"_{correct:g}_{incorrect:g}"
    options.setdefault("name", "math_accuracy_reward" + suffix)
    return MathAccuracyReward(correct, incorrect, **options)


math_accuracy_reward = MathAccuracyReward(1.0, 0.0, name="math_accuracy_reward")
# DAPO's rule-based reward: +1 / -1, and a reply that stalls the grader never beats a wrong one.
dapo_math_reward = MathAccuracyReward(1.0, -1.0, name="dapo_math_reward")


def boxed_format_reward(completions: Sequence[Any], **kwargs) -> list[float]:
    r"""1.0 when the reply (its last `MAX_CHARS` characters) holds a closed, non-empty `\boxed{...}`, else 0.0.

    >>> boxed_format_reward([r"so \boxed{3}", r"\boxed{}", r"\boxed{3"])
    [1.0, 0.0, 0.0]
    """
    return [0.0 if last_boxed(completion_text(c)[-MAX_CHARS:]) is None else 1.0 for c in completions]


def think_format_reward(completions: Sequence[Any], **kwargs) -> list[float]:
    """TRL's `think_format_reward` (1.0 for `<think>...</think>` first), also for strings and malformed messages.

    >>> think_format_reward(["<think>hm</think>42", "42"])
    [1.0, 0.0]
    """
    texts = [[{"content": completion_text(c, message=0)}] for c in completions]
    from trl.rewards import think_format_reward as trl_think_format_reward  # imported here: naming one imports no TRL

    return trl_think_format_reward(texts)


def make_soft_overlong_punishment(max_completion_length: int, soft_punish_cache: int | None = None) -> Callable:
    """DAPO's soft overlong punishment (TRL's); the cache defaults to a fifth of the maximum (DAPO: 4096 of 20480).

    >>> make_soft_overlong_punishment(100, 20)(completion_ids=[[1] * 80, [1] * 90])
    [0.0, -0.5]
    """
    soft_punish_cache = max(max_completion_length // 5, 1) if soft_punish_cache is None else soft_punish_cache
    if not 0 < soft_punish_cache <= max_completion_length:
        raise ValueError(
            f"soft_punish_cache={soft_punish_cache} must be in (0, max_completion_length={max_completion_length}]."
        )
    from trl.rewards import get_soft_overlong_punishment

    return get_soft_overlong_punishment(max_completion_len=max_completion_length, soft_punish_cache=soft_punish_cache)
