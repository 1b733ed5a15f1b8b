r"""Reward functions for math RL with TRL's `GRPOTrainer`: strict answer extraction, math-verify in worker processes.

Every reward has TRL's signature `fn(completions, **kwargs) -> list[float | None]`; `completions` are strings or
conversational lists (`[{"role": "assistant", "content": "..."}]`), and dataset columns arrive as keyword arguments
(the gold answer in `solution`). `None` means "skip this sample" (TRL turns it into NaN and ignores it).

    >>> math_accuracy_reward([r"so \boxed{\frac{1}{2}}", "It is 3."], solution=["0.5", "#### 4"])
    [1.0, 0.0]

Strict extraction (why: math-verify over a whole reply scores an echoed question, "... which is 71 + 88", as 159).
The prediction is, in order: the last non-empty \boxed{...}; else the text after the last explicit final-answer
phrase ("final answer is", "the answer is", "answer:", "####"); else the last number. A trailing "= X" is not a
phrase (the last number takes it anyway). An unevaluated sum or product of two numbers ("71 + 88") never scores
unless the gold answer has that shape too. Only that string is handed to `math_verify.parse` and `verify`.

Never raise, never stall: replies are cut to their last `max_chars` characters (the answer is at the end) and
parse + verify run in a few persistent worker processes (`python -c`, which loads only this file: no torch, no
fork of the trainer process, no re-import of your `__main__`, so no `if __name__ == "__main__"` guard is needed).
Inside a worker math-verify's own SIGALRM timeouts (1 s) work, because each worker runs in its main thread; the
parent also bounds each item (`item_timeout_s`) and each call (`timeout_s`), kills a worker that hangs or dies and
starts a new one. A timed-out item scores `incorrect` (0.0 by default; -1.0 for `dapo_math_reward`, so that a
reply which stalls the grader never beats a wrong one). Set `UP_TRL_REWARD_WORKERS=0` (or `num_workers=0`) to score
in-process where subprocesses are not allowed: there math-verify's timeouts only work in the main thread.

Metrics: inside `GRPOTrainer` the accuracy rewards log, through TRL's `log_metric`, the batch fractions
`rewards/<name>/skipped_gold_frac`, `rewards/<name>/no_answer_frac` and `rewards/<name>/timeout_frac`, and add
the columns `<name>/answer` and `<name>/gold` to the completions table (`log_extra`). Running totals live in
`reward.stats` (a `RewardStats`); a `TrainerCallback` can report them from `on_log`:

    logs["rewards/skipped_gold"] = math_accuracy_reward.stats.skipped_gold

Registry: `get_reward_funcs(["math_accuracy", "soft_overlong"], max_completion_length=256, soft_punish_cache=64)`;
names are the keys of `REWARD_FUNCS` and `REWARD_FACTORIES`, or dotted import paths as in `trl grpo --reward_funcs`.
"""

from __future__ import annotations

import atexit
import collections
import importlib
import inspect
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any

from trl.rewards import get_soft_overlong_punishment
from trl.rewards import think_format_reward as _trl_think_format_reward

logger = logging.getLogger(__name__)

__all__ = [
    "REWARD_FACTORIES",
    "REWARD_FUNCS",
    "MathAccuracyReward",
    "RewardStats",
    "boxed_format_reward",
    "completion_text",
    "dapo_math_reward",
    "extract_answer",
    "extract_gold",
    "get_reward_funcs",
    "last_boxed",
    "make_math_accuracy_reward",
    "make_soft_overlong_punishment",
    "math_accuracy_reward",
    "shutdown_workers",
    "think_format_reward",
]

MAX_CHARS = 4096  # a reply is cut to its last MAX_CHARS characters before any regex or parser sees it
MAX_ANSWER_CHARS = 512  # a longer "answer" is not an answer: scored wrong without parsing
MATH_VERIFY_TIMEOUT = 1  # seconds, math-verify's own SIGALRM bound for each parse and verify (whole seconds)
CORRECT, WRONG, GOLD_UNPARSEABLE, TIMEOUT = 1, 0, 2, 3  # verification outcomes

# ---------------------------------------------------------------------------------------------------------------------
# Answer extraction: pure string functions, bounded by MAX_CHARS.

