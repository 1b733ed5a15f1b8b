r"""Verification: one extracted answer against one gold with math-verify, as an outcome constant. math-verify's
timeouts (its SIGALRM bound, main thread only: elsewhere `timeout=None`) are counted by `_TIMEOUT_LOG`: TIMEOUT, never
a silent WRONG. A match in which math-verify dropped a letter of one side only, as a unit (`$2t$` parsed as 2), is
WRONG (`dropped_letters`)."""

from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import re
import threading

from .expressions import _MATH_WORDS, phrase_expression
from .numerals import repeating_decimals

# math-verify's SIGALRM bound per parse and verify, in whole seconds: 1 and 2 fired on right answers under load.
MATH_VERIFY_TIMEOUT = 3
# Outcomes of one item. TIMEOUT: not scored within its bound (the item timed out or its worker died).
CORRECT, WRONG, GOLD_UNPARSEABLE, TIMEOUT = 1, 0, 2, 3
GOLD_CACHE_SIZE = 4096
MATH_VERIFY_LOGGERS = ("math_verify.parser", "math_verify.grader")
# A text block or command (its letters are no variables), an escaped character, or a run of letters.
_LETTER_TOKEN = re.compile(
    r"\\(?:text\w*|mbox|math[a-z]*|operatorname|begin|end)\s*\{[^{}]*\}|\\[A-Za-z]+|\\.|([A-Za-z]+)", re.S
)
_DELIMITER = re.compile(r"(?<!\\)\$|\\[()\[\]]")  # "$", "\(", "\[": math delimiters, not "\$" (a currency sign)


def parse_input(answer: str, kind: str) -> str | None:
    r"""The string handed to `math_verify.parse` for an answer of `kind` (a phrase in `$...$`, as golds), or None.

    >>> parse_input("3", "boxed"), parse_input("1,000", "number"), parse_input("2x + 3", "phrase")
    ('\\boxed{3}', '1000', '$2x + 3$')
    """
    if kind == "boxed":
        return "\\boxed{" + repeating_decimals(answer) + "}"
    if kind == "number":
        return re.sub(r"[,\s]", "", answer)
    expression = phrase_expression(answer)
    return None if expression is None else "$" + repeating_decimals(expression) + "$"


def _variables(text: str, words: bool) -> collections.Counter:
    """The letters of `text` outside text blocks and commands; without `words`, spaced words ("12 cm") left out."""
    letters: collections.Counter = collections.Counter()
    for match in _LETTER_TOKEN.finditer(text):
        if (run := match.group(1)) is None or run.lower() in _MATH_WORDS:
            continue
        glued = match.start() > 0 and text[match.start() - 1].isalnum()
        if words or len(run) == 1 or glued:
            letters.update(run)
    return letters


def dropped_letters(text: str, parsed: list) -> collections.Counter:
    r"""The variables of `text` (as handed to math-verify) that its parse `parsed` no longer has.

    A variable is a letter, or letters glued to a number or letter ("2t"); a spaced word ("12 cm") is a unit or prose.

    >>> from math_verify import parse
    >>> [dict(dropped_letters(t, parse(t))) for t in ("$2t$", "$3 - s$", "$9 - x$", "$12 cm$", r"$5\text{ s}$")]
    [{'t': 1}, {'s': 1}, {}, {}, {}]
    """
    string = next((p for p in reversed(parsed) if isinstance(p, str)), None)
    return collections.Counter() if string is None else _variables(text, words=False) - _variables(string, words=True)


def shared_letter_dropped(pred: str, pred_parsed: list, gold: str, gold_parsed: list) -> bool:
    r"""Whether a parse dropped, as a unit, a letter both sides write (a variable on both: "9 - t" against "9-t").

    >>> from math_verify import parse
    >>> [shared_letter_dropped(p, parse(p), g, parse(g)) for p, g in (("$9 - t$", "$9-t$"), ("$9 - t$", "$9$"))]
    [True, False]
    """
    shared = _variables(pred, words=False) & _variables(gold, words=False)
    return bool(shared & (dropped_letters(pred, pred_parsed) | dropped_letters(gold, gold_parsed)))


@functools.cache
def _extraction_config(units: bool) -> list:
    """math-verify's default extraction, with or without its unit removal (`$9 - t$` is 9 with it, 9 - t without)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    latex = LatexExtractionConfig()
    normalization = dataclasses.replace(latex.normalization_config, units=units)
    return [dataclasses.replace(latex, normalization_config=normalization), ExprExtractionConfig()]


class _TimeoutLog(logging.Handler):
    """Counts math-verify's "Timeout during parsing/comparison" warnings, per thread."""

    local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Timeout during"):
            self.local.count = self.count() + 1

    def count(self) -> int:
        return getattr(self.local, "count", 0)


_TIMEOUT_LOG = _TimeoutLog(logging.WARNING)
for _name in MATH_VERIFY_LOGGERS:
    logging.getLogger(_name).addHandler(_TIMEOUT_LOG)


class _ParseFailed(Exception):
    """A failed gold parse, raised through `functools.lru_cache`, which caches no exception."""


def parse_gold(gold: str, kind: str, timeout: int | None, units: bool = True) -> list:
    """math-verify's parse of a gold (`[]` on failure; LaTeX first, then text), cached only when it succeeds."""
    try:
        return _parse_gold(gold, kind, timeout, units)
    except _ParseFailed:
        return []


@functools.lru_cache(maxsize=GOLD_CACHE_SIZE)
def _parse_gold(gold: str, kind: str, timeout: int | None, units: bool) -> list:
    from math_verify import parse

    def read(text: str) -> list:
        return parse(text, extraction_config=_extraction_config(units), parsing_timeout=timeout)

    if kind == "boxed":
        parsed = read("\\boxed{" + repeating_decimals(gold) + "}")
    elif kind == "number":
        parsed = read(gold.replace(",", ""))
    else:
        gold = repeating_decimals(gold)
        parsed = [] if _DELIMITER.search(gold) else read("$" + gold + "$")  # "\$18.90" is money, not "$...$" math
        if not parsed or isinstance(parsed[0], str):  # a bare string is math-verify's fallback, not a parse
            parsed = read(gold)
    if not parsed:
        raise _ParseFailed
    return parsed


def verify_answer(pred: str | None, pred_kind: str, gold: str, gold_kind: str, timeout: int | None) -> int:
    """The outcome of one extracted prediction (None: no answer) against one gold (TIMEOUT: math-verify's bound fired).

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
            if pred_parsed and shared_letter_dropped(pred_input, pred_parsed, gold, gold_parsed):
                # a letter both sides write is a variable on both: "9 - t" is 9 - t against the gold "9-t"
                pred_parsed = parse(pred_input, extraction_config=_extraction_config(False), parsing_timeout=timeout)
                gold_parsed = parse_gold(gold, gold_kind, timeout, units=False)
            correct = pred_parsed and gold_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=timeout)
            # a match only on what math-verify kept is none: "2t" is no 2, and "2" no "2t"
            correct = correct and dropped_letters(pred_input, pred_parsed) == dropped_letters(gold, gold_parsed)
            outcome = CORRECT if correct else WRONG
    except Exception:  # math-verify catches its own errors; this is the last net (RecursionError, MemoryError)
        outcome = WRONG
    return TIMEOUT if outcome != CORRECT and _TIMEOUT_LOG.count() > timeouts_before else outcome
