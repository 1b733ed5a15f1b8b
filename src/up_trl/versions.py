"""The TRL contract, visible at run time: the trl and transformers versions up-trl is tested with, and one warning at
trainer start when the installed ones are outside that range.

The UP trainers override private TRL methods, pinned whole by `tests/test_trl_pins.py` for these versions only
(docs/maintaining.md, "Contract pins"). Another version may have changed a pinned method under us: training then
still runs, but nothing has checked that UP's term is still applied as the parent's loss is. `TESTED` is written
once here; `tests/test_versions.py` checks that it agrees with `pyproject.toml`'s dependency ranges.

    >>> untested_versions({"trl": "1.16.0", "transformers": "5.24.0"})
    {}
    >>> untested_versions({"trl": "1.17.0", "transformers": "5.24.3"})
    {'trl': '1.17.0'}
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion
from transformers.utils import logging

logger = logging.get_logger(__name__)

# The ranges the contract pins were taken on, as pyproject.toml writes them.
TESTED: dict[str, str] = {"trl": ">=1.16.0,<1.17", "transformers": ">=5.24.0,<5.25"}
HOW_TO_CHECK = "pytest tests/test_trl_pins.py"


def installed_versions() -> dict[str, str]:
    """The installed version of each package in `TESTED` ("not installed" when it is not)."""
    found = {}
    for name in TESTED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def untested_versions(installed: Mapping[str, str] | None = None) -> dict[str, str]:
    """The packages of `TESTED` whose installed version (default: `installed_versions()`) is outside its range."""
    installed = installed_versions() if installed is None else installed
    untested = {}
    for name, spec in TESTED.items():
        found = installed.get(name, "not installed")
        try:
            inside = SpecifierSet(spec).contains(found, prereleases=True)
        except InvalidVersion:  # "not installed", or a version packaging cannot parse
            inside = False
        if not inside:
            untested[name] = found
    return untested


def untested_versions_message(installed: Mapping[str, str] | None = None) -> str | None:
    """The warning for versions outside `TESTED`, naming installed and tested versions; None when all are tested."""
    untested = untested_versions(installed)
    if not untested:
        return None
    found = ", ".join(f"{name} {value}" for name, value in untested.items())
    tested = ", ".join(f"{name}{spec}" for name, spec in TESTED.items())
    return (
        f"up-trl: installed {found}, but up-trl is tested with {tested}. The UP trainers override private TRL "
        f"methods, pinned for the tested versions only: check this installation with `{HOW_TO_CHECK}` in an up-trl "
        f"checkout (docs/maintaining.md, 'Raising the TRL pin'), or install the tested versions."
    )


def warn_if_untested_versions(main_process: bool = True) -> str | None:
    """At trainer start: log the warning once (on the main process only), and return it (None when all tested)."""
    message = untested_versions_message()
    if message is not None and main_process:
        logger.warning_once(message)
    return message