_BOX_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\\[{}]|[{}]")
_PHRASE = re.compile(r"(?:final\s+answer(?:\s+is)?|\banswer\s+is|\banswer\s*:|####)\s*:?[ \t*]*(?P<ans>[^\n]*)", re.I)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_NUMBER = re.compile(r"(?:(?<![\w)}\].])-)?\d+(?:,\d{3})*(?:\.\d+)?(?:/\d+)?")
# Two numbers joined by an operator, e.g. "71 + 88", "12 \times 3": a calculation, not a value.
_UNEVALUATED = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*(?:[-+*×÷−]|\\times|\\cdot|\\div)\s*\d[\d,]*(?:\.\d+)?(?![\w.^(\\{])"
)


def completion_text(completion: Any, message: int = -1) -> str:
    """The text of one completion: a string, or the content of an assistant message (the last by default).

    Never raises: `None`, non-text content and malformed messages give `""`; content blocks are joined.

    >>> completion_text([{"role": "assistant", "content": "42"}]), completion_text(None)
    ('42', '')
    """
    try:
        if isinstance(completion, str):
            return completion
        if isinstance(completion, dict):
            completion = [completion]
        if isinstance(completion, (list, tuple)) and completion:
            messages = [m for m in completion if isinstance(m, dict)]
            assistant = [m for m in messages if m.get("role", "assistant") == "assistant"] or messages
            content = assistant[message].get("content") if assistant else None
            if isinstance(content, str):
                return content
            if isinstance(content, (list, tuple)):  # content blocks: [{"type": "text", "text": "..."}]
                return "".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
        if isinstance(completion, bytes):
            return completion.decode("utf-8", errors="replace")
    except Exception:  # a reward must not raise on a malformed completion
        pass
    return ""


def last_boxed(text: str) -> str | None:
    r"""Content of the last closed, non-empty `\boxed{...}` (or `\fbox{...}`), nested braces matched; else None.

    One pass over the brace tokens, so "{" * 5000 or an unclosed `\boxed{` cost linear time.

    >>> last_boxed(r"\boxed{1} then \boxed{\frac{1}{2}}"), last_boxed(r"\boxed{7"), last_boxed(r"\boxed{ }")
    ('\\frac{1}{2}', None, None)
    """
    stack: list[tuple[bool, int]] = []
    closed: list[tuple[int, int]] = []  # (start, end) of boxed contents, in closing order: the last closes last
    for match in _BOX_TOKENS.finditer(text):
        token = match.group()
        if len(token) == 2 and token[0] == "\\":  # \{ or \}: a literal brace
            continue
        if token[-1] == "{":
            stack.append((token != "{", match.end()))
        elif stack:
            is_box, start = stack.pop()
            if is_box:
                closed.append((start, match.start()))
    for start, end in reversed(closed):
        content = text[start:end].strip()
        if content:
            return content
    return None


def extract_answer(text: str, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    r"""The strict prediction of a reply as `(answer, kind)`, kind "boxed" | "phrase" | "number"; None if none.

    >>> extract_answer(r"71 + 88 is \boxed{159}"), extract_answer("The final answer is $42$. Done.")
    (('159', 'boxed'), ('$42$', 'phrase'))
    >>> extract_answer("We add 71 + 88 and get 150"), extract_answer("no digits")
    (('150', 'number'), None)
    """
    text = text[-max_chars:] if isinstance(text, str) else ""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed, "boxed"
    phrase = None
    for match in _PHRASE.finditer(text):
        answer = _SENTENCE_END.split(match.group("ans"), maxsplit=1)[0].strip(" \t*.,;:!")
        if answer:
            phrase = answer
    if phrase is not None:
        return phrase, "phrase"
    numbers = _NUMBER.findall(text)
    return (numbers[-1], "number") if numbers else None


def extract_gold(solution: Any, max_chars: int = MAX_CHARS) -> tuple[str, str] | None:
    r"""The gold answer as `(answer, kind)`: the last \boxed{} of a worked solution, the text after GSM8K's "####",
    else the whole (bare) answer. None when there is nothing to parse.

    >>> extract_gold("Add them: 40 + 2 = 42.\n#### 42"), extract_gold(r"\frac{1}{2}"), extract_gold(7)
    (('42', 'phrase'), ('\\frac{1}{2}', 'phrase'), ('7', 'phrase'))
    """
    if isinstance(solution, bool) or not isinstance(solution, (str, int, float)):
        return None
    text = str(solution)[-max_chars:]
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed, "boxed"
    if "####" in text:
        text = text.rsplit("####", 1)[1].strip().split("\n", 1)[0]
    text = text.strip()
    return (text, "phrase") if text else None


def _prediction(pred: tuple[str, str] | None, gold: str) -> tuple[str, str] | None:
    """Apply the anti-echo rules: take the right side of "a = b" and refuse unevaluated arithmetic."""
    if pred is None:
        return None
    answer, kind = pred
    if kind != "number" and "=" in answer and "=" not in gold:
        answer = answer.rsplit("=", 1)[1].strip()
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return None
    if kind != "number" and _UNEVALUATED.search(answer) and not _UNEVALUATED.search(gold):
        return None
    return answer, kind


# ---------------------------------------------------------------------------------------------------------------------
# Verification: runs inside a worker process (or in-process when workers are off).


def _parse_input(answer: str, kind: str) -> str:
    if kind == "boxed":
        return "\\boxed{" + answer + "}"
    if kind == "number":
        return answer.replace(",", "")
    if "$" in answer or "\\(" in answer or "\\[" in answer:
        return answer
    return "$" + answer + "$" if re.search(r"[\\^_{]", answer) else answer


@lru_cache(maxsize=4096)
def _parse_gold(gold: str, kind: str, timeout: int | None) -> list:
    """A bare gold answer is read as LaTeX first ("(1, 2)" is a tuple, "3+4i" complex, "B" a choice), then as text."""
    from math_verify import parse

    if kind == "phrase" and not ("$" in gold or "\\(" in gold or "\\[" in gold):
        parsed = parse("$" + gold + "$", parsing_timeout=timeout)
        if parsed and not isinstance(parsed[0], str):  # a bare string is math-verify's fallback, not a parse
            return parsed
    return parse(_parse_input(gold, kind), parsing_timeout=timeout)


def verify_answer(pred: str | None, pred_kind: str, gold: str, gold_kind: str, timeout: int | None) -> int:
    """CORRECT, WRONG or GOLD_UNPARSEABLE for one extracted prediction (None: no answer) against one gold answer."""
    from math_verify import parse, verify

    try:
        gold_parsed = _parse_gold(gold, gold_kind, timeout)
        if not gold_parsed:
            return GOLD_UNPARSEABLE
        if pred is None:
            return WRONG
        pred_parsed = parse(_parse_input(pred, pred_kind), parsing_timeout=timeout)
        return CORRECT if pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=timeout) else WRONG
    except Exception:  # math-verify catches its own errors; this is the last net (RecursionError, MemoryError)
        return WRONG


def _worker_main() -> None:
    """A worker: `[task, pred, pred_kind, gold, gold_kind]` per stdin line -> `@task status` per stdout line."""
    logging.disable(logging.CRITICAL)  # math-verify logs each timeout; the parent counts outcomes instead
    out, sys.stdout = sys.stdout, sys.stderr  # a library's print() must not look like an answer
    timeout = MATH_VERIFY_TIMEOUT if os.name == "posix" else None  # on Windows math-verify would spawn per call
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a blow-up is a MemoryError, not the OOM killer
    except Exception:
        pass
    verify_answer("1", "number", "1", "phrase", timeout)  # warm the parser before saying ready
    out.write("@ready\n")
    out.flush()
    for line in sys.stdin:
        task, status = -1, WRONG
        try:
            task, *args = json.loads(line)
            status = verify_answer(*args, timeout)
        except Exception:
            pass
        out.write(f"@{task} {status}\n")
        out.flush()


_BOOT = "import json, runpy, sys; sys.path[:0] = json.loads(sys.argv[1]); runpy.run_path(sys.argv[2], run_name='{}')"
_WORKER_RUN_NAME = "__up_trl_reward_worker__"


class _PoolUnavailable(RuntimeError):
    pass


def _pump(stream: Any, events: queue.Queue, key: tuple[int, int]) -> None:
    try:
        for line in stream:
            events.put((key, line.strip()))
    except Exception:
        pass
    events.put((key, None))  # EOF: the worker exited or was killed


class _WorkerPool:
    """`num_workers` `python -c` processes fed one task at a time; one batch at a time (a lock)."""

    def __init__(self, num_workers: int):
        self.num_workers = num_workers
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.events: queue.Queue = queue.Queue()
        self.procs: list[subprocess.Popen | None] = [None] * num_workers
        self.generation = [0] * num_workers
        self.ready = [False] * num_workers
        self.restarts = 0

    def _spawn(self, wid: int) -> None:
        if not sys.executable:
            raise _PoolUnavailable("sys.executable is empty")
        self.generation[wid] += 1
        sys_path = json.dumps([p for p in sys.path if p])
        cmd = [sys.executable, "-c", _BOOT.format(_WORKER_RUN_NAME), sys_path, os.path.abspath(__file__)]
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
                bufsize=1,
                start_new_session=os.name == "posix",  # Ctrl-C goes to the trainer, not to the workers
            )
        except OSError as exc:
            raise _PoolUnavailable(f"cannot start a worker process: {exc}") from exc
        key = (wid, self.generation[wid])
        threading.Thread(target=_pump, args=(proc.stdout, self.events, key), daemon=True).start()
        self.procs[wid], self.ready[wid] = proc, False

    def _kill(self, wid: int) -> None:
        proc, self.procs[wid], self.ready[wid] = self.procs[wid], None, False
        if proc is None:
            return
        for close in (proc.kill, proc.stdin.close):
            try:
                close()
            except Exception:
                pass
        try:
            proc.wait(timeout=5)
        except Exception:
            pass

    def close(self) -> None:
        for wid in range(self.num_workers):
            self._kill(wid)

    def run(
        self, tasks: list[list], timeout_s: float, item_timeout_s: float, startup_timeout_s: float
    ) -> tuple[list[int], int]:
        """Statuses of `tasks` (TIMEOUT for those not done in time) and the number of workers restarted."""
        with self.lock:
            restarts_before = self.restarts
            for wid, proc in enumerate(self.procs):
                if proc is None or proc.poll() is not None:
                    if proc is not None:
                        self._kill(wid)
                        self.restarts += 1
                    self._spawn(wid)
            start = time.monotonic()
            deadline = start + timeout_s if any(self.ready) else None  # the call's clock starts once a worker is up
            statuses = [TIMEOUT] * len(tasks)
            todo = collections.deque(range(len(tasks)))
            busy: dict[int, tuple[int, float]] = {}  # worker -> (task, sent at)
            early_deaths = 0
            while todo or busy:
                for wid in range(self.num_workers):  # hand a task to every idle, ready worker
                    if todo and self.ready[wid] and wid not in busy:
                        task = todo.popleft()
                        try:
                            self.procs[wid].stdin.write(json.dumps([task, *tasks[task]]) + "\n")
                            self.procs[wid].stdin.flush()
                            busy[wid] = (task, time.monotonic())
                        except Exception:  # the worker is gone: not the task's fault, retry it elsewhere
                            todo.appendleft(task)
                            self._kill(wid)
                            self.restarts += 1
                            self._spawn(wid)
                now = time.monotonic()
                if deadline is None and now > start + startup_timeout_s:
                    raise _PoolUnavailable(f"no worker became ready within {startup_timeout_s:.0f} s")
                if deadline is not None and now >= deadline:
                    break
                for wid, (_task, sent) in list(busy.items()):  # a hung item: kill its worker, start another
                    if now - sent >= item_timeout_s:
                        del busy[wid]
                        self._kill(wid)
                        self.restarts += 1
                        self._spawn(wid)
                limit = deadline if deadline is not None else start + startup_timeout_s
                waits = [limit - now] + [sent + item_timeout_s - now for _, sent in busy.values()]
                try:
                    (wid, gen), line = self.events.get(timeout=max(min(waits), 0.001))
                except queue.Empty:
                    continue
                if gen != self.generation[wid]:
                    continue  # a message from a worker already replaced
                if line is None:  # the worker died: its task (if any) scores as a timeout
                    busy.pop(wid, None)
                    early_deaths += not self.ready[wid]
                    if early_deaths > 2 * self.num_workers:
                        raise _PoolUnavailable("worker processes exit at start (is math-verify importable?)")
                    self._kill(wid)
                    self.restarts += 1
                    self._spawn(wid)
                elif line == "@ready":
                    self.ready[wid] = True
                    if deadline is None:
                        deadline = time.monotonic() + timeout_s
                elif line.startswith("@") and wid in busy and line[1:].split(" ")[0] == str(busy[wid][0]):
                    task, _ = busy.pop(wid)
                    status = line.split(" ")[-1]
                    statuses[task] = int(status) if status in ("0", "1", "2") else WRONG
            for wid in busy:  # still working at the deadline: its answer would arrive in the next call
                self._kill(wid)
                self.restarts += 1
            return statuses, self.restarts - restarts_before


