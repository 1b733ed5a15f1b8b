"""The TRL contract at run time: one warning at trainer start when trl or transformers is outside the tested range,
with the ranges written once (`up_trl.versions.TESTED`) and equal to pyproject.toml's. No trainer needed: the
installed versions are monkeypatched."""

import inspect
import logging
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from up_trl import versions
from up_trl.trainers.shared import UPTrainerMixin

tomllib = pytest.importorskip("tomllib")
ROOT = Path(__file__).resolve().parents[1]


def installed(monkeypatch, **found):
    """Pretend these versions are installed (a name given as None is not installed)."""

    def version(name):
        if found.get(name) is None:
            raise versions.PackageNotFoundError(name)
        return found[name]

    monkeypatch.setattr(versions, "version", version)


def test_the_tested_ranges_are_pyprojects():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    ranges = {Requirement(line).name: Requirement(line).specifier for line in dependencies}
    for name, spec in versions.TESTED.items():
        assert ranges[name] == SpecifierSet(spec), f"versions.TESTED[{name!r}] differs from pyproject.toml"


@pytest.mark.parametrize(
    ("trl", "transformers", "untested"),
    [
        pytest.param("1.16.0", "5.24.0", {}, id="pinned"),
        pytest.param("1.16.3", "5.24.9", {}, id="patch_releases"),
        pytest.param("1.17.0", "5.24.0", {"trl": "1.17.0"}, id="newer_trl"),
        pytest.param("1.15.2", "5.25.0", {"trl": "1.15.2", "transformers": "5.25.0"}, id="both_outside"),
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
    assert "installed trl 1.17.2" in message and "transformers" not in message.split("tested with")[0]
    assert "trl>=1.16.0,<1.17" in message and "transformers>=5.24.0,<5.25" in message
    assert "pytest tests/test_trl_pins.py" in message


def test_no_warning_on_tested_versions_nor_off_the_main_process(monkeypatch, caplog):
    with caplog.at_level(logging.WARNING, logger="up_trl.versions"):
        installed(monkeypatch, trl="1.16.1", transformers="5.24.1")
        assert versions.warn_if_untested_versions() is None
        installed(monkeypatch, trl="1.18.0", transformers="5.24.1")
        assert "trl 1.18.0" in versions.warn_if_untested_versions(main_process=False)
    assert caplog.records == []


def test_every_up_trainer_checks_at_start():
    """The UP trainers' shared init (`UPTrainerMixin._finish_up_init`, called by GRPO, RLOO and async GRPO) runs it."""
    assert "warn_if_untested_versions(" in inspect.getsource(UPTrainerMixin._finish_up_init)
