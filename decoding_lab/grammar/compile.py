"""Compiling grammars in a small, bounded worker pool with a time limit.

A grammar is compiled twice: once on a 256-byte vocabulary when the ``Constraint`` is built
(it checks syntax and that the language is not empty) and once per model vocabulary in
``GrammarMask``. Both are pure CPU work in the engine, and a large grammar can take long.
``bounded(fn, ...)`` runs such work in at most ``DECODING_LAB_GRAMMAR_WORKERS`` threads for
the whole process (all visitors): one more request is refused at once as busy instead of
queueing, and a caller waits at most ``DECODING_LAB_GRAMMAR_SECONDS``. A compile that runs
past its time keeps its worker until the engine returns (a thread cannot be killed), so the
pool stays bounded; the caller already has its message.

The app calls this before it takes a model slot, so a slow grammar never holds up another
visitor's Step.

    >>> from decoding_lab.grammar import regex
    >>> bounded(regex, "[0-9]+").kind
    'regex'
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import Any, Callable

from decoding_lab import limits
from decoding_lab.grammar.constraints import GrammarError

_lock = threading.Lock()
_pool: cf.ThreadPoolExecutor | None = None
_busy = 0


def _executor(workers: int) -> cf.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grammar-compile")
    return _pool


def _release() -> None:
    global _busy
    with _lock:
        _busy -= 1


def _run(fn: Callable[..., Any], args: tuple, kw: dict) -> Any:
    """The worker's job: the slot is given back *before* the result reaches the caller (a done
    callback would run after it, and a caller that compiles twice in a row, as a Reset does,
    could then be refused as busy by its own first compile)."""
    try:
        return fn(*args, **kw)
    finally:
        _release()


def submit(fn: Callable[..., Any], *args: Any, **kw: Any) -> cf.Future:
    """Start ``fn(*args, **kw)`` in the grammar pool and return its future at once;
    ``GrammarError`` now when the pool is full."""
    global _busy
    lim = limits.current()
    with _lock:
        if _busy >= lim.grammar_workers:
            raise GrammarError.coded("compiler_busy", busy=_busy, setting=f"{limits.PREFIX}GRAMMAR_WORKERS")
        _busy += 1
        return _executor(lim.grammar_workers).submit(_run, fn, args, kw)


def result(future: cf.Future, timeout: float | None = None) -> Any:
    """A compile's result, waiting at most ``timeout`` (the deployment's limit by default);
    ``GrammarError`` when time runs out (the compile itself goes on, holding its worker)."""
    lim = limits.current()
    try:
        return future.result(timeout=lim.grammar_seconds if timeout is None else timeout)
    except cf.TimeoutError:
        raise GrammarError(f"compiling the grammar took longer than {lim.grammar_seconds:g} s "
                           f"({limits.PREFIX}GRAMMAR_SECONDS): make it smaller") from None


def bounded(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """``fn(*args, **kw)`` in the grammar pool; ``GrammarError`` when the pool is full or time runs out."""
    return result(submit(fn, *args, **kw))


def busy() -> int:
    """Compiles running now (for tests and logs)."""
    with _lock:
        return _busy
