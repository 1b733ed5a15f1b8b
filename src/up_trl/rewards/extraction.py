r"""Answer extraction: pure string functions that pick the one answer a reply commits to, bounded by `MAX_CHARS`.

The prediction is, in order: the last non-empty \boxed{...}; else the text after the last explicit final-answer
phrase ("final answer is", "the answer is", "answer:", "####"); else the last number. A phrase answer is read as
one expression (`phrase_expression`): "The answer is 2x + 3." is `2x + 3`, never the number 3 of it, and a phrase
that is not one expression ("5 or 6", "12 because 3 x 4 = 12") is no answer at all. The anti-echo rules
(`prediction`): the right side of "a = b" is the answer, and an unevaluated sum or product of two numbers
("71 + 88") never scores unless the gold answer has that shape too.
"""

from __future__ import annotations

import re
from typing import Any

MAX_CHARS = 4096  # a reply is cut to its last MAX_CHARS characters before any regex or parser sees it
MAX_ANSWER_CHARS = 512  # a longer "answer" is not an answer: scored wrong without parsing

_BOX_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\\[{}]|[{}]")
_PHRASE = re.compile(r"(?:final\s+answer(?:\s+is)?|\banswer\s+is|\banswer\s*:|####)\s*:?[ \t*]*(?P<ans>[^\n]*)", re.I)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_NUMBER = re.compile(r"(?:(?<![\w)}\].])-)?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
# Two numbers joined by an operator, e.g. "71 + 88", "12 \times 3": a calculation, not a value.
_UNEVALUATED = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*(?:[-+*×÷−]|\\times|\\cdot|\\div)\s*\d[\d,]*(?:\.\d+)?(?![\w.^(\\{])"
)

# Phrase answers. A LaTeX command, an escaped character, a letter run, a number, a space or any other character.
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[A-Za-z]+|\d+(?:[.,]\d+)*|\s+|.", re.S)
_DELIMITED = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
# Words of two or more letters that are mathematics, not prose, when written without a backslash.
_MATH_WORDS = frozenset(
    "sqrt pi infty infinity inf sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln exp mod".split()
)
# After the expression, prose may follow ("12 apples", "2x + 3 where x is ..."), but not a second value or a hedge.
_HEDGE = re.compile(r"\d|\b(?:or|not|no|nor|neither|either|maybe|perhaps|wrong|incorrect)\b|n't\b", re.I)


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


def last_boxed(text: str) -> str | None:
    r"""Content of the last closed, non-empty `\boxed{...}` (or `\fbox{...}`), nested braces matched; else None.

    One pass over the brace tokens, so "{" * 5000 or an unclosed `\boxed{` cost linear time.

    >>> last_boxed(r"\boxed{1} then \boxed{\frac{1}{2}}"), last_boxed(r"\boxed{7"), last_boxed(r"\boxed{ }")
    ('\\frac{1}{2}', None, None)
    """
    stack: list[tuple[bool, int]] = []
    closed: list[tuple[int, int]] = []  # (start, end) of boxed contents, in closing order: the last closes last
    for match in _BOX_TOKENS.finditer(text):
        token = match.group()
        if len(token) == 2 and token[0] == "\\":  # \{ or \}: a literal brace
            continue
        if token[-1] == "{":
            stack.append((token != "{", match.end()))
        elif stack:
            is_box, start = stack.pop()
            if is_box:
                closed.append((start, match.start()))
    for start, end in reversed(closed):
        content = text[start:end].strip()
        if content:
            return content
    return None


def extract_answer(text: str, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    r"""The strict prediction of a reply as `(answer, kind)`, kind "boxed" | "phrase" | "number"; None if none.

    A phrase answer is returned as written (up to the end of its sentence); `phrase_expression` reads it.

    >>> extract_answer(r"71 + 88 is \boxed{159}"), extract_answer("The final answer is $42$. Done.")
    (('159', 'boxed'), ('$42$', 'phrase'))
    >>> extract_answer("We add 71 + 88 and get 150"), extract_answer("no digits")
    (('150', 'number'), None)
    """
    text = text[-max_chars:] if isinstance(text, str) else ""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed, "boxed"
    phrase = None
    for match in _PHRASE.finditer(text):
        answer = _SENTENCE_END.split(match.group("ans"), maxsplit=1)[0].strip(" \t*.,;:!")
        if answer:
            phrase = answer
    if phrase is not None:
        return phrase, "phrase"
    numbers = _NUMBER.findall(text)
    return (numbers[-1], "number") if numbers else None


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
    """
    text = answer.replace("\\$", "").strip(" \t*")
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
        expression = _undelimited_expression(text)
        if expression is None:
            return None
        expression = re.sub(r"(?<![\\A-Za-z])pi(?![A-Za-z])", r"\\pi ", expression).strip()
        expression = re.sub(r"(?<!\\)%", r"\\%", expression)
    return expression or None


def prediction(pred: tuple[str, str] | None, gold: str) -> tuple[str, str] | None:
    """Apply the phrase and anti-echo rules to `extract_answer`'s result: read a phrase as one expression, take the
    right side of "a = b" (unless the gold is an equation) and refuse unevaluated arithmetic.

    >>> prediction(("x = 4", "phrase"), "4"), prediction(("71 + 88", "phrase"), "159"), prediction(None, "1")
    (('4', 'phrase'), None, None)
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
    if kind != "number" and _UNEVALUATED.search(answer) and not _UNEVALUATED.search(gold):
        return None
    return answer, kind
