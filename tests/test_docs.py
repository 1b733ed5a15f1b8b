"""Every runnable ```python / ```bash block of README.md and docs/**/*.md runs here as written (CPU, offline),
unless the line before its fence is `<!-- not run: REASON -->`; a ```text block after `<!-- output -->` is what
the block before it prints. Python runs in an empty temporary folder, bash in the repository root. The README's
example runs with `max_steps` 4."""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, argv
from nbclient import NotebookClient
from safetensors.torch import load_file

from up_trl.trainers.grpo_trainer import UPGRPOTrainer
from up_trl.trainers.rloo_trainer import UPRLOOTrainer

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = ("python", "bash")
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->$")
OUTPUT = "<!-- output -->"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
       os.environ.get("PYTHONPATH")]))}  # fmt: skip


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    not_run: str | None  # the reason, when the block is only shown
    output: str | None = None  # the ```text block marked as its output

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of `page` at the start of a line, with its not-run reason and its marked output."""
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        match = re.match(r"^```(\w*)\s*$", lines[i])
        if not match:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = lines[i - 1] if i else ""
        reason = NOT_RUN.match(before)
        block = Block(page, i + 1, match.group(1), "\n".join(lines[i + 1 : end]) + "\n", reason and reason.group(1))
        if before == OUTPUT:
            runnable = [b for b in found if b.language in RUNNABLE and b.not_run is None]
            assert block.language == "text" and runnable, f"{block.id}: {OUTPUT} marks a ```text block after a run"
            runnable[-1].output = block.code
        found.append(block)
        i = end + 1
    return found


ALL = [block for page in PAGES for block in blocks(page)]
TO_RUN = [block for block in ALL if block.language in RUNNABLE and block.not_run is None]
README_EXAMPLE = next(block for block in TO_RUN if block.page.name == "README.md")


def run(block: Block, tmp_path: Path, timeout: int = 900) -> str:
    if block.language == "python":
        cmd, cwd = [sys.executable, "-c", block.code], tmp_path
    else:
        cmd, cwd = ["bash", "-euo", "pipefail", "-c", block.code], ROOT
    out = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{block.id} exited {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    return out.stdout


def test_every_block_is_runnable_or_says_why_not():
    """Code fences name their language; a not-run mark stands only before a runnable block."""
    assert len(TO_RUN) >= 4 and README_EXAMPLE.line < 60  # the example is on the README's first screen
    for block in ALL:
        assert block.language, f"{block.id}: a fence without a language (```python, ```bash, ```text, ...)"
        if block.not_run is not None:
            assert block.language in RUNNABLE, f"{block.id}: a not-run mark before a ```{block.language} block"
    lines = [(p, n, line) for p in PAGES for n, line in enumerate(p.read_text().splitlines(), 1)]
    marks = [f"{p.relative_to(ROOT)}:{n}" for p, n, line in lines if line.startswith("<!-- not run")]
    attached = [f"{b.page.relative_to(ROOT)}:{b.line - 1}" for b in ALL if b.not_run is not None]
    assert marks == attached, "a <!-- not run: REASON --> mark that is malformed or not right before a fence"


def _param(block: Block):
    """A block that runs a benchmark script takes the slow tier (CI runs it; `make test-fast` does not)."""
    return pytest.param(block, id=block.id, marks=pytest.mark.slow if "benchmarks/" in block.code else ())


@pytest.mark.parametrize("block", [_param(b) for b in TO_RUN if b is not README_EXAMPLE])
def test_block_runs_as_written(block, tmp_path):
    printed = run(block, tmp_path)
    if block.output is not None:
        assert printed == block.output


README_TEST_STEPS = 4  # the fewest that show two rollout batches, each with its off-policy second update


@pytest.mark.slow
def test_readme_example_runs(tmp_path):
    """The README's example, with fewer steps: it trains, prints rewards, writes TRL's card naming UP."""
    assert README_EXAMPLE.code.count("max_steps=10,") == 1 and "steps_per_generation=2," in README_EXAMPLE.code
    code = README_EXAMPLE.code.replace("max_steps=10,", f"max_steps={README_TEST_STEPS},")
    shortened = replace(README_EXAMPLE, code=code)
    printed = run(shortened, tmp_path, timeout=1800)  # a hang guard, not a speed check
    rewards = ast.literal_eval(printed.strip().splitlines()[-1])  # its last line prints the logged rewards
    assert len(rewards) == README_TEST_STEPS // 2 and all(0 <= r <= 1 for r in rewards), rewards
    out = re.search(r'output_dir="([^"]+)"', README_EXAMPLE.code).group(1)
    card = (tmp_path / out / "README.md").read_text()  # TRL's card, with UP's name and paper (as the README says)
    assert "This model was trained with UP-DAPO, a method" in card and "2607.06987" in card
    assert "None" not in card.split("## Citations")[1].split("```")[0]  # "Cite UP-DAPO as:", no placeholder
    assert "generated_from_trainer" in card and "arithmetic" in card


def test_readme_is_a_front_page():
    """Short, and its set-up commands are the ones CI runs."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert "make train" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_method_page_shows_the_override_as_it_is():
    """docs/method.md shows `UPGRPOTrainer._compute_loss` whole: the block must be the source, line for line."""
    source = textwrap.dedent(inspect.getsource(UPGRPOTrainer._compute_loss)).rstrip()
    shown = [b.code.rstrip() for b in blocks(ROOT / "docs" / "method.md") if b.code.startswith("def _compute_loss")]
    assert shown == [source]
    for method in (UPGRPOTrainer._compute_loss, UPRLOOTrainer._compute_loss):  # UP in one screen
        assert len(inspect.getsource(method).splitlines()) <= 25, method.__qualname__


