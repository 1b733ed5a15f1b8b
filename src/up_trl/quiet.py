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
