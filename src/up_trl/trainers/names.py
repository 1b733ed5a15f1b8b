"""The objectives' names as the papers write them: UP-DAPO, UP-GSPO, UP-RLOO, ..., or the parent alone when
`up_mode="off"`, and UP's paper. Used by the model cards and `up-trl recipes` (no torch, no TRL import)."""

from __future__ import annotations

import textwrap

UP_PAPER = {
    "title": "UP: Unbounded Positive Asymmetric Optimization",
    "id": "2607.06987",
    # docstyle-ignore
    "citation": textwrap.dedent("""\
        @article{up2026,
            title        = {{UP: Unbounded Positive Asymmetric Optimization}},
            author       = {Fan, Chongyu and Liu, Pengfei and Huang, Jingjia and Liu, Sijia and Lin, Yi},
            year         = 2026,
            eprint       = {arXiv:2607.06987},
        }"""),
}


PARENT_NAMES: dict[str, str] = {"dr_grpo": "Dr.GRPO"}  # the others: the loss type in capitals (DAPO, BNPO, ...)


def with_up(parent: str, up_mode: str = "asymmetric", positive_min_prob: float | None = None) -> str:
    """The objective's name as a person writes it: UP-<parent> (with the rare clip when `positive_min_prob` is set),
    or the parent alone when `up_mode="off"`.

    >>> with_up("RLOO"), with_up("GRPO (async)", "off"), with_up("RLOO", "both")
    ('UP-RLOO', 'GRPO (async)', 'UP-RLOO (both signs)')
    """
    if up_mode == "off":
        return parent
    name = f"UP-{parent}" + (" (both signs)" if up_mode == "both" else "")
    return name if positive_min_prob is None else f"{name} with the rare clip (p_min {positive_min_prob:g})"


def objective_name(
    loss_type: str, importance_sampling_level: str = "token", up_mode: str = "asymmetric", p_min: float | None = None
) -> str:
    """The objective in the papers' names: the parent is GSPO at sequence level, else the loss type's name.

    >>> objective_name("dapo"), objective_name("grpo", "sequence"), objective_name("dr_grpo", up_mode="off")
    ('UP-DAPO', 'UP-GSPO', 'Dr.GRPO')
    """
    parent = "GSPO" if importance_sampling_level == "sequence" else PARENT_NAMES.get(loss_type, loss_type.upper())
    return with_up(parent, up_mode, p_min)
