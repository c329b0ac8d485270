"""One memory budget for every live session's KV cache.

A stepper session keeps its model's KV cache between two clicks: for a transformers model that is
``layers x 2 x heads x head_dim x tokens`` numbers, about 80 KB a token for the bundled SmolLM2
135M in float32, so a 1,900-token prompt holds about 150 MB for as long as the session lives. On a
public Space with many visitors (or one visitor opening many tabs) those caches add up past the
machine's memory long before any other limit is reached.

``MemoryBudget`` keeps the caches under one ceiling (``DECODING_LAB_MEMORY_MB``). Each holder (a
``Stepper``) reports its size after every call that may have grown it (``used``); when the sizes add
up past the ceiling, the holders used least recently are *parked* (their cache dropped: what they
show stays, and their next step rebuilds the cache with one prefill of the tokens so far), until
the rest fits. A holder that is working at that moment (its lock is held) is skipped: a cache is
never dropped under a running forward. The holder that just reported is never parked (one
session's cache is far below any sensible ceiling: at most prompt + new tokens long).

The registry holds weak references: a session that expires is forgotten with it. A holder is
anything with ``cache_bytes() -> int`` and ``park_for_memory() -> bool`` (False: busy, not parked).

    >>> class Fake:
    ...     def __init__(self, n): self.n, self.parked = n, False
    ...     def cache_bytes(self): return 0 if self.parked else self.n
    ...     def park_for_memory(self): self.parked = True; return True
    >>> budget = MemoryBudget(limit_bytes=100)
    >>> a, b, c = Fake(40), Fake(40), Fake(40)
    >>> for h in (a, b, c): _ = budget.used(h)
    >>> [h.parked for h in (a, b, c)], budget.total()
    ([True, False, False], 80)
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Protocol


class CacheHolder(Protocol):
    def cache_bytes(self) -> int: ...

    def park_for_memory(self) -> bool: ...


class MemoryBudget:
    """The holders' last reported sizes, their order of use, and the ceiling they share."""

    def __init__(self, limit_bytes: int | None) -> None:
        self.limit_bytes = limit_bytes          # None: no ceiling (sizes are still counted)
        self._lock = threading.Lock()
        self._clock = itertools.count()
        # id -> (weak reference, bytes last reported, tick of last use)
        self._held: dict[int, tuple[weakref.ref, int, int]] = {}
        self.parked_count = 0                   # holders parked by this budget so far

    def _forget(self, key: int) -> None:
        with self._lock:
            self._held.pop(key, None)

    def used(self, holder: CacheHolder) -> list[Any]:
        """``holder`` was just used: record its size and make the rest fit. Returns the holders
        parked to make room (oldest use first)."""
        size = int(holder.cache_bytes())
        key = id(holder)
        with self._lock:
            old = self._held.get(key)
            ref = old[0] if old is not None else weakref.ref(holder, lambda _r, k=key: self._forget(k))
            self._held[key] = (ref, size, next(self._clock))
            if self.limit_bytes is None or self._total() <= self.limit_bytes:
                return []
            order = sorted(self._held.items(), key=lambda kv: kv[1][2])   # least recently used first
        parked: list[Any] = []
        for k, (r, bytes_, _tick) in order:
            if self.total() <= self.limit_bytes:
                break
            other = r()
            if other is None or bytes_ == 0 or k == key:
                continue
            if other.park_for_memory():       # False: it is working right now
                parked.append(other)
                self.parked_count += 1
                with self._lock:
                    if k in self._held:
                        self._held[k] = (r, int(other.cache_bytes()), self._held[k][2])
        return parked

    def released(self, holder: CacheHolder) -> None:
        """``holder`` dropped or shrank its cache by itself (parked for a GPU, reset): record it."""
        key = id(holder)
        with self._lock:
            if key in self._held:
                r, _b, tick = self._held[key]
                self._held[key] = (r, int(holder.cache_bytes()), tick)

    def _total(self) -> int:
        return sum(b for _r, b, _t in self._held.values())

    def total(self) -> int:
        """Bytes the live holders reported last."""
        with self._lock:
            return self._total()

    def holders(self) -> int:
        with self._lock:
            return sum(1 for r, _b, _t in self._held.values() if r() is not None)


_BUDGET: MemoryBudget | None = None
_BUDGET_LOCK = threading.Lock()


def memory_budget() -> MemoryBudget:
    """The process's budget, with the ceiling of ``limits.current().memory_mb`` (read once; a test
    that changes the limits calls ``reset_memory_budget``)."""
    global _BUDGET
    with _BUDGET_LOCK:
        if _BUDGET is None:
            from decoding_lab import limits
            mb = limits.current().memory_mb
            _BUDGET = MemoryBudget(None if not mb else int(mb * 2**20))
        return _BUDGET


def reset_memory_budget(limit_bytes: int | None = None, from_limits: bool = True) -> MemoryBudget:
    """A fresh budget (for tests and for an app that re-reads its limits)."""
    global _BUDGET
    with _BUDGET_LOCK:
        _BUDGET = None
    if from_limits and limit_bytes is None:
        return memory_budget()
    with _BUDGET_LOCK:
        _BUDGET = MemoryBudget(limit_bytes)
        return _BUDGET
