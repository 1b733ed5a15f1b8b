"""What CI tested, visible at run time: the version ranges in up-trl's metadata (pyproject.toml: each lower bound is
CI's oldest stack; only trl has an upper bound), and one warning naming any installed version outside them.

    >>> ranges = {"trl": ">=1.16.0,<1.17", "transformers": ">=5.17.0"}
    >>> untested_versions({"trl": "1.16.0", "transformers": "5.25.0"}, ranges)
    {}
    >>> untested_versions({"trl": "1.17.0", "transformers": "5.16.0"}, ranges)
    {'trl': '1.17.0', 'transformers': '5.16.0'}
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from importlib.metadata import PackageNotFoundError, requires, version

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion
from transformers.utils import logging

logger = logging.get_logger(__name__)

OPTIONAL = ("deepspeed", "gguf")  # the extras that change what trains (`deepspeed`, `offline`): not installed is fine


def declared_ranges() -> dict[str, str]:
    """name -> the range up-trl's metadata declares, for its dependencies and `OPTIONAL` ({} when not installed)."""
    ranges: dict[str, str] = {}
    with suppress(PackageNotFoundError):
        for req in map(Requirement, requires("up-trl") or []):
            if req.marker is None or req.name in OPTIONAL:  # the dependencies, and the extras that change what trains
                ranges.setdefault(req.name, str(req.specifier))
    return ranges


TESTED: dict[str, str] = declared_ranges()


def _installed(name: str) -> str:
    with suppress(PackageNotFoundError):
        return version(name)
    return "not installed"


def untested_versions(
    installed: Mapping[str, str] | None = None, ranges: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The packages of `installed` (default: those installed) outside `ranges` (default `TESTED`), name -> version."""
    ranges = TESTED if ranges is None else ranges
    installed = {name: _installed(name) for name in ranges} if installed is None else installed
    untested = {}
    for name, found in installed.items():
        inside = found == "not installed" and name in OPTIONAL  # an optional one may be missing
        with suppress(InvalidVersion):  # "not installed", or a version packaging cannot parse: outside
            inside = inside or SpecifierSet(ranges[name]).contains(found, prereleases=True)
        if not inside:
            untested[name] = found
    return untested


def untested_versions_message(installed: Mapping[str, str] | None = None) -> str | None:
    """The warning for versions outside `TESTED`, naming installed and tested versions; None when all are tested."""
    if not (untested := untested_versions(installed)):
        return None
    found = ", ".join(f"{name} {value}" for name, value in untested.items())
    tested = ", ".join(f"{name}{TESTED[name]}" for name in untested)
    message = f"up-trl: installed {found}, outside what up-trl's CI tests ({tested}): training runs, untested."
    if "trl" in untested:
        message += (
            f" The UP trainers override private TRL methods, pinned for trl{TESTED['trl']} only: check this trl with "
            "`pytest tests/test_trl_pins.py` in an up-trl checkout (docs/maintaining.md, 'Raising the TRL pin'), or "
            "install a tested one."
        )
    return message


def warn_if_untested_versions(main_process: bool = True) -> str | None:
    """Log the warning once (on the main process only) and return it, None when all is tested: at a run's start."""
    if (message := untested_versions_message()) is not None and main_process:
        logger.warning_once(message)
    return message
