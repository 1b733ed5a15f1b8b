"""The documentation site as a reader sees it: the strict build passes, and the API reference shows no
cross-reference that did not resolve (mkdocstrings leaves `[name]` as text, which `--strict` does not catch)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def unresolved_references(html: str) -> list[str]:
    """`[name]` or `[]` left in the visible text of a page (code and preformatted blocks aside: `inverse[b]` there is
    Python). An unresolved `[`UPGRPOConfig`]` renders as `[<code>UPGRPOConfig</code>]`, so it shows as `[]` here.

    >>> unresolved_references("<p>see [<code>UPGRPOConfig</code>] and <code>first[u]</code></p>")
    ['see []']
    """
    html = re.sub(r"<(pre|code)\b[^>]*>.*?</\1>", "", html, flags=re.S)
    text = re.sub(r"<[^>]+>", "", html)
    return [text[max(0, m.start() - 40) : m.end()].strip() for m in re.finditer(r"\[\s*\]|\[[A-Za-z_][\w.]*\]", text)]


@pytest.mark.skipif(not (ROOT / "mkdocs.yml").exists(), reason="a checkout's docs")
def test_api_reference_has_no_unresolved_cross_reference(tmp_path):
    pytest.importorskip("mkdocs")
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    pages = sorted((site / "api").rglob("*.html"))
    assert pages, "no API pages were built"
    found = {str(p.relative_to(site)): refs for p in pages if (refs := unresolved_references(p.read_text()))}
    assert not found, f"unresolved cross-references in the API reference: {found}"
