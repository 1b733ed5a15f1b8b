"""What CI tested, visible at run time: the version ranges of up-trl's dependencies that CI runs the tests on, and
one warning at trainer start naming any installed version outside them.

`pyproject.toml` bounds each dependency below by the oldest version CI tests (`.ci/stacks/oldest.txt` pins them all)
and leaves it open above, except trl: the UP trainers subclass private TRL methods, pinned whole by
`tests/test_trl_pins.py` for trl 1.16 only. So a newer transformers or accelerate installs, and training runs on it;
`TESTED` says how far CI has gone (up to the newest release it installed, `make install`), and the warning says when
this installation is past that. `tests/test_versions.py` checks that `TESTED`'s lower bounds are pyproject.toml's
and the oldest stack's.

    >>> untested_versions({"trl": "1.16.0", "transformers": "5.24.0"})
    {}
    >>> untested_versions({"trl": "1.17.0", "transformers": "5.25.0", "deepspeed": "not installed"})
    {'trl': '1.17.0', 'transformers': '5.25.0'}
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion
from transformers.utils import logging

logger = logging.get_logger(__name__)

# The ranges CI ran: from the oldest stack's pins to the minor release after the newest one `make install` got.
TESTED: dict[str, str] = {
    "trl": ">=1.16.0,<1.17",
    "transformers": ">=5.17.0,<5.25",
    "accelerate": ">=1.13.0,<1.17",
    "datasets": ">=4.8.4,<5.3",
    "peft": ">=0.18.0,<0.22",
    "math-verify": ">=0.9.0,<0.10",
    "deepspeed": ">=0.18.6,<0.20",  # the extra `deepspeed`: not installed is not untested
}
OPTIONAL = ("deepspeed",)
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
    """The packages of `installed` (name -> version; default: `installed_versions()`) whose version is outside
    `TESTED`'s range; an optional one that is not installed is not listed."""
    installed = installed_versions() if installed is None else installed
    untested = {}
    for name, found in installed.items():
        spec = TESTED[name]
        if found == "not installed" and name in OPTIONAL:
            continue
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
    tested = ", ".join(f"{name}{TESTED[name]}" for name in untested)
    message = f"up-trl: installed {found}, outside what up-trl's CI tests ({tested}): training runs, untested."
    if "trl" in untested:
        message += (
            f" The UP trainers override private TRL methods, pinned for trl{TESTED['trl']} only: check this trl with "
            f"`{HOW_TO_CHECK}` in an up-trl checkout (docs/maintaining.md, 'Raising the TRL pin'), or install a "
            "tested one."
        )
    return message


def warn_if_untested_versions(main_process: bool = True) -> str | None:
    """At trainer start: log the warning once (on the main process only), and return it (None when all tested)."""
    message = untested_versions_message()
    if message is not None and main_process:
        logger.warning_once(message)
    return message
