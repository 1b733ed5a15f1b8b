"""MkDocs hook: the site's home page is the repository's README.md itself, and links to files outside `docs/` work.

- README.md becomes the site's `index.md` (served from the file itself, not a copy in `docs/`).
- Every relative link in README.md and `docs/**/*.md` is read as GitHub reads it, relative to the file's place in the
  repository. A link into `docs/` is rewritten to that page; a link to another file of the repository (a figure
  under `benchmarks/results/`, a script, a recipe) is served in the site under `repo/<path>` with the file itself.
- A relative link to a path that does not exist, or to a folder, is an error (so `mkdocs build --strict` fails on
  it as it does on a broken link between pages): name a folder in a code span instead.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
SERVED = "repo"  # where files from outside docs/ appear in the site
# [text](target) or ![alt](target); a target ends at whitespace or ')'. Code spans and fences are left alone.
LINK = re.compile(r"(!?\[(?:[^\]\[]|\[[^\]]*\])*\]\()([^)\s]+)(\))")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]+`")


class RepoFile(File):
    """A repository file served as it is: a `.md` one too (a results table, a model card) is not a site page."""

    def is_documentation_page(self) -> bool:
        return False


def _is_relative(target: str) -> bool:
    return not re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.IGNORECASE)


def _repo_path(page: Path, target: str) -> tuple[str, str]:
    """(the target's path relative to the repository root, its '#anchor' or '')."""
    path, _, anchor = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(page.parent.relative_to(ROOT).as_posix(), path))
    return resolved, f"#{anchor}" if anchor else ""


def _targets(text: str):
    """The link targets of a markdown text, outside fenced blocks and code spans."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    return [m.group(2) for m in LINK.finditer(text)]


def _source_file(page_src_uri: str) -> Path:
    return README if page_src_uri == "index.md" else DOCS / page_src_uri


def on_files(files: Files, config) -> Files:
    if files.get_file_from_path("index.md") is not None:
        raise PluginError("docs/index.md must not exist: the home page is README.md (docs/hooks.py)")
    files.append(File.generated(config, "index.md", abs_src_path=str(README)))
    sources = [README, *sorted(DOCS.rglob("*.md"))]
    served = set()
    for source in sources:
        for target in _targets(source.read_text()):
            if not _is_relative(target):
                continue
            path, _ = _repo_path(source, target)
            if path.startswith("docs/") or path in served:
                continue
            full = ROOT / path
            if path.startswith("..") or not full.is_file():
                where = source.relative_to(ROOT)
                raise PluginError(f"{where}: link to {target!r}, which is no file of the repository (a folder?)")
            served.add(path)
            files.append(RepoFile.generated(config, f"{SERVED}/{path}", abs_src_path=str(full)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    source = _source_file(page.file.src_uri)
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(match: re.Match) -> str:
        target = match.group(2)
        if not _is_relative(target):
            return match.group(0)
        path, anchor = _repo_path(source, target)
        site_path = path[len("docs/") :] if path.startswith("docs/") else f"{SERVED}/{path}"
        relative = posixpath.relpath(site_path, here or ".")
        return f"{match.group(1)}{relative}{anchor}{match.group(3)}"

    # Rewrite outside fenced blocks only (a code span holds no markdown link, so it is left as it is).
    pieces, last = [], 0
    for fence in FENCE.finditer(markdown):
        pieces.append(LINK.sub(rewrite, markdown[last : fence.start()]))
        pieces.append(fence.group(0))
        last = fence.end()
    pieces.append(LINK.sub(rewrite, markdown[last:]))
    return "".join(pieces)
