"""Warnings a user cannot act on, filtered by their exact text (imports nothing heavy): transformers 5's
FutureWarnings for the `gradient_checkpointing` names that TRL 1.16 itself calls in `trl/models/utils.py`
(`unwrap_model_for_generation`), printed at the first generation of every run. `up-trl train` and `up-trl eval`
install the filter (the UP trainers do not: a library leaves a user's warnings as they are); any other warning is
left as it is. The filter matches the text, so the same warning from a user's own call of those names in that
process is hidden too."""

from __future__ import annotations

import warnings

TRL_DEPRECATED_CALLS = (
    r"`(is_gradient_checkpointing|gradient_checkpointing_enable|gradient_checkpointing_disable)` is "
    r"deprecated and will be removed in v6"
)


def ignore_trl_deprecated_calls() -> None:
    """Ignore the FutureWarnings `TRL_DEPRECATED_CALLS` matches (raised for TRL's calls; by text, so for any)."""
    warnings.filterwarnings("ignore", message=TRL_DEPRECATED_CALLS, category=FutureWarning)


def silence_unactionable_warnings(deepspeed: bool) -> None:
    """Hide, by their exact text, two messages every CPU run of `up-trl train` and `up-trl eval` printed that a user
    cannot act on: `TRL_DEPRECATED_CALLS`, and DeepSpeed's `Setting accelerator to CPU ...`, logged when accelerate
    imports deepspeed only to probe for its engine class (`accelerate.utils.other.extract_model_from_parallel`);
    kept when DeepSpeed was asked for."""
    import logging

    ignore_trl_deprecated_calls()
    logger = logging.getLogger("DeepSpeed")
    if not deepspeed and not any(isinstance(f, _DropMessage) for f in logger.filters):  # once per process
        logger.addFilter(_DropMessage("Setting accelerator to CPU."))


class _DropMessage:
    """A logging filter that drops the records whose message starts with `text` (and only those)."""

    def __init__(self, text: str):
        self.text = text

    def filter(self, record) -> bool:
        return not str(record.msg).startswith(self.text)
