r"""Answer expressions: read the answer text that `extraction` found as one LaTeX expression (`phrase_expression`),
and refuse what is no answer: hedges, unevaluated operations, echoes of the question (`prediction`'s anti-echo rules).
Every pattern is linear-time: no nested quantifiers."""

from __future__ import annotations

import re

from .numerals import join_spaced_thousands, number_in_words, scaled

MAX_ANSWER_CHARS = 512  # a longer "answer" is not an answer: scored wrong without parsing

# Hedge words: a sentence (or a boxed answer) that offers alternatives commits to none of them.
_HEDGE_WORDS = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could|guess)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|never|nor|neither)\b|n['’]t\b", re.I)  # "So 6 is not a root."
# Two numbers joined by an operator, e.g. "71 + 88", "12 \times 3": a calculation, not a value.
_UNEVALUATED = re.compile(
    r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?\s*(?:[-+*×÷−]|\\times|\\cdot|\\div)\s*\d+(?:,\d{3})*(?:\.\d+)?(?![\w.^(\\{])"
)
# Operations a numeric answer leaves unevaluated ("\log_2 64", "2^{10}"); a surd or a fraction is a final form.
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
# The whole reply is read with these ("−6/5", "7π"); degrees of temperature are a unit, degrees of angle `^\circ`.
_UNICODE_TEXT = {**_UNICODE, "÷": r"\div ", "≈": r"\approx ", "²": "^2", "³": "^3", "–": "-", "°": r"^\circ ",
                 "°C": " degrees C", "°F": " degrees F"}  # fmt: skip
_UNICODE_ROOT = re.compile(r"√\s*(?:(\d+(?:\.\d+)?|[A-Za-z])|\(([^()]{0,64})\))")  # "√20", "√x", "√(x+1)"
_UNICODE_TEXT_RE = re.compile("|".join(map(re.escape, sorted(_UNICODE_TEXT, key=len, reverse=True))))
_BARE_SQRT = re.compile(r"(?<![\\A-Za-z])sqrt\s*\(([^()]*)\)")
_BARE_FUNCTION = re.compile(r"(?<![\\A-Za-z])(sqrt|sin|cos|tan|cot|log|ln|infty|pi)(?![A-Za-z])")
_BARE_IN = re.compile(r"(?<![\\A-Za-z])([A-Za-z])\s+in\s+(?=[\[(])")
# An inequality in one variable states an interval: "x > 2" is (2, \infty), "-2 \le x \le 7" is [-2, 7].
_BOUND = r"(-?(?:[\d.]+|\\frac\{\d+\}\{\d+\}|\\infty|\\sqrt\{?\d+\}?))"
_LESS = r"\s*(<|\\le(?:q)?|\\lt)\s*"
_GREATER = r"\s*(>|\\ge(?:q)?|\\gt)\s*"
_INEQUALITY = (
    re.compile(rf"{_BOUND}{_LESS}[a-z]{_LESS}{_BOUND}"),  # a < x < b
    re.compile(rf"[a-z]{_GREATER}{_BOUND}"),  # x > a
    re.compile(rf"[a-z]{_LESS}{_BOUND}"),  # x < b
)
# Scientific notation with a decimal mantissa ("1.2 \times 10^5") is a final form; "5 \times 10^3" may be an echo.
_SCIENTIFIC = re.compile(r"(?<![\d.])\d\.\d+\s*(?:\\times|\\cdot)\s*10\^(?:\{-?\d+\}|-?\d)")
_THIN_SPACE_THOUSANDS = re.compile(r"(?<=\d)\\[,;! ](?=\d{3}(?!\d))")  # "114\,200" is 114200
_SPACED_I = re.compile(r"(\d)\s+i(?![A-Za-z])")  # "274 i": math-verify reads the spaced unit as a variable
# Between the equations of a solution set ("x = 2 and x = -3"); linear: a separator starts after a non-space.
_LIST_SEPARATOR = re.compile(
    r"(?<!\s)\s*(?:,\s*and\b|,|;|(?<![A-Za-z])and\b|\\text\s*\{\s*(?:,\s*and|and|,)\s*\}|\\quad)\s*"
)
_EQUATION = re.compile(r"([A-Za-z])\s*=\s*([^=]*[^=\s])")
_ORDERED = re.compile(r"\s*\$?\s*(?:\\left\s*)?(?:[(\[]|\\langle)")  # a tuple, a point or an interval
# A name is a capitalised word ("Navin", "Evelyn's"; not "USD", "I"); a sentence's opening word (`_OPENERS`) is none.
_NAME = re.compile(r"(?<![\w'’\\-])([A-Z][a-z]+)(?:['’]s)?(?![\w'’-])")
_FIRST_WORD = re.compile(r"[^A-Za-z]*([A-Za-z]+)")
_PARENTHESES = re.compile(r"\([^()]*\)")
_OPENERS = frozenset(
    "so thus hence therefore then the a an this that these those it its in on of from for at by to with after overall"
    " finally clearly since because and but here there now we she he they you our his her their all both each only"
    " if when".split()
)
# Prose may follow an expression ("12 apples"), but no second value or hedge; an exponent ("inches^2") is a unit's.
_HEDGE = re.compile(
    r"(?<!\^)(?<!\^\{)\d|\b(?:or|not|no|nor|neither|either|maybe|perhaps|possibly|probably|might|could|guess|wrong"
    r"|incorrect)\b|n't\b",
    re.I,
)


def normalize_unicode(text: str) -> str:
    r"""Unicode mathematics as ASCII/LaTeX (`_UNICODE_TEXT`), in one linear pass.

    >>> normalize_unicode("−6/5"), normalize_unicode("7π m²"), normalize_unicode("2√15")
    ('-6/5', '7\\pi  m^2', '2\\sqrt{15}')
    """
    # "√20" is \sqrt{20}: LaTeX's "\sqrt20" would be \sqrt{2}0.
    text = _UNICODE_ROOT.sub(lambda m: r"\sqrt{" + (m.group(1) or m.group(2)) + "}", text)
    return _UNICODE_TEXT_RE.sub(lambda m: _UNICODE_TEXT[m.group()], text)


def solution_list(text: str) -> tuple[str, list[str]] | None:
    """A solution set stated as equations of one variable, as (variable, values in order); None for anything else.

    >>> solution_list("x = 2 and x = -3"), solution_list("x = 1, x = 2, and x = 5"), solution_list("x = 2 and y = 3")
    (('x', ['2', '-3']), ('x', ['1', '2', '5']), None)
    """
    parts = _LIST_SEPARATOR.split(text.strip(" .")) if "=" in text else []
    equations = [_EQUATION.fullmatch(part.strip()) for part in parts]
    if len(equations) < 2 or not all(equations) or len({m.group(1) for m in equations}) != 1:
        return None
    return equations[0].group(1), [m.group(2) for m in equations]


def the_name(text: str) -> str | None:
    """The one name `text` holds (an opening "So" or "The" aside); None for none, two, a hedge or a negation.

    >>> the_name("So Navin earns the most."), the_name("Evelyn's average speed is greatest"), the_name("Sam beats Bo")
    ('Navin', 'Evelyn', None)
    """
    text = _PARENTHESES.sub(" ", text)  # "So Navin (in Mongolia) earns the most": an aside names no one
    if _HEDGE_WORDS.search(text) or _NEGATION.search(text):
        return None
    first = _FIRST_WORD.match(text)
    opener = first.start(1) if first is not None and first.group(1).lower() in _OPENERS else -1
    names = {m.group(1) for m in _NAME.finditer(text) if m.start(1) != opener}
    return names.pop() if len(names) == 1 else None


def _undelimited_expression(text: str) -> str | None:
    """The leading expression of `text` up to the first prose word; None when a value or a hedge follows it."""
    depth, end = 0, 0
    for match in _TOKEN.finditer(text):
        token, start = match.group(), match.start()
        if token.isspace():
            continue
        glued = start > 0 and text[start - 1].isalnum()  # "2xy", "12cm": variables (`verification.dropped_letters`)
        if depth == 0 and token.isalpha() and len(token) > 1 and token.lower() not in _MATH_WORDS and not glued:
            if end == 0:  # prose first: a text answer ("Evelyn", "odd"), never one with a number in it
                if _HEDGE.search(text):
                    return None
                name = the_name(text) if " " in text.strip() else None  # "Navin, who earns the most": Navin
                return r"\text{" + (name or text) + "}"
            return None if _HEDGE.search(text[start:]) else text[:end].strip()
        depth += (token == "{") - (token == "}" and depth > 0)
        end = match.end()
    return text[:end].strip() or None


def phrase_expression(answer: str) -> str | None:
    r"""The one expression a final-answer phrase states, as LaTeX; None for none, or when prose after it holds another
    value or a hedge (never one number of the phrase). A "$" before a number is money.

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
        only_separators = len(segments) > 1 and not _LIST_SEPARATOR.sub("", outside).strip(" .")
        if only_separators and solution_list(", ".join(segments)):
            return ", ".join(s.strip() for s in segments)  # "$x = 2$ and $x = -3$": one solution set
        if len(segments) != 1 or _HEDGE.search(outside):
            return None
        expression = segments[0].strip()
    elif listed := solution_list(text):
        return ", ".join(f"{listed[0]} = {value}" for value in listed[1])
    else:
        text = _BARE_IN.sub(r"\1 \\in ", _BARE_SQRT.sub(r"\\sqrt{\1}", text))
        words = number_in_words(text)  # "twenty-four", "thirty-six dollars": the number, then prose
        if words is not None and not text[: words[0]].strip():
            text = str(words[2]) + text[words[1] :]
        expression = _undelimited_expression(text) or ""
        if not expression.startswith("\\text{"):
            expression = re.sub(r"  +", " ", _BARE_FUNCTION.sub(r"\\\1 ", expression)).strip()
        expression = re.sub(r"(?<!\\)%", r"\\%", expression)
    return expression or None


def _operations(text: str) -> set[str]:
    """The names of the `_OPERATIONS` that `text` holds (text blocks such as `\text{ sec}` aside)."""
    text = re.sub(r"\\(?:text|mbox|mathrm|textbf)\s*\{[^{}]*\}", " ", _SCIENTIFIC.sub("1", text))
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
    r"""`extract_answer`'s result under the anti-echo rules ("a = b" is b; hedges, unevaluated arithmetic refused).

    >>> prediction(("x = 4", "phrase"), "4"), prediction(("71 + 88", "phrase"), "159"), prediction(None, "1")
    (('4', 'phrase'), None, None)
    >>> prediction((r"\dbinom{31}{28}", "boxed"), "4495"), prediction(("2^{10}", "boxed"), "1024")
    (None, None)
    >>> prediction((r"\frac{1}{2}", "boxed"), "0.5"), prediction(("1 + 274 i", "boxed"), "$1+274i$")
    (('\\frac{1}{2}', 'boxed'), ('1 + 274i', 'boxed'))
    >>> prediction(("x = 2 and x = -3", "phrase"), "-3, 2"), prediction(("385 000", "boxed"), "385000")
    (('2, -3', 'phrase'), ('385000', 'boxed'))
    """
    if pred is None:
        return None
    answer, kind = pred
    answer = scaled(answer, gold)  # "1.45 million": 1450000, or 1.45 against a gold counted in millions
    if kind == "phrase":
        answer = phrase_expression(answer) or ""  # no expression: no answer (below)
    elif kind == "boxed" and (words := number_in_words(answer, whole=True)) is not None:
        answer = str(words[2])  # \boxed{six}
    listed = solution_list(answer) if kind != "number" and "=" not in gold else None
    if listed is not None:  # "x = 2 and x = -3" states the set {2, -3}, in any order; never its last value
        if _ORDERED.match(gold):  # math-verify takes a set for a tuple: (2, -3) is an ordered pair, not this set
            return None
        answer = ", ".join(listed[1])
    elif kind != "number" and "=" in answer and "=" not in gold:
        answer = answer.rsplit("=", 1)[1].strip()
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return None
    if kind == "number":
        return answer, kind
    answer = join_spaced_thousands(_SPACED_I.sub(r"\1i", _THIN_SPACE_THOUSANDS.sub("", answer)))
    interval = re.split(r"\\in(?![A-Za-z])", gold.strip("$ "))[-1].strip()  # "x \in [-2,7]" is an interval too
    if interval[:1] in "([" and interval[-1:] in ")]":
        answer = _interval(answer)
    if any(pattern.search(answer) and not pattern.search(gold) for pattern in (_HEDGE_WORDS, _UNEVALUATED)):
        return None  # a hedge, or two numbers and an operator, that the gold does not have
    return None if _is_numeric(gold) and _operations(answer) - _operations(gold) else (answer, kind)
