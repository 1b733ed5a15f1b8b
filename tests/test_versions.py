"""Dependencies: one warning outside the declared ranges (versions monkeypatched); extras exist as spelt; math-verify's
LaTeX parser runs on pip's ANTLR runtime."""

import inspect
import logging
from importlib.metadata import PackageNotFoundError, distribution

import pytest
import yaml
from conftest import ROOT
from math_verify import parse, verify
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import up_trl.run.job
from up_trl import versions
from up_trl.trainers.shared import UPTrainerMixin

tomllib = pytest.importorskip("tomllib")


def installed(monkeypatch, **found):
    """Pretend these versions are installed, the others of TESTED at their lower bounds (None: not installed)."""
    found = {name: lower_bound(SpecifierSet(spec)) for name, spec in versions.TESTED.items()} | found

    def version(name):
        if found.get(name) is None:
            raise versions.PackageNotFoundError(name)
        return found[name]

    monkeypatch.setattr(versions, "version", version)


def lower_bound(spec: SpecifierSet) -> str:
    (bound,) = [s.version for s in spec if s.operator == ">="]
    return bound


def test_the_tested_ranges_start_at_pyprojects_lower_bounds_and_the_oldest_stack():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]  # the extras users install (not dev and docs: tools, pinned)
    lines = project["dependencies"] + [d for name in ("offline", "deepspeed", "vllm") for d in extras[name]]
    ranges = {Requirement(line).name: Requirement(line).specifier for line in lines}
    oldest = {
        Requirement(line).name: str(Requirement(line).specifier).removeprefix("==")
        for line in (ROOT / ".ci" / "stacks" / "oldest.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for name, spec in versions.TESTED.items():  # read from the installed metadata: pyproject.toml's, not a copy
        assert SpecifierSet(spec) == ranges[name], name
        assert lower_bound(SpecifierSet(spec)) == oldest[name], name
    assert set(versions.TESTED) == {Requirement(line).name for line in project["dependencies"]} | {"gguf", "deepspeed"}
    for name, spec in ranges.items():  # an upper bound only where we rely on internals: trl
        uppers = [s for s in spec if s.operator in ("<", "<=", "==", "~=")]
        assert not uppers or name in ("trl", "antlr4-python3-runtime"), f"{name}{spec}"
        assert name in oldest, f"{name}'s lower bound is not pinned in .ci/stacks/oldest.txt"
        floor = [s.version for s in spec if s.operator in (">=", "==")]
        assert floor and Version(floor[0]) == Version(oldest[name]), (
            f"{name}{spec}: .ci/stacks/oldest.txt pins {oldest[name]}"
        )
    assert SpecifierSet(versions.TESTED["trl"]) == ranges["trl"]


@pytest.mark.parametrize(("trl", "transformers", "untested"), [
    pytest.param("1.16.0", "5.24.0", {}, id="pinned"),
    pytest.param("1.16.3", "5.24.9", {}, id="patch_releases"),
    pytest.param("1.17.0", "5.24.0", {"trl": "1.17.0"}, id="newer_trl"),
    pytest.param("1.15.2", "5.16.0", {"trl": "1.15.2", "transformers": "5.16.0"}, id="both_outside"),
    pytest.param("1.16.0", "5.25.0", {}, id="a_newer_transformers_than_the_last_ci_run"),
    pytest.param("1.16.0", "6.0.0", {}, id="a_major_release_of_an_unpinned_dependency"),
    pytest.param("1.16.0", "5.16.1", {"transformers": "5.16.1"}, id="older_transformers"),
    pytest.param("1.17.0rc1", "5.24.0", {"trl": "1.17.0rc1"}, id="next_release_candidate"),
    pytest.param("1.16.0", None, {"transformers": "not installed"}, id="not_installed"),
])  # fmt: skip
def test_untested_versions(monkeypatch, trl, transformers, untested):
    installed(monkeypatch, trl=trl, transformers=transformers)
    assert versions.untested_versions() == untested
    assert (versions.untested_versions_message() is None) == (not untested)


def test_one_warning_names_installed_and_tested_versions_and_the_check(monkeypatch, caplog):
    installed(monkeypatch, trl="1.17.2", transformers="5.24.0")
    with caplog.at_level(logging.WARNING, logger="up_trl.versions"):
        message = versions.warn_if_untested_versions()
        versions.warn_if_untested_versions()  # a second trainer in the same process: not logged again
    assert [record.getMessage() for record in caplog.records] == [message]
    assert "installed trl 1.17.2" in message and "transformers" not in message
    assert f"trl{SpecifierSet('>=1.16.0,<1.17')}" in message and "pytest tests/test_trl_pins.py" in message


def test_an_older_transformers_is_named_without_the_trl_check(monkeypatch):
    installed(monkeypatch, transformers="5.16.0", deepspeed=None)  # the extra deepspeed not installed: not named
    message = versions.untested_versions_message()
    assert message.startswith("up-trl: installed transformers 5.16.0, outside what up-trl's CI tests")
    assert f"transformers{versions.TESTED['transformers']}" in message and "\n" not in message
    assert "deepspeed" not in message and "test_trl_pins" not in message


def test_no_warning_on_tested_versions_nor_off_the_main_process(monkeypatch, caplog):
    with caplog.at_level(logging.WARNING, logger="up_trl.versions"):
        installed(monkeypatch, trl="1.16.1", transformers="5.25.0", deepspeed=None)
        assert versions.warn_if_untested_versions() is None
        installed(monkeypatch, trl="1.18.0", transformers="5.24.1")
        assert "trl 1.18.0" in versions.warn_if_untested_versions(main_process=False)
    assert caplog.records == []


def test_up_trl_train_checks_at_start_and_the_trainers_do_not():
    """`up-trl train` checks the versions first; the trainers check none."""
    assert "warn_if_untested_versions(" in inspect.getsource(up_trl.run.job.run_job)
    assert "versions" not in inspect.getsource(UPTrainerMixin)


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
    """'name[extra]' for every extra, here or pulled in, that its installed distribution does not list."""
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
    """No ANTLR pin of our own: math-verify's LaTeX parser works on the runtime installed here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [line for line in project["dependencies"] if line.startswith("antlr4")]
    assert Requirement("antlr4-python3-runtime>=4.9.3,<=4.13.2").specifier.contains(
        distribution("antlr4-python3-runtime").version
    )
    assert verify(parse("$\\frac{3}{6}$"), parse("$0.5$")) and not verify(parse("$\\sqrt{4}$"), parse("$3$"))


def test_the_github_workflow_runs_ci_run_on_push_and_pull_request():
    """A push runs `.ci/run`, with torch's CPU index."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert set(triggers) == {"push", "pull_request"}
    (job,) = workflow["jobs"].values()
    assert job["steps"][-1]["run"] == ".ci/run" and (ROOT / ".ci" / "run").stat().st_mode & 0o111
    assert "download.pytorch.org/whl/cpu" in job["env"]["PIP_EXTRA_INDEX_URL"]
