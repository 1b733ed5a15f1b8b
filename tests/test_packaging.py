"""pyproject.toml asks only for extras that exist as spelt, all the way down (`pip install -e .` used to warn
`math-verify 0.9.0 does not provide the extra 'antlr4_13_2'`: pip 23 compares extras as written), and the LaTeX
parser math-verify needs runs on the ANTLR runtime pip chose."""

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")
ROOT = Path(__file__).resolve().parents[1]


def requirements_of_extra(dist_name: str, extra: str) -> list[Requirement]:
    """What installing `dist_name[extra]` adds, from the installed distribution's metadata."""
    found = []
    for line in distribution(dist_name).requires or []:
        requirement = Requirement(line)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            if not requirement.marker.evaluate({"extra": ""}):  # only under this extra
                found.append(requirement)
    return found


def unprovided_extras(requirement: Requirement, seen: set) -> list[str]:
    """'name[extra]' for every extra, here or in what it pulls, that the installed distribution does not list
    verbatim (distributions that are not installed here are skipped)."""
    missing = []
    try:
        provided = distribution(requirement.name).metadata.get_all("Provides-Extra") or []
    except PackageNotFoundError:
        return []
    for extra in sorted(requirement.extras):
        if (requirement.name, extra) in seen:
            continue
        seen.add((requirement.name, extra))
        if extra not in provided:
            missing.append(f"{requirement.name}[{extra}] (provides {provided})")
            continue
        for inner in requirements_of_extra(requirement.name, extra):
            missing += unprovided_extras(inner, seen)
    return missing


def test_every_extra_asked_for_is_provided_as_spelt():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    seen: set = set()
    missing = [m for line in lines for m in unprovided_extras(Requirement(line), seen)]
    assert not missing, missing
    assert any(Requirement(line).name == "math-verify" for line in project["dependencies"])  # still a dependency


def test_the_latex_parser_runs_on_the_antlr_runtime_installed():
    """No pin of our own: latex2sympy2_extended asks for an ANTLR runtime in the range its parsers are generated
    for (4.9.3 to 4.13.2; the oldest stack runs 4.9.3, the default install the newest), and math-verify's LaTeX
    parser works on the one installed here."""
    from math_verify import parse, verify

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [line for line in project["dependencies"] if line.startswith("antlr4")]
    assert Requirement("antlr4-python3-runtime>=4.9.3,<=4.13.2").specifier.contains(
        distribution("antlr4-python3-runtime").version
    )
    assert verify(parse("$\\frac{3}{6}$"), parse("$0.5$")) and not verify(parse("$\\sqrt{4}$"), parse("$3$"))


def test_the_github_workflow_runs_ci_run_on_push_and_pull_request():
    """What a contributor's push runs is `.ci/run`, the command this repository's CI is, with torch's CPU index
    (else `pip install torch==2.13.0` pulls the CUDA build)."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert set(triggers) == {"push", "pull_request"}
    (job,) = workflow["jobs"].values()
    assert job["steps"][-1]["run"] == ".ci/run" and (ROOT / ".ci" / "run").stat().st_mode & 0o111
    assert "download.pytorch.org/whl/cpu" in job["env"]["PIP_EXTRA_INDEX_URL"]
