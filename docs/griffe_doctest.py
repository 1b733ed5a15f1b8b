"""Griffe extension for the API reference: doctest examples in docstrings are shown as code.

up_trl's docstrings carry `>>>` examples (pytest runs them) in their running text. Where such a block starts at the
docstring's margin, Markdown would read `>>>` as nested quotes and `a[i][j]` as a link: each run of non-blank lines
starting with `>>>` there, or at the start of an `Example:` section (which griffe renders as a note), becomes a
```pycon block. Other indented examples are already code to Markdown (an indented block) and are left alone, as are
lines inside fences. The docstrings themselves are unchanged.
"""

from __future__ import annotations

import re

from griffe import Extension, Object

SECTION = re.compile(r"^\s*Examples?:\s*$")


def fence_doctests(text: str) -> str:
    """Wrap each doctest block of `text` that starts at the margin, or opens an `Example:` section, in a ```pycon
    fence at its own indentation, with blank lines around it."""
    out: list[str] = []
    in_fence = in_doctest = False
    indent = ""
    for line in text.splitlines():
        if in_doctest and (not line.strip() or not line.startswith(indent) or line[len(indent)].isspace()):
            out += [f"{indent}```", ""]
            in_doctest = False
        stripped = line.lstrip()
        previous = next((p for p in reversed(out) if p.strip()), "")
        if not in_doctest and stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and not in_doctest and stripped.startswith(">>>"):
            if line == stripped or SECTION.match(previous):
                indent = line[: len(line) - len(stripped)]
                out += ([""] if out and out[-1].strip() and not SECTION.match(out[-1]) else []) + [f"{indent}```pycon"]
                in_doctest = True
        out.append(line)
    if in_doctest:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(Extension):
    def on_object(self, *, obj: Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
