r"""Answer extraction: the one answer a reply commits to (`extract_answer`), never a number it did not commit to.
Every pattern is linear-time (no nested quantifiers), and reply text is cut to `MAX_CHARS` first."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from .expressions import _HEDGE_WORDS, _NEGATION, normalize_unicode, prediction  # noqa: F401  (prediction: re-exported)
from .numerals import SPACED_THOUSANDS, numbers_in_words
from .sentences import _DIGIT, _SENTENCE_END, _TRAIL, _last, _sentence_start, content_end, final_name, final_statement

MAX_CHARS = 4096  # a reply is cut to its last MAX_CHARS characters before any regex or parser sees it

_BOX_START = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BOX_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\\[{}]|[{}]")
_BARE_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])\s*([^\s${][^\s$]*)")  # MATH's "$\boxed 2$": no braces
_PHRASE = re.compile(
    r"final\s+answer(?:\s+is)?|\banswer\s+(?:is|(?:must|should|would|will)\s+be\b)|\banswer\s*[:=]|####", re.I
)
_PHRASE_LEAD = re.compile(r"\s*:?[ \t*]*")
# A clause that gives reasons ends the answer ("9, since 10 - 1 = 9", "6; we checked"), and so does an aside after it.
_REASON = re.compile(
    r"(?<![\s,;])(?:\s*[,;]\s*|\s+|\s*\(\s*)(?:since|because|as|so|which|given|hence|thus|therefore|where|due)\b"
    r"|(?<![\s;]);\s|\s*\\approx(?![A-Za-z])|\s+\((?=[^()\n$]{0,80}?(?<![\\A-Za-z])[A-Za-z]{3})",
    re.I,
)
# A retraction voids the statement before it: "Wait, no, ...", "that is wrong", "my mistake", "Actually, ...".
_RETRACTION = re.compile(
    r"\b(?:wait|hold\s+on|oops|actually|correction|scratch\s+that|on\s+second\s+thought|re(?:consider|think|do)\w*|hmm+"
    r"|wrong|incorrect|mistakes?|mistaken|miscalculat\w*|errors?|not\s+(?:right|correct)|isn['’]t\s+(?:right|correct)"
    r"|nope"
    r"|no(?=\s*[,.!;:\u2014-]))\b",
    re.I,
)
# After the last retraction, a restatement gives the answer anew: "it is 6", "it's 6", "it should be 6".
_RESTATEMENT = re.compile(
    r"\b(?:(?:it|this|that|the\s+(?:answer|result|value|total))\s+(?:is|was|should\s+be|must\s+be|would\s+be|equals)"
    r"|it['’]s|should\s+be)\b(?:\s+actually\b)?",
    re.I,
)
# "-\sqrt" right before a number: "-\sqrt3"
_SURD = re.compile(r"(?:(?<![\w)}\].])-\s*)?(?:(?<![\w.])\d+\s*)?\\sqrt\s*\{?$")
_PI = re.compile(r"\s*/?\s*\\pi(?![A-Za-z])")  # "\pi" or "/\pi" right after a number: "7\pi", "20/\pi"
# Between a retraction and a math span, words that make the span a reason, a condition or a check, not a new answer.
_CONDITION = re.compile(r"\b(?:since|because|if|unless|when|check\w*|verif\w*|test\w*|plug\w*|try\w*)\b", re.I)
# A number: "-3", "1,234.5", "385 000" (thousands set apart by spaces), "7/8", "33%" (33/100), "1.45 million".
_NUMBER = re.compile(
    rf"(?:(?<![\w)}}\].])-)?(?:{SPACED_THOUSANDS}|\d+(?:,\d{{3}})*)(?:\.\d+)?(?:/\d+)?(?:\\?%)?"
    r"(?:\s+(?:thousand|million|billion|trillion)\b)?"
)


def completion_text(completion: Any, message: int = -1) -> str:
    """The text of one completion: a string, or an assistant message's content (the last by default; else "").

    >>> completion_text([{"role": "assistant", "content": "42"}]), completion_text(None)
    ('42', '')
    """
    with contextlib.suppress(Exception):  # a reward must not raise on a malformed completion
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
    return ""


def _boxes(text: str) -> tuple[tuple[int, int, str] | None, bool]:
    """(start, end, content) of the last closed, non-empty box or None, and whether the text ends in an open box."""
    stack: list[tuple[bool, int, int]] = []
    closed: list[tuple[int, int, int]] = []  # boxes in closing order: the last closes last (the outermost of a nest)
    for match in _BOX_TOKENS.finditer(text):
        if len(token := match.group()) == 2 and token[0] == "\\":  # \{ or \}: a literal brace
            continue
        if token[-1] == "{":
            stack.append((token != "{", match.start(), match.end()))
        elif stack:
            is_box, token_start, start = stack.pop()
            if is_box:
                closed.append((token_start, start, match.start()))
    cut_off = any(is_box for is_box, _, _ in stack)
    for token_start, start, end in reversed(closed):
        if content := text[start:end].strip():
            return (token_start, end + 1, content), cut_off
    return None, cut_off


def last_boxed(text: str, *, bare: bool = False) -> str | None:
    r"""Content of the last closed, non-empty `\boxed{...}` (or `\fbox{...}`), else None: the one `\boxed` parser.
    `bare=True` (golds: MATH writes "$\boxed 2$") also reads a brace-less box after the last closed one.

    >>> last_boxed(r"\boxed{1} then \boxed{\frac{1}{2}}"), last_boxed(r"\boxed{7"), last_boxed(r"\boxed{ }")
    ('\\frac{1}{2}', None, None)
    >>> last_boxed(r"so $x = \boxed 2$."), last_boxed(r"so $x = \boxed 2$.", bare=True)
    (None, '2')
    """
    box = _boxes(text)[0]
    if bare and (token := _last(_BARE_BOX.finditer(text))) and (box is None or token.start() > box[0]):
        return token.group(1)
    return None if box is None else box[2]


def _phrase_answer(text: str, start: int) -> tuple[str, int]:
    """The answer from `start` to the end of its sentence or a clause giving reasons, stripped, and where it ends."""
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


def _last_number(text: str) -> tuple[int, int, str, str] | None:
    """(start, end, number, kind) of the last number (a surd or multiple of pi whole), None in a hedged sentence."""
    final = _sentence_start(text, len(text.rstrip(_TRAIL)))
    if not _DIGIT.search(text, final):  # a final sentence with no digit may state its number in words
        words = [w for w in numbers_in_words(text[final:]) if text[final + w[0] : final + w[1]].lower() != "one"]
        if len(words) == 1 and not (_HEDGE_WORDS.search(text, final) or _NEGATION.search(text, final)):
            return final + words[0][0], final + words[0][1], str(words[0][2]), "number"
    if (number := _last(_NUMBER.finditer(text))) is None:
        return None
    sentence_end = _SENTENCE_END.search(text, number.end())
    sentence = text[_sentence_start(text, number.start()) : sentence_end.start() if sentence_end else len(text)]
    if _HEDGE_WORDS.search(sentence) or _NEGATION.search(sentence):
        return None
    start, end, answer = number.start(), number.end(), number.group().replace("\\%", "%")
    surd = _SURD.search(text, max(0, start - 16), start)
    if surd and surd.group().endswith("{"):  # "\\sqrt{20}": the closing brace belongs to the surd
        surd = surd if text.startswith("}", end) else None
        end += surd is not None
    pi = _PI.match(text, end)
    if surd is None and pi is None:
        return start, end, answer, "number"
    start, end = surd.start() if surd else start, pi.end() if pi else end
    return start, end, "$" + text[start:end].strip() + "$", "phrase"


def _after_retraction(text: str, end: int) -> tuple[str, str] | None | bool:
    """False without a retraction after `end`; else the answer stated anew after the last one, or None (withdrawn)."""
    if (retraction := _last(_RETRACTION.finditer(text, end))) is None:
        return False
    if (restatement := _last(_RESTATEMENT.finditer(text, retraction.end()))) is not None:
        answer = _phrase_answer(text, restatement.end())[0]
        return (answer, "phrase") if answer else None
    statement = final_statement(text, retraction.end())
    if statement is None or text[statement[1] : content_end(text)].strip(" \t.!?*"):
        return None
    # "wrong, since $x = 5$": a reason, not a new answer
    return None if _CONDITION.search(text, retraction.end(), statement[0]) else (statement[2], "phrase")


def extract_answer(text: str, max_chars: int = MAX_CHARS, *, names: bool = False) -> tuple[str, str] | None:
    r"""The strict prediction of a reply as `(answer, kind)`, kind "boxed" | "phrase" | "number"; None if none.

    Unicode is read as LaTeX; a reply cut off inside a `\boxed{` answers nothing. The answer is the last box or answer
    phrase (to the end of its sentence or a clause giving reasons), else the final sentence's (with `names`, its name),
    else the last number before trailing asides; a retraction after it voids it unless it is stated anew ("it is X").

    >>> extract_answer(r"71 + 88 is \boxed{159}"), extract_answer("The final answer is $42$. Done.")
    (('159', 'boxed'), ('$42$', 'phrase'))
    >>> extract_answer(r"\boxed{5}. Wait, no, it is 6."), extract_answer(r"\boxed{5}. Wait, that is wrong.")
    (('6', 'phrase'), None)
    >>> extract_answer("The answer is 9, since 10 - 1 = 9."), extract_answer("It is either 43 or 42.")
    (('9', 'phrase'), None)
    >>> extract_answer("We add 71 + 88 and get 150"), extract_answer("So the ratio is $\\frac{3}{4}$.")
    (('150', 'number'), ('$\\frac{3}{4}$', 'phrase'))
    >>> extract_answer("no digits"), extract_answer(r"$\boxed{2}$ or $\boxed{-2}$.")
    (None, None)
    >>> extract_answer(r"\boxed{3} then \boxed{4"), extract_answer("So Navin earns the most.", names=True)
    (None, ('\\text{Navin}', 'phrase'))
    """
    text = normalize_unicode(text[-max_chars:]) if isinstance(text, str) else ""
    box, cut_off = _boxes(text)
    if cut_off:  # "\boxed{\boxed{...\boxed{42": no final answer to read, not the last number in it
        return None
    phrase = _last_phrase(text)
    if box is not None and (phrase is None or phrase[0] < box[1]):  # a phrase inside or before the box: the box
        start, end, answer = box
        stop = _SENTENCE_END.search(text, end)
        sentence = text[_sentence_start(text, start) : stop.start() if stop else len(text)]
        if len(_BOX_START.findall(sentence)) > 1 and _HEDGE_WORDS.search(_BOX_START.sub(" ", sentence)):
            return None  # "\boxed{2} or \boxed{-2}": a hedge between two boxes commits to neither
        kind = "boxed"
    elif found := phrase or final_statement(text) or (final_name(text) if names else None):
        _, end, answer = found
        kind = "phrase"
    else:
        number = _last_number(text[: content_end(text)])
        if number is None:
            return None
        _, end, answer, kind = number
    restated = _after_retraction(text, end)
    return (answer, kind) if restated is False else restated


def extract_gold(solution: Any, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    r"""The gold answer as `(answer, kind)`: the last \boxed{}, else the text after GSM8K's "####", else all; or None.

    >>> extract_gold("Add them: 40 + 2 = 42.\n#### 42"), extract_gold(r"\frac{1}{2}"), extract_gold(7)
    (('42', 'phrase'), ('\\frac{1}{2}', 'phrase'), ('7', 'phrase'))
    """
    if isinstance(solution, bool) or not isinstance(solution, (str, int, float)):
        return None
    text = str(solution)[-max_chars:]
    if (boxed := last_boxed(text)) is not None:
        return boxed, "boxed"
    if "####" in text:
        text = text.rsplit("####", 1)[1].strip().split("\n", 1)[0]
    text = text.strip()
    return (text, "phrase") if text else None
