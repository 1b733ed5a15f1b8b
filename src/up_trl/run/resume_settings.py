"""A resumed run trains with its own learning rate, weight decay and Adam settings: transformers restores the
checkpoint's with the optimizer state, so a resume with a lower `--learning_rate` trained at the old one. Held by
behavioural tests listed in `tests/trl_pins.json` ('rollout checkpoint' behaviours: a changed learning rate applied).
"""

from __future__ import annotations

# The hyperparameters of a torch optimizer's parameter group that come from the run's arguments.
SETTINGS = ("initial_lr", "weight_decay", "betas", "eps")


def apply_settings(optimizer, scheduler, groups: list[dict], base_lrs: list[float] | None) -> None:
    """Give the loaded `optimizer` and `scheduler` the run's settings read before the load (each parameter group's
    `SETTINGS` and lr, the scheduler's base rates), the current rate scaled by new base / saved base.

    >>> import torch
    >>> p = torch.nn.Parameter(torch.zeros(1)); opt = torch.optim.AdamW([p], lr=0.01)
    >>> sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5)
    >>> groups, bases = [{"initial_lr": 0.001, "lr": 0.0005, "weight_decay": 0.1, "betas": (0.8, 0.9)}], [0.001]
    >>> apply_settings(opt, sched, groups, bases)
    >>> [round(opt.param_groups[0][k], 6) for k in ("lr", "initial_lr", "weight_decay")], sched.base_lrs
    ([0.0005, 0.001, 0.1], [0.001])
    """
    if len(groups) != len(optimizer.param_groups):  # another layout of parameters: nothing to match them by
        return
    saved_bases = list(getattr(scheduler, "base_lrs", None) or [])
    for k, (group, fresh) in enumerate(zip(optimizer.param_groups, groups)):
        saved = group.get("initial_lr") or (saved_bases[k] if k < len(saved_bases) else None)
        new = base_lrs[k] if base_lrs is not None and k < len(base_lrs) else fresh.get("initial_lr")
        if saved and new is not None and new != saved:  # unchanged: left as loaded, bit for bit
            group["lr"] = group["lr"] * new / saved
        group.update({key: fresh[key] for key in SETTINGS if key in fresh})
        if new is not None and "initial_lr" in group:
            group["initial_lr"] = new
    if base_lrs is not None and saved_bases and list(base_lrs) != saved_bases:
        scheduler.base_lrs = list(base_lrs)
        scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


class ResumeSettingsMixin:
    """For a Trainer subclass: on resume, this run's optimizer settings win over the checkpoint's."""

    def _load_optimizer_and_scheduler(self, checkpoint):
        if checkpoint is not None:  # what this run built
            groups = [{k: g[k] for k in (*SETTINGS, "lr") if k in g} for g in self.optimizer.param_groups]
            base_lrs = list(getattr(self.lr_scheduler, "base_lrs", None) or []) or None
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None and not getattr(self, "is_deepspeed_enabled", False):
            apply_settings(self.optimizer, self.lr_scheduler, groups, base_lrs)
