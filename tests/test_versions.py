"""What CI tested, at run time: one warning when a dependency is outside the ranges up-trl declares
(`up_trl.versions.TESTED`, read from its metadata: pyproject.toml's), whose lower bounds are the oldest stack's. No
trainer needed: the installed versions are monkeypatched."""

import inspect
import logging
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from up_trl import versions
from up_trl.trainers.shared import UPTrainerMixin

tomllib = pytest.importorskip("tomllib")
ROOT = Path(__file__).resolve().parents[1]


def installed(monkeypatch, **found):
    """Pretend these versions are installed, the other packages of TESTED at their lower bounds (a name given as None
    is not installed)."""
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


@pytest.mark.parametrize(
    ("trl", "transformers", "untested"),
    [
        pytest.param("1.16.0", "5.24.0", {}, id="pinned"),
        pytest.param("1.16.3", "5.24.9", {}, id="patch_releases"),
        pytest.param("1.17.0", "5.24.0", {"trl": "1.17.0"}, id="newer_trl"),
        pytest.param("1.15.2", "5.16.0", {"trl": "1.15.2", "transformers": "5.16.0"}, id="both_outside"),
        pytest.param("1.16.0", "5.25.0", {}, id="a_newer_transformers_than_the_last_ci_run"),
        pytest.param("1.16.0", "6.0.0", {}, id="a_major_release_of_an_unpinned_dependency"),
        pytest.param("1.16.0", "5.16.1", {"transformers": "5.16.1"}, id="older_transformers"),
        pytest.param("1.17.0rc1", "5.24.0", {"trl": "1.17.0rc1"}, id="next_release_candidate"),
        pytest.param("1.16.0", None, {"transformers": "not installed"}, id="not_installed"),
    ],
)
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
    """`up-trl train` runs the check before it builds a trainer; the UP trainers, drop-ins, log only what concerns
    UP (their parent checks no versions)."""
    import up_trl.run.job

    assert "warn_if_untested_versions(" in inspect.getsource(up_trl.run.job.run_job)
    assert "versions" not in inspect.getsource(UPTrainerMixin)
