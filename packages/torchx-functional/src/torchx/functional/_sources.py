"""Generated sources: compiled once per text, shown in tracebacks while used.

Graphs of one architecture generate the same forward whatever their widths
(an architecture search, a spec read back, a deep copy), so a source's code is
kept, for the :data:`CACHED` most recently compiled texts. Each text is
registered with ``linecache`` under a file name of its own while it is cached
or a function compiled from it lives, and forgotten after: a process building
graph after graph keeps a bounded number of sources.
"""

from __future__ import annotations

import itertools
import linecache
import threading
import weakref
from collections import Counter
from collections.abc import Callable
from types import CodeType
from typing import Any

from torchx.core import TorchXError

__all__ = ["CACHED", "clear_compiled", "compile_function"]

CACHED = 256
"""How many sources' code is kept."""

_files = itertools.count()
_lock = threading.RLock()  # reentrant: a finalizer may run in a collection while it is held
_compiled: dict[str, tuple[CodeType, str]] = {}
"""Code and file name by source, least recently used first."""
_cached_files: set[str] = set()
_users: Counter[str] = Counter()
"""How many live functions run the code of each file name."""


def compile_function(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """The function ``name`` that ``source`` defines, its globals ``namespace``;
    its source shows in tracebacks while it lives.

    :raises TorchXError: ``source`` does not compile (a generator bug).
    """
    with _lock:
        found = _compiled.pop(source, None)
        if found is None:
            found = _compile(source)
            _cached_files.add(found[1])
            if len(_compiled) >= CACHED:
                _forget(next(iter(_compiled)))
        _compiled[source] = found  # the most recently used last
        code, filename = found
        _users[filename] += 1
    exec(code, namespace)  # our own generated code
    function: Callable[..., Any] = namespace[name]
    weakref.finalize(function, _release, filename).atexit = False
    return function


def clear_compiled() -> None:
    """Forget every cached source: the cache as a fresh process has it (tests of
    the cache start from it; the benchmarks time a first build in a fresh process)."""
    with _lock:
        for source in list(_compiled):
            _forget(source)


def _compile(source: str) -> tuple[CodeType, str]:
    filename = f"<torchx-functional-{next(_files)}>"
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as error:  # a generator bug: say so, never a bare SyntaxError
        raise TorchXError(
            f"the generated forward does not compile ({error.msg}, line {error.lineno}); this is a "
            "TorchX bug, please report it with the model's definition"
        ) from error
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return code, filename


def _forget(source: str) -> None:
    """Drop ``source`` from the cache (the lock held); its lines go with the last user."""
    _, filename = _compiled.pop(source)
    _cached_files.discard(filename)
    if not _users[filename]:
        del _users[filename]
        linecache.cache.pop(filename, None)


def _release(filename: str) -> None:
    """A function running ``filename``'s code is gone."""
    with _lock:
        _users[filename] -= 1
        if _users[filename] <= 0:
            del _users[filename]
            if filename not in _cached_files:
                linecache.cache.pop(filename, None)
