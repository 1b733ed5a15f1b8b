"""The worker pool: math-verify in pebble worker processes, each item bounded on its own (`item_timeout_s`), never
the call. In a worker's main thread math-verify's SIGALRM bound works, whichever trainer thread called; each process
has its own pool, stopped at exit (`shutdown_workers`)."""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing
import multiprocessing.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeoutError

from .verification import MATH_VERIFY_LOGGERS, MATH_VERIFY_TIMEOUT, TIMEOUT, verify_answer

logger = logging.getLogger(__name__)

ITEM_TIMEOUT_S = 10.0  # per item: math-verify's own bound is 3 s per parse and verify, so ~9 s for a hostile item
STARTUP_TIMEOUT_S = 60.0  # the first task of a new pool also waits for the workers to start and import math-verify
WORKER_MEMORY_HEADROOM = 4 << 30  # bytes a worker may map beyond what it inherits: one blow-up, not the machine
Task = tuple  # (pred, pred_kind, gold, gold_kind), pred None for "no answer"
_POOLS: dict[int, _Pool] = {}  # by worker count, each owned by the process that started it (`_Pool.pid`)
_POOLS_LOCK = threading.Lock()
_FINALIZER_PID: int | None = None  # the process that registered the finalizer in `_pool`
_UNAVAILABLE_IN: set[int] = set()  # pids where workers could not start: in-process from then on, warned once


class PoolUnavailable(Exception):
    """Worker processes cannot start here (not a RuntimeError: no broken pool); the caller scores in-process."""


def default_num_workers() -> int:
    """`UP_TRL_REWARD_WORKERS` if set (0: in-process), else min(2, CPU count)."""
    if value := os.environ.get("UP_TRL_REWARD_WORKERS", "").strip():
        try:
            return max(int(value), 0)
        except ValueError:
            raise ValueError(
                f"UP_TRL_REWARD_WORKERS={value!r}: set a number of worker processes, 0 for in-process"
            ) from None
    return min(2, os.cpu_count() or 1)


def _worker_init() -> None:
    logging.disable(logging.INFO)  # quiet workers; math-verify's timeout warnings still reach verify_answer's counter
    for name in MATH_VERIFY_LOGGERS:
        logging.getLogger(name).propagate = False
        logging.getLogger(name).setLevel(logging.WARNING)
    with contextlib.suppress(Exception):  # no `resource` module on Windows
        import resource

        if (limits := worker_address_space_limits()) is not None:  # a blow-up is a MemoryError, not the OOM killer
            resource.setrlimit(resource.RLIMIT_AS, limits)


def worker_address_space_limits() -> tuple[int, int] | None:
    """`RLIMIT_AS` for a worker: soft, what it inherited at fork plus `WORKER_MEMORY_HEADROOM` (or a lower soft limit
    already set), and the hard limit as it is.

    Relative, not absolute: a forked worker starts with its trainer's address space, which a CUDA process reserves
    by tens of GiB; a flat cap below that fails every allocation, and math-verify would read every answer as
    unparseable. None (no cap) where the size cannot be read (no /proc) or the cap would exceed the hard limit.
    """
    import resource

    try:
        with open("/proc/self/statm") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
    cap, (soft, hard) = size + WORKER_MEMORY_HEADROOM, resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and cap > hard:
        return None
    return (cap if soft == resource.RLIM_INFINITY else min(cap, soft)), hard


def _verify_in_worker(task: Task) -> int:
    timeout = MATH_VERIFY_TIMEOUT if os.name == "posix" else None  # on Windows math-verify would spawn per call
    return verify_answer(*task, timeout)


class _Pool:
    """A pebble `ProcessPool` owned by one process; rebuilt when pebble reports it broken."""

    def __init__(self, num_workers: int):
        import math_verify  # noqa: F401  (imported once here, so forked workers start warm)
        from pebble import ProcessPool

        self.pid = os.getpid()
        self.ready = False  # True once a task came back: from then on a queued item may wait behind others freely
        # fork on POSIX: a spawned worker re-imports __main__, re-running a script without a `__name__` guard
        context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
        self.pool = ProcessPool(max_workers=num_workers, initializer=_worker_init, context=context)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.stop()
            self.pool.join(timeout=5)


