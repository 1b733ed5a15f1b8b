"""The reward workers' memory cap: relative to what a worker inherits from its trainer, so a trainer with a large
address space (a CUDA process reserves tens of GiB) still gets its answers verified."""

from __future__ import annotations

import mmap
import os
import sys

import pytest

from up_trl.rewards import make_math_accuracy_reward
from up_trl.rewards import pool as reward_pool

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the cap reads /proc/self/statm (Linux)")

GIB = 1 << 30
CAPPED, NOT_CAPPED = 1, 0  # what the probe returns: read as a reward of 1.0 or 0.0


@pytest.fixture
def large_trainer():
    """8 GiB of address space reserved, none of it memory (no access, no commit): what CUDA does at a larger scale."""
    reservation = _reserve(8 * GIB)
    yield
    reservation.close()


def test_workers_of_a_large_trainer_verify_answers(large_trainer, fresh_pools):
    """A flat 4 GiB cap failed every allocation in such a worker, and every gold read as unparseable (None)."""
    completions = [rf"\boxed{{\frac{{{i}}}{{{i + 1}}}}}" for i in range(1, 9)] + [r"\boxed{\sqrt{2}+\sqrt{3}}"]
    solutions = [rf"\frac{{{i}}}{{{i + 1}}}" for i in range(1, 9)] + [r"\sqrt{3}+\sqrt{2}"]
    reward = make_math_accuracy_reward(num_workers=1)
    assert reward(completions, solution=solutions) == [1.0] * 9
    assert reward_pool._POOLS and os.getpid() not in reward_pool._UNAVAILABLE_IN, "scored in-process, not in workers"


def _reserve(size: int) -> mmap.mmap:
    """`size` bytes of address space, none of it memory (no access, private: no commit, whatever the RAM)."""
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)


def _probe(*_task, **_kwargs) -> int:
    """In a worker: room for 1 GiB more, none for the headroom and 1 GiB beyond it."""
    _reserve(GIB).close()
    try:
        _reserve(reward_pool.WORKER_MEMORY_HEADROOM + GIB).close()
    except (OSError, MemoryError):
        return CAPPED
    return NOT_CAPPED


def test_a_worker_may_grow_by_the_headroom_and_no_more(monkeypatch, large_trainer, fresh_pools):
    monkeypatch.setattr(reward_pool, "verify_answer", _probe)  # the forked workers inherit it
    reward = make_math_accuracy_reward(num_workers=1)
    assert reward([r"\boxed{1}"], solution=["1"]) == [1.0]
    assert reward_pool._POOLS and os.getpid() not in reward_pool._UNAVAILABLE_IN, "scored in-process, not in workers"