_POOLS: dict[int, _WorkerPool] = {}
_POOLS_LOCK = threading.Lock()
_FALLBACK_WARNED = False


def _pool(num_workers: int) -> _WorkerPool:
    with _POOLS_LOCK:
        pool = _POOLS.get(num_workers)
        if pool is None or pool.pid != os.getpid():  # a forked child must not share its parent's pipes
            pool = _POOLS[num_workers] = _WorkerPool(num_workers)
        return pool


def shutdown_workers() -> None:
    """Stop every math-verify worker process of this process (they restart on the next call). Runs at exit."""
    with _POOLS_LOCK:
        pools = [p for p in _POOLS.values() if p.pid == os.getpid()]
        _POOLS.clear()
    for pool in pools:
        pool.close()


atexit.register(shutdown_workers)


def _default_num_workers() -> int:
    value = os.environ.get("UP_TRL_REWARD_WORKERS", "").strip()
    if value:
        try:
            return max(int(value), 0)
        except ValueError:
            raise ValueError(
                f"UP_TRL_REWARD_WORKERS={value!r}: set a number of worker processes, 0 for in-process"
            ) from None
    return min(2, os.cpu_count() or 1)


def _score_in_process(tasks: list[list]) -> list[int]:
    in_main = threading.current_thread() is threading.main_thread() and os.name == "posix"
    timeout = MATH_VERIFY_TIMEOUT if in_main else None  # SIGALRM only works in the main thread
    if not in_main:
        for name in ("math_verify.parser", "math_verify.grader", "math_verify.utils"):
            logging.getLogger(name).setLevel(logging.ERROR)  # "Timeout is disabled" on every call otherwise
    return [verify_answer(*task, timeout) for task in tasks]


