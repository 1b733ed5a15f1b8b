r"""The final sentence of a reply that states no answer phrase and no box: where its answer is, if it has one
(`final_statement`, after the trailing asides: `content_end`; `final_name`). Every pattern is linear-time."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator

from .expressions import _HEDGE, _HEDGE_WORDS, _LIST_SEPARATOR, _MATH_WORDS, phrase_expression, solution_list, the_name

_SENTENCE_END = re.compile(r"(?<!\\)[.!?](?:\s|$)|[\n。！？]")  # "\!" is a LaTeX thin space
# A sentence that is an aside, not an answer: a note, a check, a status line, a sign-off, a parenthesised remark.
_ASIDE_SENTENCE = re.compile(
    r"[\s*_>#-]*(?:\((?=[^()\n]{0,40}?(?<![\\A-Za-z])[A-Za-z]{2})|(?:note|n\.?b|p\.?s|check(?:ing)?|verif\w*|hint"
    r"|remember|tip|confidence|explanation|reason(?:ing)?|here['’]?s\s+why|here\s+is\s+why|let\s+me\s+know|hope\s+this"
    r"|i\s+hope|feel\s+free|step\s+\d+\s+(?:of\s+\d+\s+)?(?:done|complete)\w*|done\b|good\s+luck)\b)",
    re.I,
)
# An aside after a value: "(3 hours 20 minutes)", "\approx 0.306"; `(?<!\s)`: linear on long runs of spaces.
_ASIDE_CUT = re.compile(r"(?<!\s)\s*\\approx(?![A-Za-z])|(?<!\s)\s+\((?=[^()\n$]{0,80}?(?<![\\A-Za-z])[A-Za-z]{3})")
_DIGIT = re.compile(r"\d")
# Math delimiters, paired left to right in one pass: `$$`, `$`, `\(`/`\)`, `\[`/`\]`; and bold markdown.
_MATH_TOKEN = re.compile(r"\$\$|(?<!\\)\$|\\\(|\\\)|\\\[|\\\]|\*\*")
_CLOSER = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]", "**": "**"}
_PROSE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]?[a-z]{2,}(?![A-Za-z])")  # "gets", "Brad"; not "RPS" (points)
_TEXT_COMMAND = re.compile(r"\\(?:text|mbox|mathrm|textbf|operatorname|begin|end)\s*\{[^{}]*\}|\\[A-Za-z]+")
MAX_ASIDES = 4  # at most this many trailing aside sentences are dropped
_EQUATION_START = re.compile(r"(?<![\w\\])[A-Za-z]\s*=")  # "x =" where a solution set may start
_NAME_GOLD = re.compile(r"\$?\s*(?:\\text\s*\{\s*([A-Z][a-z]+)\s*\}|([A-Z][a-z]+))\s*\$?")
_TRAIL = " \t.!?。！？"  # sentence-final punctuation


def _last(matches: Iterator[re.Match]) -> re.Match | None:
    """The last of an iterator of matches (one pass, constant memory), None when it is empty."""
    last = collections.deque(matches, maxlen=1)
    return last[0] if last else None


def _sentence_start(text: str, end: int) -> int:
    """Start of the sentence that holds position `end` (0 when no sentence boundary precedes it)."""
    boundary = _last(_SENTENCE_END.finditer(text, 0, end))
    return boundary.end() if boundary else 0


def content_end(text: str) -> int:
    """End of a reply's content: up to `MAX_ASIDES` trailing aside sentences dropped, and an aside after a value.

    >>> text = "She walks 200 minutes (3 hours 20 minutes). Note: 2 breaks."
    >>> text[: content_end(text)]
    'She walks 200 minutes'
    """
    end = len(text.rstrip())
    for _ in range(MAX_ASIDES):
        start = _sentence_start(text, len(text[:end].rstrip(_TRAIL)))
        if start == 0 or not _ASIDE_SENTENCE.match(text, start, end):
            break
        end = len(text[:start].rstrip())
    start = _sentence_start(text, len(text[:end].rstrip(_TRAIL)))
    for aside in _ASIDE_CUT.finditer(text, start, end):  # after a value, outside math: the value is the answer
        if _DIGIT.search(text, start, aside.start()) and not text.count("$", start, aside.start()) % 2:
            return aside.start()
    return end


def _is_math(content: str) -> bool:
    """False for a "$...$" that pairs two currency signs ("$80 and Brad gets $"): prose words outside commands."""
    return all(word.lower() in _MATH_WORDS for word in _PROSE_WORD.findall(_TEXT_COMMAND.sub(" ", content)))


def _spans(text: str, start: int, end: int) -> list[tuple[int, int, str, str]]:
    """(start, end, content, delimiter) of the closed math and bold spans in `text[start:end]`, in order."""
    spans, opened = [], None
    for match in _MATH_TOKEN.finditer(text, start, end):
        token = match.group()
        if opened is None and token in _CLOSER:
            opened = (token, match.start(), match.end())
        elif opened is not None and token == _CLOSER[opened[0]]:
            spans.append((opened[1], match.end(), text[opened[2] : match.start()], opened[0]))
            opened = None
    return spans


def final_statement(text: str, start: int = 0) -> tuple[int, int, str] | None:
    r"""(start, end, answer) the final sentence (from `start`) ends with (a math or bold span, or after "="), or None.

    >>> final_statement(r"We get $x^2 = 9$, so the probability is $\frac13$.")[2]
    '$\\frac13$'
    >>> final_statement("Dot product = -41")[2], final_statement("So there are **144** ways. Let me know!")[2]
    ('-41', '144')
    >>> final_statement("So $x = 4$ is not a root."), final_statement("It is $4$ or $5$.")
    (None, None)
    """
    end = content_end(text)
    sentence = max(_sentence_start(text, len(text[:end].rstrip(_TRAIL))), start)
    if _HEDGE_WORDS.search(text, sentence, end):
        return None
    spans = _spans(text, sentence, end)
    listed = _listed_spans(text, spans)
    if listed is not None:  # "$x = 2$ and $x = -3$": one solution set
        return None if _HEDGE.search(text, listed[1], end) else listed
    if spans:
        span_start, span_end, content, delimiter = spans[-1]
        if _HEDGE.search(text, span_end, end) or (delimiter == "$" and not _is_math(content)):
            return None
        answer = content.strip() if delimiter == "**" else "$" + content.strip() + "$"
        return (span_start, span_end, answer) if phrase_expression(answer) else None
    if (equals := text.rfind("=", sentence, end)) < 0:
        return None
    first = _EQUATION_START.search(text, sentence, end)
    if first is not None and solution_list(text[first.start() : end]):  # "The roots are x = 2 and x = -3."
        return first.start(), end, text[first.start() : end].strip(" \t*.,;:!")
    answer = text[equals + 1 : end].strip(" \t*.,;:!")
    return (equals + 1, end, answer) if answer and phrase_expression(answer) else None


def _listed_spans(text: str, spans: list[tuple[int, int, str, str]]) -> tuple[int, int, str] | None:
    """The last math spans of a sentence joined as one answer when they state a solution set; None otherwise."""
    first = len(spans)
    while first > 0:
        between = text[spans[first - 1][1] : spans[first][0]] if first < len(spans) else ""
        if _LIST_SEPARATOR.sub("", between).strip():
            break
        first -= 1
    contents = [content.strip() for _, _, content, _ in spans[first:]]
    if len(contents) < 2 or not solution_list(", ".join(contents)):
        return None
    return spans[first][0], spans[-1][1], "$" + ", ".join(contents) + "$"


def is_name(gold: str) -> bool:
    r"""True when the gold answer is a name: one capitalised word, bare or as `\text{...}` ("Navin", `$\text{Navin}$`).

    >>> is_name(r"$\text{Navin}$"), is_name("east"), is_name("(E)")
    (True, False, False)
    """
    return _NAME_GOLD.fullmatch(gold.strip()) is not None


def final_name(text: str) -> tuple[int, int, str] | None:
    r"""(start, end, `\text{Name}`) of the one name the final sentence of `text` states (`expressions.the_name`).

    >>> final_name("Navin earns $7 an hour.\nSo Navin earns the most.")[2], final_name("Luka or Navin.")
    ('\\text{Navin}', None)
    """
    end = content_end(text)
    start = _sentence_start(text, len(text[:end].rstrip(_TRAIL)))
    name = the_name(text[start:end])
    return None if name is None else (start, end, r"\text{" + name + "}")
