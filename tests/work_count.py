"""Work counted, not timed: `work(fn, *args)`, the lines of `up_trl` run plus the characters regexes scan."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import up_trl

SRC = str(Path(up_trl.__file__).resolve().parent)
_RE_FUNCTIONS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _Counted:
    """A compiled pattern whose scans add the characters they cover to `counter[0]`."""

    def __init__(self, pattern: re.Pattern, counter: list[int]):
        self._pattern, self._counter = pattern, counter

    def __getattr__(self, name):  # .pattern, .flags, .groups, ...
        return getattr(self._pattern, name)

    def _scanned(self, string, pos: int, endpos: int | None, stop: int | None) -> None:
        endpos = len(string) if endpos is None else min(endpos, len(string))
        self._counter[0] += 1 + max(0, (endpos if stop is None else stop) - pos)

    def search(self, string, pos=0, endpos=sys.maxsize):
        found = self._pattern.search(string, pos, endpos)
        self._scanned(string, pos, endpos, found.end() if found else None)
        return found

    def match(self, string, pos=0, endpos=sys.maxsize):
        found = self._pattern.match(string, pos, endpos)
        self._scanned(string, pos, endpos, found.end() if found else pos)
        return found

    def fullmatch(self, string, pos=0, endpos=sys.maxsize):
        found = self._pattern.fullmatch(string, pos, endpos)
        self._scanned(string, pos, endpos, found.end() if found else pos)
        return found

    def finditer(self, string, pos=0, endpos=sys.maxsize):
        self._scanned(string, pos, endpos, None)
        return self._pattern.finditer(string, pos, endpos)

    def findall(self, string, pos=0, endpos=sys.maxsize):
        self._scanned(string, pos, endpos, None)
        return self._pattern.findall(string, pos, endpos)

    def sub(self, repl, string, count=0):
        self._scanned(string, 0, None, None)
        return self._pattern.sub(repl, string, count)

    def subn(self, repl, string, count=0):
        self._scanned(string, 0, None, None)
        return self._pattern.subn(repl, string, count)

    def split(self, string, maxsplit=0):
        self._scanned(string, 0, None, None)
        return self._pattern.split(string, maxsplit)


def _wrap(value, counter: list[int]):
    """`value` with its compiled patterns counted (a pattern, or a dict, list or tuple of them), else None."""
    if isinstance(value, re.Pattern):
        return _Counted(value, counter)
    if isinstance(value, dict) and value and all(isinstance(v, re.Pattern) for v in value.values()):
        return {k: _Counted(v, counter) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, re.Pattern) for v in value):
        return type(value)(_Counted(v, counter) for v in value)
    return None


@contextlib.contextmanager
def _counted_patterns(counter: list[int]) -> Iterator[None]:
    """Every module-level pattern of `up_trl` and the `re` module's functions count their scans while inside."""
    saved: list[tuple[object, str, object]] = []
    modules = [m for name, m in list(sys.modules.items()) if name == "up_trl" or name.startswith("up_trl.")]
    for module in modules:
        for name, value in list(vars(module).items()):
            wrapped = _wrap(value, counter)
            if wrapped is not None:
                saved.append((module, name, value))
                setattr(module, name, wrapped)
    for name in _RE_FUNCTIONS:
        function = getattr(re, name)
        saved.append((re, name, function))

        def counted(pattern, *args, _name=name, flags=0, **kw):
            return getattr(_Counted(re.compile(pattern, flags), counter), _name)(*args, **kw)

        setattr(re, name, counted)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def work(fn: Callable, *args, **kwargs) -> int:
    """The lines of `up_trl` that `fn(*args, **kwargs)` runs plus the characters its regular expressions scan."""
    counter = [0]

    def line(frame, event, arg):
        if event == "line":
            counter[0] += 1
        return line

    def call(frame, event, arg):
        return line if frame.f_code.co_filename.startswith(SRC) else None

    previous = sys.gettrace()
    with _counted_patterns(counter):
        sys.settrace(call)
        try:
            fn(*args, **kwargs)
        finally:
            sys.settrace(previous)
    return counter[0]
