r"""Numerals: a number written in a way math-verify misreads, rewritten as the digits it reads: in words
(`number_in_words`), with a scale word (`scaled`), with thousands set apart by spaces (`join_spaced_thousands`:
math-verify reads "385 000" as 385 * 000), or repeating (`repeating_decimals`: it reads `0.\overline{3}` as 0).
Every pattern is linear-time: bounded alternations, no nested quantifiers."""

from __future__ import annotations

import re
from contextlib import suppress
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_UNITS = "zero one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_VALUE = {w: i for i, w in enumerate(_UNITS + _TEENS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
_SCALE = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}

_UNIT = f"(?:{'|'.join(_UNITS[1:])})"
_BELOW_100 = rf"(?:(?:{'|'.join(_TENS)})(?:[- ]{_UNIT})?|{'|'.join(_TEENS)}|{_UNIT})"
_BELOW_1000 = rf"(?:{_UNIT}\s+hundred(?:\s+(?:and\s+)?{_BELOW_100})?|{_BELOW_100})"
# A fraction, an ordinal or a dozen after the words makes them no count: "two thirds", "one half", "two dozen".
_FRACTION_WORD = (
    r"\s*(?:halves|half|quarters?|dozens?|(?:third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
    r"|[a-z]+teenth|[a-z]+tieth|hundredth|thousandth)s?)\b"
)
_NUMBER_WORDS = re.compile(
    rf"(?<![A-Za-z-])(?:zero|{_BELOW_1000}(?:\s+thousand(?:\s+(?:and\s+)?{_BELOW_1000})?)?)(?![A-Za-z-])"
    rf"(?!{_FRACTION_WORD})",
    re.I,
)
# "1.45 million", "2 thousand", "3.2 \text{ billion}"; the number as `_NUMBER` in extraction reads it.
_SCALED = re.compile(
    r"(?<![\d.,])(\d+(?:,\d{3})*(?:\.\d+)?)\s*(?:\\(?:text|mbox|mathrm)\s*\{\s*)?(thousand|million|billion|trillion)s?"
    r"(?![A-Za-z])\s*\}?",
    re.I,
)
# "385 000", "1 000 000" (also no-break spaces): one number; a pattern string, for extraction's `_NUMBER` too.
SPACED_THOUSANDS = r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)"
_SPACED_THOUSANDS = re.compile(rf"(?<![\d.,]){SPACED_THOUSANDS}")
_SPACE = re.compile(r"[ \u00a0\u202f]")
_TEXT_BLOCK = re.compile(r"\\(?:text|mbox|mathrm)\s*\{([^{}]*)\}")
_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\overline\s*(?:\{(\d+)\}|(\d))")


def _value(words: str) -> int:
    """The value of number words that `_NUMBER_WORDS` matched (its grammar guarantees they are well formed)."""
    total, current = 0, 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word in _VALUE:
            current += _VALUE[word]
        elif word == "hundred":
            current *= 100
        elif word == "thousand":
            total, current = total + current * 1000, 0
    return total + current


def number_in_words(text: str, *, whole: bool = False) -> tuple[int, int, int] | None:
    """(start, end, value) of the first number in words in `text`, or None; with `whole`, only when it is all of it.

    >>> number_in_words("So the farmer keeps seven goats."), number_in_words("twenty-four", whole=True)
    ((20, 25, 7), (0, 11, 24))
    >>> number_in_words("three hundred and five"), number_in_words("two thirds"), number_in_words("six-sided")
    ((0, 22, 305), None, None)
    """
    if whole:
        body = text.strip()
        inner = _TEXT_BLOCK.fullmatch(body)
        match = _NUMBER_WORDS.fullmatch(inner.group(1).strip() if inner else body)
        return None if match is None else (0, len(text), _value(match.group()))
    return next(iter(numbers_in_words(text)), None)


def numbers_in_words(text: str) -> list[tuple[int, int, int]]:
    """(start, end, value) of every number written in words in `text`, in order.

    >>> numbers_in_words("one of the two boxes")
    [(0, 3, 1), (11, 14, 2)]
    """
    return [(m.start(), m.end(), _value(m.group())) for m in _NUMBER_WORDS.finditer(text)]


def scaled(text: str, gold: str) -> str:
    r"""`text` with each "number scale-word" written out, or as the number alone where that is the gold itself.

    >>> scaled("1.45 million", "1450000"), scaled("1.45 million", "1.45"), scaled(r"3 \text{ thousand}", "3000")
    ('1450000', '1.45', '3000')
    """
    gold_number = None  # the gold as a plain decimal ("1.45", "$1.45$", "1,450,000"), None when it is something else
    with suppress(InvalidOperation, ValueError):
        gold_number = Decimal(gold.strip().strip("$").strip().replace(",", ""))

    def write(match: re.Match) -> str:
        if gold_number == (number := Decimal(match.group(1).replace(",", ""))):
            return match.group(1)
        return format((number * _SCALE[match.group(2).lower()]).normalize(), "f")  # no exponent, no trailing zeros

    return _SCALED.sub(write, text)


def join_spaced_thousands(text: str) -> str:
    """Thousands separated by spaces joined: "385 000" is 385000; "1234 567" (a first group of four) is left.

    >>> join_spaced_thousands("385 000"), join_spaced_thousands("1 000 000.5"), join_spaced_thousands("12 5")
    ('385000', '1000000.5', '12 5')
    """
    return _SPACED_THOUSANDS.sub(lambda m: _SPACE.sub("", m.group()), text)


def repeating_decimals(text: str) -> str:
    r"""Repeating decimals as exact fractions: `a.b\overline{c}` is (abc - ab) / (10^len(b) (10^len(c) - 1)), reduced.

    >>> [repeating_decimals(t) for t in (r"0.\overline{3}", r"1.\overline{27}", r"0.1\overline6", r"0.\overline9")]
    ['\\frac{1}{3}', '\\frac{14}{11}', '\\frac{1}{6}', '1']
    """

    def write(match: re.Match) -> str:
        whole, fixed, repeat = match.group(1) or "0", match.group(2), match.group(3) or match.group(4)
        value = Fraction(int(whole + fixed + repeat) - int(whole + fixed), 10 ** len(fixed) * (10 ** len(repeat) - 1))
        p, q = value.numerator, value.denominator
        return str(p) if q == 1 else rf"\frac{{{p}}}{{{q}}}"

    return _REPEATING.sub(write, text)