# ---------------------------------------------------------------------------------------------------------------------
# Rewards.


@dataclass
class RewardStats:
    """Running totals of one accuracy reward (`reward.stats`); `as_dict()` for logging, `reset()` to zero them."""

    calls: int = 0
    completions: int = 0
    correct: int = 0
    skipped_gold: int = 0
    no_answer: int = 0
    timeouts: int = 0
    worker_restarts: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, 0)


_STATS_LOCK = threading.Lock()


class MathAccuracyReward:
    r"""math-verify accuracy of the strictly extracted answer: `correct` / `incorrect`, None when the gold is
    unparseable (TRL skips it). Build with `make_math_accuracy_reward`; instances are picklable.

    >>> reward = make_math_accuracy_reward(correct=1.0, incorrect=-1.0)
    >>> reward([[{"role": "assistant", "content": r"\boxed{42}"}], "41"], solution=["42", "42"])
    [1.0, -1.0]
    """

    def __init__(
        self,
        correct: float = 1.0,
        incorrect: float = 0.0,
        *,
        timeout_reward: float | None = None,
        solution_column: str = "solution",
        name: str = "math_accuracy_reward",
        num_workers: int | None = None,
        timeout_s: float = 10.0,
        item_timeout_s: float = 4.0,
        startup_timeout_s: float = 60.0,
        max_chars: int = MAX_CHARS,
    ):
        self.correct, self.incorrect = float(correct), float(incorrect)
        self.timeout_reward = self.incorrect if timeout_reward is None else float(timeout_reward)
        self.solution_column = solution_column
        self.__name__ = name  # TRL logs rewards/<__name__>/mean
        self.num_workers = num_workers
        self.timeout_s, self.item_timeout_s, self.startup_timeout_s = timeout_s, item_timeout_s, startup_timeout_s
        self.max_chars = max_chars
        self.stats = RewardStats()

    def __repr__(self) -> str:
        return f"<{self.__name__}: correct={self.correct}, incorrect={self.incorrect}>"

    def _score(self, tasks: list[list]) -> tuple[list[int], int]:
        global _FALLBACK_WARNED
        num_workers = _default_num_workers() if self.num_workers is None else self.num_workers
        if num_workers > 0 and tasks:
            try:
                return _pool(num_workers).run(tasks, self.timeout_s, self.item_timeout_s, self.startup_timeout_s)
            except _PoolUnavailable as exc:
                if not _FALLBACK_WARNED:
                    logger.warning("math-verify workers unavailable (%s); scoring in-process from now on.", exc)
                    _FALLBACK_WARNED = True
                self.num_workers = 0
        return _score_in_process(tasks), 0

    def __call__(self, completions: Sequence[Any], solution: Sequence[Any] | None = None, **kwargs) -> list:
        golds_raw = kwargs.get(self.solution_column) if self.solution_column != "solution" else solution
        if golds_raw is None:
            raise ValueError(
                f"{self.__name__} needs the gold answers in a dataset column named {self.solution_column!r}; "
                "add that column or build the reward with make_math_accuracy_reward(solution_column=...)."
            )
        if len(golds_raw) != len(completions):
            raise ValueError(f"{self.__name__}: {len(completions)} completions but {len(golds_raw)} gold answers.")
        golds = [extract_gold(g, self.max_chars) for g in golds_raw]
        preds = [
            _prediction(extract_answer(completion_text(c), self.max_chars), g[0]) if g else None
            for c, g in zip(completions, golds)
        ]
        keys = [(p[0] if p else None, p[1] if p else "", *g) if g else None for p, g in zip(preds, golds)]
        unique = list(dict.fromkeys(k for k in keys if k is not None))  # G samples of one prompt share answers
        statuses, restarts = self._score([list(k) for k in unique])
        by_key = dict(zip(unique, statuses))
        outcomes = [by_key[k] if k is not None else GOLD_UNPARSEABLE for k in keys]
        value = {CORRECT: self.correct, WRONG: self.incorrect, TIMEOUT: self.timeout_reward, GOLD_UNPARSEABLE: None}
        rewards = [value[o] for o in outcomes]

        n = len(outcomes)
        counts = {
            "skipped_gold": outcomes.count(GOLD_UNPARSEABLE),
            "timeouts": outcomes.count(TIMEOUT),
            "no_answer": sum(p is None and o != GOLD_UNPARSEABLE for p, o in zip(preds, outcomes)),
        }
        with _STATS_LOCK:
            s = self.stats
            s.calls, s.completions, s.correct = s.calls + 1, s.completions + n, s.correct + outcomes.count(CORRECT)
            s.skipped_gold += counts["skipped_gold"]
            s.timeouts += counts["timeouts"]
            s.no_answer += counts["no_answer"]
            s.worker_restarts += restarts
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if callable(log_metric) and n:
            log_metric(f"rewards/{self.__name__}/skipped_gold_frac", counts["skipped_gold"] / n)
            log_metric(f"rewards/{self.__name__}/no_answer_frac", counts["no_answer"] / n)
            log_metric(f"rewards/{self.__name__}/timeout_frac", counts["timeouts"] / n)
        if callable(log_extra):
            log_extra(f"{self.__name__}/answer", [p[0] if p else "" for p in preds])
            log_extra(f"{self.__name__}/gold", [g[0] if g else "[unparseable]" for g in golds])
        return rewards


