r"""Answer extraction: pure string functions that pick the one answer a reply commits to, bounded by `MAX_CHARS`.

The prediction is the LAST answer statement of the reply by position: a non-empty \boxed{...} or an explicit
final-answer phrase ("final answer is", "the answer is", "answer:", "####"), whichever comes later; with neither,
the last number. A statement followed by a retraction ("wait", "no,", "that is wrong", "actually", "mistake",
"incorrect", "correction", ...) answers nothing unless a restatement ("it is X", "it should be X") follows the last
retraction. A phrase answer runs to the end of its sentence and stops at a clause that gives reasons (", since",
" because", ", which", " so ", ...); it is read as one expression (`phrase_expression`): "The answer is 2x + 3." is
`2x + 3`, never the number 3 of it, and a phrase that is not one expression or that hedges ("5 or 6", "maybe 6") is
no answer at all; a last number in a hedged sentence ("It is either 43 or 42.") is none either. The anti-echo rules
(`prediction`): the right side of "a = b" is the answer, and an unevaluated calculation ("71 + 88", "\dbinom{31}{28}",
"\log_2 64", "2^{10}", "(1+2i)6") never scores against a numeric gold unless the gold has that operation too.
Every pattern is linear-time: no nested quantifiers, and reply text is cut to `MAX_CHARS` first.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator
from typing import Any

MAX_CHARS = 4096  # a reply is cut to its last MAX_CHARS characters before any regex or parser sees it
MAX_ANSWER_CHARS = 512  # a longer "answer" is not an answer: scored wrong without parsing

_BOX_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\\[{}]|[{}]")
_PHRASE = re.compile(
    r"final\s+answer(?:\s+is)?|\banswer\s+(?:is|(?:must|should|would|will)\s+be\b)|\banswer\s*[:=]|####",
    re.I,
)
_PHRASE_LEAD = re.compile(r"\s*:?[ \t*]*")
_SENTENCE_END = re.compile(r"(?<!\\)[.!?](?:\s|$)|\n")  # "\!" is a LaTeX thin space
# A clause that gives reasons ends the answer: "9, since 10 - 1 = 9", "12 because 3 x 4 = 12", "6; we checked".
_REASON = re.compile(
    r"(?<![\s,;])(?:\s*[,;]\s*|\s+|\s*\(\s*)(?:since|because|as|so|which|given|hence|thus|therefore|where|due)\b"
    r"|(?<![\s;]);\s",
    re.I,
)
# A retraction voids the statement before it: "Wait, no, ...", "that is wrong", "my mistake", "Actually, ...".
_RETRACTION = re.compile(
    r"\b(?:wait|hold\s+on|oops|actually|correction|scratch\s+that|on\s+second\s+thought|re(?:consider|think|do)\w*|hmm+"
    r"|wrong|incorrect|mistakes?"
    r"|mistaken|miscalculat\w*|errors?|not\s+(?:right|correct)|isn['’]t\s+(?:right|correct)|nope"
    r"|no(?=\s*[,.!;:\u2014-]))\b",
    re.I,
)
# After the last retraction, a restatement gives the answer anew: "it is 6", "it's 6", "it should be 6".
_RESTATEMENT = re.compile(
    r"\b(?:(?:it|this|that|the\s+(?:answer|result|value|total))\s+(?:is|was|should\s+be|must\s+be|would\s+be|equals)"
    r"|it['’]s|should\s+be)\b(?:\s+actually\b)?",
    re.I,
)
_NUMBER = re.compile(r"(?:(?<![\w)}\].])-)?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
# Hedge words: a sentence (or a boxed answer) that offers alternatives commits to none of them.
_HEDGE_WORDS = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could|guess)\b", re.I)
# Two numbers joined by an operator, e.g. "71 + 88", "12 \times 3": a calculation, not a value.
_UNEVALUATED = re.compile(
    r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?\s*(?:[-+*×÷−]|\\times|\\cdot|\\div)\s*\d+(?:,\d{3})*(?:\.\d+)?(?![\w.^(\\{])"
)
# Operations that a numeric answer leaves unevaluated ("\dbinom{31}{28}", "\log_2 64", "2^{10}", "(1+2i)6"). Roots
# and fractions are not among them: a surd or a fraction is a final form (`\frac{\sqrt{4}}{4}` answers 1/2).
_OPERATIONS = {
    "binomial": re.compile(r"\\[dt]?binom|\\choose\b"),
    "logarithm": re.compile(r"(?<![A-Za-z])\\?(?:log|ln|lg)(?![A-Za-z])"),
    "trigonometry": re.compile(r"(?<![A-Za-z])\\?(?:arc)?(?:sin|cos|tan|cot|sec|csc)h?(?![A-Za-z])"),
    "rounding": re.compile(r"\\[lr](?:floor|ceil)|[⌊⌈]"),
    "factorial": re.compile(r"(?<!\\)!"),
    "power": re.compile(r"\^(?!\s*\{?\s*\\circ)"),
    "product": re.compile(r"\\times|\\cdot|[*×]|\)\s*[\d(]|\d\s*\("),
    "calculus": re.compile(r"\\(?:sum|prod|int|lim)\b"),
    "modulo": re.compile(r"\\[bp]?mod\b|\bmod\b"),
}
_TEXT_BLOCK = re.compile(r"\\(?:text|mbox|mathrm|textbf|operatorname)\s*\{[^{}]*\}|\\[A-Za-z]+")

# Phrase answers. A LaTeX command, an escaped character, a letter run, a number, a space or any other character.
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[A-Za-z]+|\d+(?:[.,]\d+)*|\s+|.", re.S)
_DELIMITED = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
# Words of two or more letters that are mathematics, not prose, when written without a backslash.
_MATH_WORDS = frozenset(
    "sqrt pi infty infinity inf sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln exp mod".split()
)
# Plain-text mathematics written as LaTeX: unicode signs, "sqrt(19)", "cot x", "x in [-2, 7]".
_UNICODE = {"∞": r"\infty ", "∪": r"\cup ", "∩": r"\cap ", "±": r"\pm ", "≤": r"\le ", "≥": r"\ge ", "≠": r"\ne ",
            "π": r"\pi ", "√": r"\sqrt", "×": r"\times ", "·": r"\cdot ", "−": "-", "°": r"^\circ",
            "∈": r"\in "}  # fmt: skip
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))
_BARE_SQRT = re.compile(r"(?<![\\A-Za-z])sqrt\s*\(([^()]*)\)")
_BARE_FUNCTION = re.compile(r"(?<![\\A-Za-z])(sqrt|sin|cos|tan|cot|log|ln|infty|pi)(?![A-Za-z])")
_BARE_IN = re.compile(r"(?<![\\A-Za-z])([A-Za-z])\s+in\s+(?=[\[(])")
# An inequality in one variable states an interval: "x > 2" is (2, \infty), "-2 \le x \le 7" is [-2, 7].
_BOUND = r"(-?[\d.]+|-?\\frac\{\d+\}\{\d+\}|-?\\infty)"
_LESS = r"\s*(<|\\le(?:q)?|\\lt)\s*"
_GREATER = r"\s*(>|\\ge(?:q)?|\\gt)\s*"
_INEQUALITY = (
    re.compile(rf"{_BOUND}{_LESS}[a-z]{_LESS}{_BOUND}"),  # a < x < b
    re.compile(rf"[a-z]{_GREATER}{_BOUND}"),  # x > a
    re.compile(rf"[a-z]{_LESS}{_BOUND}"),  # x < b
)
_SPACED_I = re.compile(r"(\d)\s+i(?![A-Za-z])")  # "274 i": math-verify reads the spaced unit as a variable
# After the expression, prose may follow ("12 apples", "2x + 3 where x is ..."), but not a second value or a hedge;
# an exponent ("inches^2") is part of a unit, not a second value.
_HEDGE = re.compile(
    r"(?<!\^)(?<!\^\{)\d|\b(?:or|not|no|nor|neither|either|maybe|perhaps|possibly|probably|might|could|guess|wrong"
    r"|incorrect)\b|n't\b",
    re.I,
)


def completion_text(completion: Any, message: int = -1) -> str:
    """The text of one completion: a string, or the content of an assistant message (the last by default).

    Never raises: `None`, non-text content and malformed messages give `""`; content blocks are joined.

    >>> completion_text([{"role": "assistant", "content": "42"}]), completion_text(None)
    ('42', '')
    """
    try:
        if isinstance(completion, str):
            return completion
        if isinstance(completion, dict):
            completion = [completion]
        if isinstance(completion, (list, tuple)) and completion:
            messages = [m for m in completion if isinstance(m, dict)]
            assistant = [m for m in messages if m.get("role", "assistant") == "assistant"] or messages
            content = assistant[message].get("content") if assistant else None
            if isinstance(content, str):
                return content
            if isinstance(content, (list, tuple)):  # content blocks: [{"type": "text", "text": "..."}]
                return "".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
        if isinstance(completion, bytes):
            return completion.decode("utf-8", errors="replace")
    except Exception:  # a reward must not raise on a malformed completion
        pass
    return ""


def _last_box(text: str) -> tuple[int, int, str] | None:
    """(start of `\boxed`, end after its closing brace, stripped content) of the last closed, non-empty box."""
    stack: list[tuple[bool, int, int]] = []
    closed: list[tuple[int, int, int]] = []  # boxes in closing order: the last closes last (the outermost of a nest)
    for match in _BOX_TOKENS.finditer(text):
        token = match.group()
        if len(token) == 2 and token[0] == "\\":  # \{ or \}: a literal brace
            continue
        if token[-1] == "{":
            stack.append((token != "{", match.start(), match.end()))
        elif stack:
            is_box, token_start, start = stack.pop()
            if is_box:
                closed.append((token_start, start, match.start()))
    for token_start, start, end in reversed(closed):
        content = text[start:end].strip()
        if content:
            return token_start, end + 1, content
    return None


def last_boxed(text: str) -> str | None:
    r"""Content of the last closed, non-empty `\boxed{...}` (or `\fbox{...}`), nested braces matched; else None.

    One pass over the brace tokens, so "{" * 5000 or an unclosed `\boxed{` cost linear time.

    >>> last_boxed(r"\boxed{1} then \boxed{\frac{1}{2}}"), last_boxed(r"\boxed{7"), last_boxed(r"\boxed{ }")
    ('\\frac{1}{2}', None, None)
    """
    box = _last_box(text)
    return None if box is None else box[2]


def _phrase_answer(text: str, start: int) -> tuple[str, int]:
    """The answer text that starts at `start` (after a final-answer phrase or a restatement) and where it ends: up to
    the end of its sentence or line, cut at a clause that gives reasons; stripped of markdown and punctuation."""
    start = _PHRASE_LEAD.match(text, start).end()
    stop = _SENTENCE_END.search(text, start)
    stop = stop.start() if stop else len(text)
    reason = _REASON.search(text, start, stop)
    stop = reason.start() if reason else stop
    return text[start:stop].strip(" \t*.,;:!"), stop


def _last_phrase(text: str) -> tuple[int, int, str] | None:
    """(start of the phrase, end of its answer, answer) of the last final-answer phrase with a non-empty answer."""
    for match in reversed(list(_PHRASE.finditer(text))):
        answer, end = _phrase_answer(text, match.end())
        if answer:
            return match.start(), end, answer
    return None


def _last(matches: Iterator[re.Match]) -> re.Match | None:
    """The last of an iterator of matches (one pass, constant memory), None when it is empty."""
    last = collections.deque(matches, maxlen=1)
    return last[0] if last else None


def _last_number(text: str) -> tuple[int, int, str] | None:
    """(start, end, number) of the last number, None when its sentence hedges ("It is either 43 or 42.")."""
    number = _last(_NUMBER.finditer(text))
    if number is None:
        return None
    sentence_start = 0
    for boundary in _SENTENCE_END.finditer(text, 0, number.start()):
        sentence_start = boundary.end()
    sentence_end = _SENTENCE_END.search(text, number.end())
    sentence = text[sentence_start : sentence_end.start() if sentence_end else len(text)]
    return None if _HEDGE_WORDS.search(sentence) else (number.start(), number.end(), number.group())


def _after_retraction(text: str, end: int) -> tuple[str, str] | None | bool:
    """False when no retraction follows position `end`; else the restatement after the last retraction as
    `(answer, "phrase")`, or None when there is none (the retracted answer is withdrawn, nothing replaces it)."""
    retraction = _last(_RETRACTION.finditer(text, end))
    if retraction is None:
        return False
    restatement = _last(_RESTATEMENT.finditer(text, retraction.end()))
    if restatement is None:
        return None
    answer = _phrase_answer(text, restatement.end())[0]
    return (answer, "phrase") if answer else None


def extract_answer(text: str, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    r"""The strict prediction of a reply as `(answer, kind)`, kind "boxed" | "phrase" | "number"; None if none.

    The last answer statement by position (a box, or a final-answer phrase), else the last number; voided by a
    retraction after it unless a restatement ("it is X") follows. A phrase answer is returned as written (up to the
    end of its sentence, or a clause giving reasons); `phrase_expression` reads it.

    >>> extract_answer(r"71 + 88 is \boxed{159}"), extract_answer("The final answer is $42$. Done.")
    (('159', 'boxed'), ('$42$', 'phrase'))
    >>> extract_answer(r"\boxed{5}. Wait, no, it is 6."), extract_answer(r"\boxed{5}. Wait, that is wrong.")
    (('6', 'phrase'), None)
    >>> extract_answer("The answer is 9, since 10 - 1 = 9."), extract_answer("It is either 43 or 42.")
    (('9', 'phrase'), None)
    >>> extract_answer("We add 71 + 88 and get 150"), extract_answer("no digits")
    (('150', 'number'), None)
    """
    text = text[-max_chars:] if isinstance(text, str) else ""
    box, phrase = _last_box(text), _last_phrase(text)
    if box is not None and (phrase is None or phrase[0] < box[1]):  # a phrase inside or before the box: the box
        _, end, answer = box
        kind = "boxed"
    elif phrase is not None:
        _, end, answer = phrase
        kind = "phrase"
    else:
        number = _last_number(text)
        if number is None:
            return None
        _, end, answer = number
        kind = "number"
    restated = _after_retraction(text, end)
    return (answer, kind) if restated is False else restated


def extract_gold(solution: Any, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    r"""The gold answer as `(answer, kind)`: the last \boxed{} of a worked solution, the text after GSM8K's "####",
    else the whole (bare) answer. None when there is nothing to parse.

    >>> extract_gold("Add them: 40 + 2 = 42.\n#### 42"), extract_gold(r"\frac{1}{2}"), extract_gold(7)
    (('42', 'phrase'), ('\\frac{1}{2}', 'phrase'), ('7', 'phrase'))
    """
    if isinstance(solution, bool) or not isinstance(solution, (str, int, float)):
        return None
    text = str(solution)[-max_chars:]
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed, "boxed"
    if "####" in text:
        text = text.rsplit("####", 1)[1].strip().split("\n", 1)[0]
    text = text.strip()
    return (text, "phrase") if text else None


def _undelimited_expression(text: str) -> str | None:
    """The leading expression of `text` up to the first prose word; None when a value or a hedge follows it."""
    depth, end = 0, 0
    for match in _TOKEN.finditer(text):
        token, start = match.group(), match.start()
        if token.isspace():
            continue
        glued = start > 0 and text[start - 1].isalnum()  # "2xy", "12cm": variables or units, math-verify's call
        if depth == 0 and token.isalpha() and len(token) > 1 and token.lower() not in _MATH_WORDS and not glued:
            if end == 0:  # prose first: a text answer ("Evelyn", "odd"), never one with a number in it
                return None if _HEDGE.search(text) else r"\text{" + text + "}"
            return None if _HEDGE.search(text[start:]) else text[:end].strip()
        depth += (token == "{") - (token == "}" and depth > 0)
        end = match.end()
    return text[:end].strip() or None


def phrase_expression(answer: str) -> str | None:
    r"""The one expression a final-answer phrase states, as LaTeX without delimiters; None when it states none.

    Prose after the expression is dropped ("12 apples" -> `12`) unless it holds another value or a hedge ("or",
    "not", a digit): then the phrase is no answer, never one number of it. Text in `$...$` (or `\(...\)`) is taken
    whole when it is the only math of the phrase; a "$" before a number is a currency sign.

    >>> phrase_expression("2x + 3"), phrase_expression("12 apples"), phrase_expression("$12$ apples")
    ('2x + 3', '12', '12')
    >>> phrase_expression("5 or 6"), phrase_expression("$2$ or $3$"), phrase_expression("12 because 3 x 4 = 12")
    (None, None, None)
    >>> phrase_expression("Evelyn"), phrase_expression("$1,000"), phrase_expression("50%")
    ('\\text{Evelyn}', '1,000', '50\\%')
    >>> phrase_expression("1 ± sqrt(19)"), phrase_expression("cot x"), phrase_expression("x in [-2,7]")
    ('1 \\pm \\sqrt{19}', '\\cot x', 'x \\in [-2,7]')
    """
    text = _UNICODE_RE.sub(lambda m: _UNICODE[m.group()], answer.replace("\\$", "")).strip(" \t*")
    if text.count("$") % 2:  # an odd "$": a currency sign
        text = re.sub(r"\$(?=\s*\d)", "", text, count=1)
        if text.count("$") % 2:
            text = text.replace("$", "")
    segments = [next(g for g in m.groups() if g is not None) for m in _DELIMITED.finditer(text)]
    if segments:
        outside = _DELIMITED.sub(" ", text)
        if len(segments) != 1 or _HEDGE.search(outside):
            return None
        expression = segments[0].strip()
    else:
        text = _BARE_IN.sub(r"\1 \\in ", _BARE_SQRT.sub(r"\\sqrt{\1}", text))
        expression = _undelimited_expression(text)
        if expression is None:
            return None
        if not expression.startswith("\\text{"):
            expression = re.sub(r"  +", " ", _BARE_FUNCTION.sub(r"\\\1 ", expression)).strip()
        expression = re.sub(r"(?<!\\)%", r"\\%", expression)
    return expression or None


def _operations(text: str) -> set[str]:
    """The names of the `_OPERATIONS` that `text` holds (text blocks such as `\text{ sec}` aside)."""
    text = re.sub(r"\\(?:text|mbox|mathrm|textbf)\s*\{[^{}]*\}", " ", text)
    return {name for name, pattern in _OPERATIONS.items() if pattern.search(text)}


def _is_numeric(gold: str) -> bool:
    r"""True when the gold holds no variable: numbers, `\pi`, `i`, `\sqrt`, intervals, tuples, units in `\text{}`."""
    return all(word == "i" for word in re.findall(r"[A-Za-z]+", _TEXT_BLOCK.sub(" ", gold)))


def _interval(answer: str) -> str:
    r"""An inequality in one variable as interval notation ("x > 2" -> `(2, \infty)`); other answers unchanged.

    >>> _interval("x > 2"), _interval(r"-2 \le x \le 7"), _interval("x < 1 or x > 2")
    ('(2, \\infty)', '[-2, 7]', 'x < 1 or x > 2')
    """
    closed = {"<": False, ">": False, r"\lt": False, r"\gt": False}  # \le, \leq, \ge, \geq: closed
    if m := _INEQUALITY[0].fullmatch(answer.strip()):
        low, op1, op2, high = m.groups()
        return ("[" if closed.get(op1, True) else "(") + f"{low}, {high}" + ("]" if closed.get(op2, True) else ")")
    if m := _INEQUALITY[1].fullmatch(answer.strip()):
        return ("[" if closed.get(m.group(1), True) else "(") + m.group(2) + r", \infty)"
    if m := _INEQUALITY[2].fullmatch(answer.strip()):
        return r"(-\infty, " + m.group(2) + ("]" if closed.get(m.group(1), True) else ")")
    return answer


def prediction(pred: tuple[str, str] | None, gold: str) -> tuple[str, str] | None:
    r"""Apply the phrase and anti-echo rules to `extract_answer`'s result: read a phrase as one expression, take the
    right side of "a = b" (unless the gold is an equation), refuse hedged answers ("4 \text{ or } 5") and refuse
    unevaluated arithmetic: two numbers and an operator, or, against a numeric gold, an operation the gold lacks.

    >>> prediction(("x = 4", "phrase"), "4"), prediction(("71 + 88", "phrase"), "159"), prediction(None, "1")
    (('4', 'phrase'), None, None)
    >>> prediction((r"\dbinom{31}{28}", "boxed"), "4495"), prediction(("2^{10}", "boxed"), "1024")
    (None, None)
    >>> prediction((r"\frac{1}{2}", "boxed"), "0.5"), prediction(("1 + 274 i", "boxed"), "$1+274i$")
    (('\\frac{1}{2}', 'boxed'), ('1 + 274i', 'boxed'))
    """
    if pred is None:
        return None
    answer, kind = pred
    if kind == "phrase":
        answer = phrase_expression(answer)
        if answer is None:
            return None
    if kind != "number" and "=" in answer and "=" not in gold:
        answer = answer.rsplit("=", 1)[1].strip()
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return None
    if kind == "number":
        return answer, kind
    answer = _SPACED_I.sub(r"\1i", answer)
    interval = re.split(r"\\in(?![A-Za-z])", gold.strip("$ "))[-1].strip()  # "x \in [-2,7]" is an interval too
    if interval[:1] in "([" and interval[-1:] in ")]":
        answer = _interval(answer)
    if _HEDGE_WORDS.search(answer) and not _HEDGE_WORDS.search(gold):
        return None
    if _UNEVALUATED.search(answer) and not _UNEVALUATED.search(gold):
        return None
    if _is_numeric(gold) and _operations(answer) - _operations(gold):
        return None
    return answer, kind
