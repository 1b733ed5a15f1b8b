"""`up/unscorable_frac`: the share of completions no reward function gave a finite value (none when a reward is a
model), from wrappers that return the rewards unchanged, logged through TRL's `log_metric` keyword (the in-process
async worker reads `ScorableRecorder.take`; TRL's vLLM worker scores in another process and logs none).

>>> funcs, recorder = record_scorable([lambda completions, **kwargs: [1.0, None, float("nan")]])
>>> funcs[0](completions=["a", "b", "c"])
[1.0, None, nan]
>>> recorder.take()
(2, 3)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
from trl.trainer.utils import get_callable_name, is_async_callable

METRIC = "up/unscorable_frac"
RECORDED = "__up_trl_recorded__"  # a wrapper's attribute holding the reward function it wraps


class ScorableRecorder:
    """Which completions got a finite reward, `note`d by each wrapper (thread-safe), counted when all `n_funcs` are."""

    def __init__(self, n_funcs: int, always_scorable: bool = False):
        self.n_funcs = n_funcs
        self.always_scorable = always_scorable  # a model reward scores every completion
        self._lock = threading.Lock()
        self._finite: dict[int, torch.Tensor] = {}  # reward function's index -> (completions,) bool, this batch
        self._counts: tuple[int, int] | None = None

    def note(self, index: int, rewards: Any, n_completions: int | None, log_metric: Callable | None) -> None:
        """Note the rewards function `index` returned. Never raises: a wrong count or value is TRL's to report."""
        try:
            finite = torch.isfinite(  # as TRL reads them: None is NaN, float32
                torch.tensor([float("nan") if r is None else r for r in rewards], dtype=torch.float32)
            )
        except (TypeError, ValueError, RuntimeError):
            return
        if finite.dim() != 1 or (n_completions is not None and len(finite) != n_completions):
            return
        with self._lock:
            if index in self._finite or any(len(f) != len(finite) for f in self._finite.values()):
                self._finite.clear()  # a new batch: the last one stopped before every function scored it
            self._finite[index] = finite
            if len(self._finite) < self.n_funcs:
                return
            scorable = torch.stack(list(self._finite.values())).any(dim=0) | self.always_scorable
            self._finite.clear()
            self._counts = counts = (int((~scorable).sum()), len(scorable))
        if log_metric is not None and counts[1] > 0:
            log_metric(METRIC, counts[0] / counts[1])

    def take(self) -> tuple[int, int] | None:
        """(unscorable, completions) of the last batch every wrapped function scored, once; None if none since."""
        with self._lock:
            counts, self._counts = self._counts, None
        return counts


def _recording(reward_func: Callable, index: int, recorder: ScorableRecorder) -> Callable:
    """`reward_func`, noting what it returns in `recorder`; async stays async, the name and signature are kept."""
    reward_func = getattr(reward_func, RECORDED, reward_func)  # a previous UP trainer's wrapper: wrap its function

    def noted(rewards, kwargs):
        if isinstance(rewards, Iterator):  # a generator, map(...): read once here, so TRL gets the values as a list
            rewards = list(rewards)
        completions = kwargs.get("completions")
        recorder.note(index, rewards, None if completions is None else len(completions), kwargs.get("log_metric"))
        return rewards

    if is_async_callable(reward_func):

        async def wrapper(*args, **kwargs):
            return noted(await reward_func(*args, **kwargs), kwargs)

    else:

        def wrapper(*args, **kwargs):
            return noted(reward_func(*args, **kwargs), kwargs)

    # __wrapped__ and the docstring, not a copy of a callable object's __dict__, which would go stale.
    functools.update_wrapper(wrapper, reward_func, updated=())
    wrapper.__name__ = get_callable_name(reward_func)  # TRL's name for it (a partial's function, a class's name)
    setattr(wrapper, RECORDED, reward_func)
    return wrapper


def record_scorable(reward_funcs: Any) -> tuple[Any, ScorableRecorder]:
    """(`reward_funcs` with each plain callable wrapped, models not, in the form given; their recorder)."""
    funcs = reward_funcs if isinstance(reward_funcs, list) else [] if reward_funcs is None else [reward_funcs]
    plain = [i for i, f in enumerate(funcs) if not isinstance(f, (str, torch.nn.Module))]  # not a model (TRL's)
    recorder = ScorableRecorder(len(plain), always_scorable=len(plain) < len(funcs))
    wrapped = [_recording(f, plain.index(i), recorder) if i in plain else f for i, f in enumerate(funcs)]
    return (wrapped if isinstance(reward_funcs, list) else wrapped[0] if wrapped else reward_funcs), recorder