def make_math_accuracy_reward(correct: float = 1.0, incorrect: float = 0.0, **options: Any) -> MathAccuracyReward:
    """A math-verify accuracy reward scoring `correct` / `incorrect`; see `MathAccuracyReward` for `options`
    (`timeout_reward`, `solution_column`, `name`, `num_workers`, `timeout_s`, `item_timeout_s`, `max_chars`).

    >>> make_math_accuracy_reward(correct=1.0, incorrect=-1.0).__name__
    'math_accuracy_reward_1_-1'
    """
    suffix = "" if (correct, incorrect) == (1, 0) else f"_{correct:g}_{incorrect:g}"
    options.setdefault("name", "math_accuracy_reward" + suffix)
    return MathAccuracyReward(correct, incorrect, **options)


math_accuracy_reward = MathAccuracyReward(1.0, 0.0, name="math_accuracy_reward")
dapo_math_reward = MathAccuracyReward(1.0, -1.0, name="dapo_math_reward")  # DAPO's rule-based reward: +1 / -1


def boxed_format_reward(completions: Sequence[Any], **kwargs) -> list[float]:
    r"""1.0 when the reply (its last `MAX_CHARS` characters) holds a closed, non-empty `\boxed{...}`, else 0.0.

    >>> boxed_format_reward([r"so \boxed{3}", r"\boxed{}", r"\boxed{3"])
    [1.0, 0.0, 0.0]
    """
    return [0.0 if last_boxed(completion_text(c)[-MAX_CHARS:]) is None else 1.0 for c in completions]


