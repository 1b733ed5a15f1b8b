r"""Verification: one extracted answer against one gold answer with math-verify, as an outcome constant.

Runs inside a worker process of `pool.py` (or in-process when workers are off). math-verify's own SIGALRM bound
(`MATH_VERIFY_TIMEOUT`, whole seconds) works only in a process's main thread: the caller passes `timeout=None`
elsewhere. math-verify turns its own timeouts into `[]` / False and a warning; `verify_answer` counts those warnings
(`_TIMEOUT_LOG`) so that an answer whose parse or comparison timed out is a TIMEOUT, never a silent WRONG. Gold answers
are parsed once per process; only successful parses are cached, so a gold answer whose parse timed out once (a busy
machine) is parsed again next time instead of being unscorable for good.
"""

from __future__ import annotations

import collections
import logging
import threading

from .extraction import phrase_expression

# Seconds, math-verify's own SIGALRM bound for each parse and verify (whole seconds; its default is 5). 1 s and 2 s
# fired on right MATH-500 answers (0.3 s of CPU) on a 2-core machine under a load of 10; an item is at most ~3x this.
MATH_VERIFY_TIMEOUT = 3
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
MATH_VERIFY_LOGGERS = ("math_verify.parser", "math_verify.grader")


class _TimeoutLog(logging.Handler):
    """Counts math-verify's "Timeout during parsing/comparison" warnings, per thread."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Timeout during"):
            self.local.count = self.count() + 1

    def count(self) -> int:
        return getattr(self.local, "count", 0)


_TIMEOUT_LOG = _TimeoutLog()
for _name in MATH_VERIFY_LOGGERS:
    logging.getLogger(_name).addHandler(_TIMEOUT_LOG)


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
    """CORRECT, WRONG, GOLD_UNPARSEABLE or TIMEOUT (math-verify's own bound fired and nothing was found correct) for
    one extracted prediction (None: no answer) against one gold answer.

    >>> [verify_answer("2x + 3", "phrase", gold, "phrase", None) for gold in ("2x+3", "3")]
    [1, 0]
    """
    from math_verify import parse, verify

    timeouts_before = _TIMEOUT_LOG.count()
    try:
        gold_parsed = parse_gold(gold, gold_kind, timeout)
        if not gold_parsed:
            outcome = GOLD_UNPARSEABLE
        else:
            pred_input = None if pred is None else parse_input(pred, pred_kind)
            pred_parsed = [] if pred_input is None else parse(pred_input, parsing_timeout=timeout)
            correct = pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=timeout)
            outcome = CORRECT if correct else WRONG
    except Exception:  # math-verify catches its own errors; this is the last net (RecursionError, MemoryError)
        outcome = WRONG
    return TIMEOUT if outcome != CORRECT and _TIMEOUT_LOG.count() > timeouts_before else outcome