def test_the_maintainers_map_names_every_module_once():
    """docs/maintaining.md's map: one line a module of src/up_trl, each once, each that exists."""
    text = (ROOT / "docs" / "maintaining.md").read_text()
    block = text.split("One line a module", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    listed, package = [], ""
    for line in block.splitlines():
        name = line.split()[0]
        if not line.startswith(" "):
            package = name if name.endswith("/") else ""
            if package:
                continue
        listed.append(package + name)
    modules = sorted(str(p.relative_to(ROOT / "src" / "up_trl")) for p in (ROOT / "src" / "up_trl").rglob("*.py"))
    packages_with_an_init_only = {m for m in modules if m.endswith("/__init__.py")} - set(listed)
    assert sorted(set(listed)) == sorted(listed), "a module listed twice"
    found = set(listed) | packages_with_an_init_only
    assert sorted(found) == modules, set(modules) ^ found


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


@pytest.mark.slow
def test_quickstart_script(tmp_path):
    cmd, env = [sys.executable, str(ROOT / "examples" / "quickstart.py")], {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "reward" in out.stdout and "s/step" in out.stdout
    # its own folder, never the main job's outputs/quickstart
    assert (tmp_path / "outputs" / "quickstart-example" / "model.safetensors").exists()
    assert not (tmp_path / "outputs" / "quickstart").exists()


def test_lora_example_trains_only_the_adapters(tmp_path):
    run = [sys.executable, str(ROOT / "examples" / "lora.py"), *argv("--max_steps 4")]
    out = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ,
                         "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert 0 < result["trainable_share"] < 0.5 and len(result["rewards"]) == 2
    adapter = load_file(tmp_path / "outputs" / "lora-example" / "adapter_model.safetensors")
    assert adapter and all("lora_" in name for name in adapter)  # the adapter alone was saved
    assert not (tmp_path / "outputs" / "lora-example" / "model.safetensors").exists()


@pytest.mark.slow
def test_notebook_runs_top_to_bottom(tmp_path):
    notebook = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "asymmetric: reward" in printed and "off: reward" in printed
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plot was drawn
