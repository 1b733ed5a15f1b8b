"""Warnings a user cannot act on, filtered by their exact text (imports nothing heavy). `up-trl train` and `up-trl
eval` install the filter; the UP trainers do not (a library leaves a user's warnings as they are)."""

from __future__ import annotations

import logging
import warnings

# transformers 5's FutureWarnings for the names TRL 1.16 itself calls (`trl/models/utils.py`), at every run's first
# generation; matched by text, so a user's own call of those names is hidden too.
TRL_DEPRECATED_CALLS = (
    r"`(is_gradient_checkpointing|gradient_checkpointing_enable|gradient_checkpointing_disable)` is "
    r"deprecated and will be removed in v6"
)
CPU_NOTICE = "Setting accelerator to CPU."  # DeepSpeed's, when accelerate imports it only to probe for its engine


def _not_cpu_notice(record) -> bool:
    """A logging filter: drops the records whose message starts with `CPU_NOTICE`, and only those."""
    return not str(record.msg).startswith(CPU_NOTICE)


def silence_unactionable_warnings(deepspeed: bool) -> None:
    """Hide `TRL_DEPRECATED_CALLS`, and DeepSpeed's `CPU_NOTICE` unless DeepSpeed was asked for."""
    warnings.filterwarnings("ignore", message=TRL_DEPRECATED_CALLS, category=FutureWarning)
    logger = logging.getLogger("DeepSpeed")
    if not deepspeed and _not_cpu_notice not in logger.filters:  # once per process
        logger.addFilter(_not_cpu_notice)
