r"""Verification: one extracted answer against one gold answer with math-verify, as an outcome constant.

Runs inside a worker process of `pool.py` (or in-process when workers are off). math-verify's own SIGALRM bound
(`MATH_VERIFY_TIMEOUT`, whole seconds) works only in a process's main thread: the caller passes `timeout=None`
elsewhere. Gold answers are parsed once per process; only successful parses are cached, so a gold answer whose parse
timed out once (a busy machine) is parsed again next time instead of being unscorable for good.
"""

from __future__ import annotations

import collections
import threading

from .extraction import phrase_expression

MATH_VERIFY_TIMEOUT = 1  # seconds, math-verify's own SIGALRM bound for each parse and verify (whole seconds)
# Outcomes of one item. TIMEOUT: not scored within its bound (the item timed out or its worker died).
CORRECT, WRONG, GOLD_UNPARSEABLE, TIMEOUT = 1, 0, 2, 3
GOLD_CACHE_SIZE = 4096


def parse_input(answer: str, kind: str) -> str | None:
    r"""The string handed to `math_verify.parse` for an extracted answer of `kind`; None when it is no answer.

    A phrase answer is one expression in `$...$`, as the golds are (math-verify on bare text keeps one number).

    >>> parse_input("3", "boxed"), parse_input("1,000", "number"), parse_input("2x + 3", "phrase")
    ('\\boxed{3}', '1000', '$2x + 3$')
    """
    if kind == "boxed":
        return "\\boxed{" + answer + "}"
    if kind == "number":
        return answer.replace(",", "")
    expression = phrase_expression(answer)
    return None if expression is None else "$" + expression + "$"


class _SuccessCache:
    """A small thread-safe LRU cache that keeps only truthy values (math-verify's `[]` means "failed")."""

    def __init__(self, maxsize: int):
        self.maxsize, self.items, self.lock = maxsize, collections.OrderedDict(), threading.Lock()

    def get(self, key):
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        if not value:
            return
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.maxsize:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


_GOLD_CACHE = _SuccessCache(GOLD_CACHE_SIZE)


def parse_gold(gold: str, kind: str, timeout: int | None) -> list:
    """math-verify's parse of a gold answer (`[]` when it fails); a bare gold is read as LaTeX first ("(1, 2)" is a
    tuple, "3+4i" complex, "B" a choice), then as text. Successful parses are cached, failures never are."""
    key = (gold, kind, timeout)
    parsed = _GOLD_CACHE.get(key)
    if parsed is None:
        parsed = _parse_gold_uncached(gold, kind, timeout)
        _GOLD_CACHE.put(key, parsed)
    return parsed


def _parse_gold_uncached(gold: str, kind: str, timeout: int | None) -> list:
    from math_verify import parse

    if kind == "boxed":
        return parse("\\boxed{" + gold + "}", parsing_timeout=timeout)
    if kind == "number":
        return parse(gold.replace(",", ""), parsing_timeout=timeout)
    if not ("$" in gold or "\\(" in gold or "\\[" in gold):
        parsed = parse("$" + gold + "$", parsing_timeout=timeout)
        if parsed and not isinstance(parsed[0], str):  # a bare string is math-verify's fallback, not a parse
            return parsed
    return parse(gold, parsing_timeout=timeout)


def verify_answer(pred: str | None, pred_kind: str, gold: str, gold_kind: str, timeout: int | None) -> int:
    """CORRECT, WRONG or GOLD_UNPARSEABLE for one extracted prediction (None: no answer) against one gold answer.

    >>> [verify_answer("2x + 3", "phrase", gold, "phrase", None) for gold in ("2x+3", "3")]
    [1, 0]
    """
    from math_verify import parse, verify

    try:
        gold_parsed = parse_gold(gold, gold_kind, timeout)
        if not gold_parsed:
            return GOLD_UNPARSEABLE
        pred_input = None if pred is None else parse_input(pred, pred_kind)
        if pred_input is None:
            return WRONG
        pred_parsed = parse(pred_input, parsing_timeout=timeout)
        return CORRECT if pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=timeout) else WRONG
    except Exception:  # math-verify catches its own errors; this is the last net (RecursionError, MemoryError)
        return WRONG
