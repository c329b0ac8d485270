"""The base of every tab's per-visitor session object (held in a ``gr.State``).

It carries a lock so one visitor's double click cannot run two actions on one stepper at
once, and it deep-copies everything but the lock (gradio deep-copies state values; a lock
cannot be copied, and a model must never be: ``Stepper.__deepcopy__`` keeps it shared).
Expiry is the ``gr.State``'s own (``sessions.session_state``, ``DECODING_LAB_SESSION_TTL``)."""

from __future__ import annotations

import contextlib
import copy
import threading
from typing import Any, Iterator

import gradio as gr

from decoding_lab.ui.common.i18n import t


class Session:
    """Subclass as a dataclass; ``with session.locked(lang):`` around every model action."""

    _lock: threading.Lock

    def _the_lock(self) -> threading.Lock:
        lock = self.__dict__.get("_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_lock", threading.Lock())
        return lock

    @contextlib.contextmanager
    def locked(self, lang: str) -> Iterator[None]:
        """One action at a time per session; a second one is refused as busy, not queued."""
        lock = self._the_lock()
        if not lock.acquire(blocking=False):
            raise gr.Error(t(lang, "busy"), title=t(lang, "busy_title"), print_exception=False)
        try:
            yield
        finally:
            lock.release()

    def __deepcopy__(self, memo: dict) -> Any:
        new = copy.copy(self)
        for k, v in self.__dict__.items():
            if k != "_lock":
                new.__dict__[k] = copy.deepcopy(v, memo)
        new.__dict__.pop("_lock", None)
        return new