def _pool(num_workers: int, fresh: bool = False) -> _Pool:
    global _FINALIZER_PID
    with _POOLS_LOCK:
        pool = _POOLS.get(num_workers)
        if pool is not None and (fresh or pool.pid != os.getpid() or not pool.pool.active):
            if pool.pid == os.getpid():
                pool.close()
            pool = None
        if pool is None:
            try:
                pool = _POOLS[num_workers] = _Pool(num_workers)
            except (OSError, ValueError, ImportError) as exc:  # no fork, no pipes, no math-verify
                raise PoolUnavailable(f"cannot start worker processes: {exc}") from exc
            # a multiprocessing child runs no atexit and joins pebble's workers for ever: a finalizer runs before that
            if _FINALIZER_PID != os.getpid():
                _FINALIZER_PID = os.getpid()
                multiprocessing.util.Finalize(None, shutdown_workers, exitpriority=10)
        return pool


def _forget_pools_in_child() -> None:
    global _POOLS_LOCK
    _POOLS.clear()  # the parent's pool threads do not exist in a forked child; it starts its own pool on first use
    _POOLS_LOCK = threading.Lock()


def shutdown_workers() -> None:
    """Stop every math-verify worker process of this process (they restart on the next call). Runs at exit."""
    with _POOLS_LOCK:
        pools = [p for p in _POOLS.values() if p.pid == os.getpid()]
        _POOLS.clear()
    for pool in pools:
        pool.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_in_child)
atexit.register(shutdown_workers)


def _run(pool: _Pool, tasks: Sequence[Task], item_timeout_s: float, first_timeout_s: float) -> tuple[list[int], int]:
    """Outcomes of `tasks` on `pool` and the number of workers pebble replaced; RuntimeError for a broken pool."""
    from pebble import ProcessExpired

    futures = [pool.pool.schedule(_verify_in_worker, args=(tuple(t),), timeout=item_timeout_s) for t in tasks]
    outcomes, replaced = [], 0
    for i, future in enumerate(futures):
        try:
            outcomes.append(future.result(timeout=None if pool.ready or i else first_timeout_s))
            pool.ready = True
        except (FutureTimeoutError, ProcessExpired) as exc:
            if not future.done():  # the first task of a new pool got no answer at all: workers never started
                for f in futures:
                    f.cancel()
                raise PoolUnavailable(f"no worker answered within {first_timeout_s:.0f} s") from exc
            outcomes.append(TIMEOUT)  # pebble killed (or lost) this item's worker and started another
            replaced += 1
    return outcomes, replaced


def score_in_process(tasks: Sequence[Task]) -> list[int]:
    """Outcomes in this process: math-verify's SIGALRM bound only in the main thread, none elsewhere."""
    in_main = threading.current_thread() is threading.main_thread() and os.name == "posix"
    timeout = MATH_VERIFY_TIMEOUT if in_main else None
    if in_main:
        for name in MATH_VERIFY_LOGGERS:  # math-verify's timeout warnings must reach verify_answer's counter
            if logging.getLogger(name).getEffectiveLevel() > logging.WARNING:
                logging.getLogger(name).setLevel(logging.WARNING)
    else:
        for name in ("math_verify.parser", "math_verify.grader", "math_verify.utils"):
            logging.getLogger(name).setLevel(logging.ERROR)  # "Timeout is disabled" on every call otherwise
    return [verify_answer(*task, timeout) for task in tasks]


def score(
    tasks: Sequence[Task],
    num_workers: int | None = None,
    item_timeout_s: float = ITEM_TIMEOUT_S,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
) -> tuple[list[int], int]:
    """Outcomes of `tasks` and workers replaced; in-process for `num_workers=0` or when workers cannot start."""
    num_workers = default_num_workers() if num_workers is None else num_workers
    if num_workers > 0 and tasks and os.getpid() not in _UNAVAILABLE_IN:
        try:
            try:
                return _run(_pool(num_workers), tasks, item_timeout_s, startup_timeout_s)
            except RuntimeError as exc:  # BrokenProcessPool / "pool not running": a worker died outside a task
                logger.warning("math-verify worker pool broke (%s); starting a new one.", exc)
                return _run(_pool(num_workers, fresh=True), tasks, item_timeout_s, startup_timeout_s)
        except PoolUnavailable as exc:
            logger.warning("math-verify workers unavailable (%s); scoring in-process from now on.", exc)
            _UNAVAILABLE_IN.add(os.getpid())
    return score_in_process(tasks), 0


def verify_many(
    tasks: Sequence[Task], *, num_workers: int | None = None, item_timeout_s: float = ITEM_TIMEOUT_S
) -> list[int]:
    """One outcome per `(pred, pred_kind, gold, gold_kind)` task, each bounded by `item_timeout_s` (no anti-echo rule).

    >>> verify_many([("1/2", "boxed", "0.5", "number"), ("5 or 6", "phrase", "5", "number")], num_workers=0)
    [1, 0]
    """
    return score(list(tasks), num_workers, item_timeout_s)[0]
