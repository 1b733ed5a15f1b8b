"""Registry: reward names for recipes and `--reward_funcs`, factories that take options, dotted import paths."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import closest_names
from . import functions

logger = logging.getLogger(__name__)

REWARD_FUNCS: dict[str, Callable] = {
    "math_accuracy": functions.math_accuracy_reward, "dapo_math": functions.dapo_math_reward,
    "boxed_format": functions.boxed_format_reward, "think_format": functions.think_format_reward,
}  # fmt: skip
REWARD_FACTORIES: dict[str, Callable[..., Callable]] = {
    "math_accuracy": functions.make_math_accuracy_reward,
    "dapo_math": lambda **options: functions.make_math_accuracy_reward(
        1.0, -1.0, **{"name": "dapo_math_reward", **options}
    ),
    "soft_overlong": functions.make_soft_overlong_punishment,
}
# TRL's rewards by their names, built as `trl grpo --reward_funcs` builds them (ours, soft_overlong, takes options).
TRL_REWARD_FUNCS: tuple[str, ...] = ("accuracy_reward", "reasoning_accuracy_reward", "think_format_reward",
                                     "get_soft_overlong_punishment")  # fmt: skip
TRL_FIXED_OPTIONS: dict[str, dict[str, int]] = {
    "get_soft_overlong_punishment": {"max_completion_len": 1280, "soft_punish_cache": 256},  # trl/scripts/grpo.py
}
_ACCURACY_OPTIONS = set(inspect.signature(functions.MathAccuracyReward).parameters) - {"name"}
_FACTORY_OPTIONS: dict[str, set[str]] = {
    "math_accuracy": _ACCURACY_OPTIONS,
    "dapo_math": _ACCURACY_OPTIONS - {"correct", "incorrect"},
    "soft_overlong": {"max_completion_length", "soft_punish_cache"},
}
# What TRL's trainer passes every reward function besides the dataset's columns, and the columns it does not pass
# (GRPOTrainer._calculate_rewards; pinned by tests/test_same_as_trl_grpo.py::test_the_reward_kwargs_are_trls).
TRAINER_REWARD_KWARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)
COLUMNS_NOT_PASSED = ("prompt", "completion", "completion_ids")


def _import_reward(path: str) -> Callable:
    module_path, _, attr = path.rpartition(".")
    try:
        try:
            module = importlib.import_module(module_path)
        except ModuleNotFoundError:
            if os.getcwd() in sys.path:
                raise
            sys.path.insert(0, os.getcwd())  # as `trl grpo` does: local files next to the recipe
            module = importlib.import_module(module_path)
        func = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"Could not load reward function {path!r}: {exc}. {_known()}") from exc
    if not callable(func):
        raise ValueError(f"{path!r} is a {type(func).__name__}, not a reward function (a callable).")
    return func


def _known() -> str:
    names = sorted(set(REWARD_FUNCS) | set(REWARD_FACTORIES))
    return (
        f"Known names: {', '.join(names)}; TRL's {', '.join(TRL_REWARD_FUNCS)}; or a dotted import path such as "
        "'my_pkg.my_module.my_reward'."
    )


def get_reward_funcs(names: Sequence[str], **options: Any) -> list[Callable]:
    """Rewards from our names, TRL's or dotted import paths; `options` go to the factories whose signatures name them.

    >>> [f.__name__ for f in get_reward_funcs(["math_accuracy", "up_trl.rewards.boxed_format_reward"])]
    ['math_accuracy_reward', 'boxed_format_reward']
    """
    if isinstance(names, str):
        names = [names]
    funcs, used = [], set()
    for name in names:
        kwargs = {k: v for k, v in options.items() if k in _FACTORY_OPTIONS.get(name, ())}
        used |= set(kwargs)
        if name in REWARD_FUNCS and not kwargs:
            funcs.append(REWARD_FUNCS[name])
        elif name in REWARD_FACTORIES:
            try:
                funcs.append(REWARD_FACTORIES[name](**kwargs))
            except TypeError as exc:
                needed = ", ".join(f"{k}=..." for k in sorted(_FACTORY_OPTIONS[name]))
                raise ValueError(f"Reward {name!r} needs options: get_reward_funcs([...], {needed}) ({exc}).") from exc
        elif name in TRL_REWARD_FUNCS:
            func = _import_reward(f"trl.rewards.{name}")
            funcs.append(func(**TRL_FIXED_OPTIONS[name]) if name in TRL_FIXED_OPTIONS else func)
        elif "." in name:
            funcs.append(_import_reward(name))
        else:
            raise ValueError(f"Unknown reward function {name!r}. {_known()}")
    if unused := sorted(set(options) - used):
        logger.warning("get_reward_funcs: options %s are used by none of %s.", unused, list(names))
    return funcs


def check_reward_names(names: Sequence[str]) -> None:
    """A one-line ValueError naming the closest names for an unknown reward name, before anything is imported."""
    ours = sorted(set(REWARD_FUNCS) | set(REWARD_FACTORIES))
    for name in names:
        if name not in ours and name not in TRL_REWARD_FUNCS and "." not in name:
            raise ValueError(
                f"--reward_funcs {name}: no such reward{closest_names(name, [*ours, *TRL_REWARD_FUNCS])}; "
                f"the names are {', '.join(ours)}, TRL's {', '.join(TRL_REWARD_FUNCS)}, or a dotted import path such "
                "as my_rewards.my_reward."
            )


def columns_needed(func: Callable) -> list[str]:
    """The dataset columns a reward cannot do without: our accuracy rewards' `solution_column`, else the parameters
    its signature names without a default beyond what the trainer passes (TRL's `accuracy_reward`: `solution`).

    >>> columns_needed(lambda completions, target, **kw: []), columns_needed(REWARD_FUNCS["math_accuracy"])
    (['target'], ['solution'])
    """
    if isinstance(getattr(func, "solution_column", None), str):
        return [func.solution_column]
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin or a model: nothing to read
        return []
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    needed = [p.name for p in parameters if p.default is p.empty and p.kind in keyword]
    return [name for name in needed if name not in TRAINER_REWARD_KWARGS]


def check_reward_columns(
    names: Sequence[str], funcs: Sequence[Callable], columns: Sequence[str], split: str = "training"
) -> None:
    """A one-line ValueError for the first reward that needs a column the training set lacks: TRL's trainer raises
    a TypeError at the first scoring, after the model loaded and generated [test_same_as_trl_grpo reward_columns]."""
    passed = [column for column in columns if column not in COLUMNS_NOT_PASSED]
    for name, func in zip(names, funcs, strict=True):
        if missing := [column for column in columns_needed(func) if column not in passed]:
            gold = ' (the gold answer: map yours with --column_mapping \'{"<column>": "answer"}\')'
            raise ValueError(
                f"--reward_funcs {name} reads the column {missing[0]!r}, which the {split} set does not pass to "
                f"rewards; its columns are {list(columns)}{gold if missing[0] == 'solution' else ''}: add it, or "
                "name rewards that need only what it has."
            )
