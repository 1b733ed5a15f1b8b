r"""Gold answers: a dataset's raw answer (GSM8K's "... #### 72", a worked solution's last \boxed{}, a number, a list)
as the short string math-verify parses as intended. `up_trl.data` re-exports these names.

    >>> gold_answer("9 * 2 = 18 dollars.\n#### 1,018"), gold_answer(r"is $\boxed{\frac{1}{2}}$"), gold_answer(27.0)
    ('1018', '$\\frac{1}{2}$', '27')
"""

from __future__ import annotations

import re
from typing import Any

from ..rewards.extraction import last_boxed

extract_boxed = last_boxed  # its old name here: the one \boxed parser, for replies and (bare=True) gold answers


def gold_answer(value: Any) -> str:
    r"""A raw gold answer as a string math-verify parses as intended (`""` when none): plain numbers stay bare,
    anything else is wrapped in `$...$` (bare, "3\sqrt{13}" parses as 3 and "6 - 5i" as 5)."""
    if isinstance(value, (list, tuple)):  # OlympiadBench: a list of final answers
        value = ", ".join(gold_answer(v).strip("$") for v in value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = "" if value is None else str(value).strip()
    if "####" in text:
        text = text.split("####")[-1].strip().replace(",", "")
    elif "\\boxed" in text or "\\fbox" in text:
        text = last_boxed(text, bare=True) or ""  # bare: a few MATH solutions write "$\boxed 2$"
    text = re.sub(r"(?<!\\)\$", "", text).strip()  # math delimiters; "\$18.90" keeps its dollar sign
    if scientific := re.fullmatch(r"(-?\d+(?:\.\d+)?)e([+-]?\d+)", text):  # Minerva writes 4.5e33
        text = f"{scientific.group(1)} \\times 10^{{{int(scientific.group(2))}}}"
    return text if not text or re.fullmatch(r"-?\d+(\.\d+)?", text) else f"${text}$"


def parse_level(level: Any) -> int | None:
    """MATH's "Level 3" (or 3) as 3; `None` for "Level ?" and missing levels."""
    found = re.search(r"\d+", str(level)) if level is not None else None
    return int(found.group(0)) if found else None
