"""Griffe extension for the API reference: doctest examples in docstrings are shown as code.

up_trl's docstrings carry `>>>` examples (pytest runs them) in their running text, where Markdown would read `>>>`
as nested quotes and `a[i][j]` as a link. Each run of non-blank lines that starts with `>>>` becomes a ```pycon
block, at its own indentation; lines inside existing fences are left alone. The docstrings themselves are unchanged.
"""

from __future__ import annotations

from griffe import Extension, Object


def fence_doctests(text: str) -> str:
    """Wrap each doctest block of `text` in a ```pycon fence.

    >>> print(fence_doctests("Sum:\\n>>> 1 + 1\\n2\\n\\nDone."))
    Sum:
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    Done.
    """
    out: list[str] = []
    in_fence = in_doctest = False
    indent = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if in_doctest and not stripped:
            out.append(f"{indent}```")
            in_doctest = False
        if not in_doctest and stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and not in_doctest and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
            in_doctest = True
        out.append(line)
    if in_doctest:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(Extension):
    def on_object(self, *, obj: Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