def think_format_reward(completions: Sequence[Any], **kwargs) -> list[float]:
    """TRL's `think_format_reward` (1.0 for `<think>...</think>` first), also for strings and malformed messages.

    >>> think_format_reward(["<think>hm</think>42", "42"])
    [1.0, 0.0]
    """
    texts = [[{"content": completion_text(c, message=0)}] for c in completions]
    return _trl_think_format_reward(texts)


def make_soft_overlong_punishment(max_completion_length: int, soft_punish_cache: int | None = None) -> Callable:
    """DAPO's soft overlong punishment, TRL's `get_soft_overlong_punishment` (`max_completion_length` named as in
    `GRPOConfig`): 0 up to `max - cache` tokens, then linear down to -1 at `max`. The cache defaults to a fifth of
    the maximum (DAPO: 4096 of 20480).

    >>> make_soft_overlong_punishment(100, 20)(completion_ids=[[1] * 80, [1] * 90])
    [0.0, -0.5]
    """
    if soft_punish_cache is None:
        soft_punish_cache = max(max_completion_length // 5, 1)
    if not 0 < soft_punish_cache <= max_completion_length:
        raise ValueError(
            f"soft_punish_cache={soft_punish_cache} must be in (0, max_completion_length={max_completion_length}]."
        )
    return get_soft_overlong_punishment(max_completion_len=max_completion_length, soft_punish_cache=soft_punish_cache)


# ---------------------------------------------------------------------------------------------------------------------
# Registry.

REWARD_FUNCS: dict[str, Callable] = {
    "math_accuracy": math_accuracy_reward,
    "dapo_math": dapo_math_reward,
    "boxed_format": boxed_format_reward,
    "think_format": think_format_reward,
}
# Rewards built from options (get_reward_funcs passes each factory the options its signature names).
REWARD_FACTORIES: dict[str, Callable[..., Callable]] = {
    "math_accuracy": make_math_accuracy_reward,
    "dapo_math": lambda **options: make_math_accuracy_reward(1.0, -1.0, **{"name": "dapo_math_reward", **options}),
    "soft_overlong": make_soft_overlong_punishment,
}
_ACCURACY_OPTIONS = set(inspect.signature(MathAccuracyReward).parameters) - {"name"}
_FACTORY_OPTIONS: dict[str, set[str]] = {
    "math_accuracy": _ACCURACY_OPTIONS,
    "dapo_math": _ACCURACY_OPTIONS - {"correct", "incorrect"},
    "soft_overlong": {"max_completion_length", "soft_punish_cache"},
}


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
    return f"Known names: {', '.join(names)}; or a dotted import path such as 'my_pkg.my_module.my_reward'."


def get_reward_funcs(names: Sequence[str], **options: Any) -> list[Callable]:
    """Reward functions for `GRPOTrainer(reward_funcs=...)` from registry names or dotted import paths.

    `options` go to the factories that name them (`max_completion_length`, `soft_punish_cache` for
    "soft_overlong"; `timeout_s`, `num_workers`, ... for the accuracy rewards).

    >>> [f.__name__ for f in get_reward_funcs(["math_accuracy", "up_trl.rewards.boxed_format_reward"])]
    ['math_accuracy_reward', 'boxed_format_reward']
    """
    if isinstance(names, str):
        names = [names]
    funcs, used = [], set()
    for name in names:
        if name in REWARD_FACTORIES:
            kwargs = {k: v for k, v in options.items() if k in _FACTORY_OPTIONS[name]}
            used |= set(kwargs)
            if kwargs or name not in REWARD_FUNCS:
                try:
                    funcs.append(REWARD_FACTORIES[name](**kwargs))
                except TypeError as exc:
                    needed = ", ".join(f"{k}=..." for k in sorted(_FACTORY_OPTIONS[name]))
                    raise ValueError(
                        f"Reward {name!r} needs options: get_reward_funcs([...], {needed}) ({exc})."
                    ) from exc
            else:
                funcs.append(REWARD_FUNCS[name])
        elif name in REWARD_FUNCS:
            funcs.append(REWARD_FUNCS[name])
        elif "." in name:
            funcs.append(_import_reward(name))
        else:
            raise ValueError(f"Unknown reward function {name!r}. {_known()}")
    unused = sorted(set(options) - used)
    if unused:
        logger.warning("get_reward_funcs: options %s are used by none of %s.", unused, list(names))
    return funcs


if __name__ == _WORKER_RUN_NAME:
    _worker_main()
