"""Bounds on what one browser tab (a gradio *session*) may hold and run.

* ``session_state()``: a ``gr.State`` for a tab's heavy work (a stepper with its KV cache, a
  finished run). Gradio drops it ``DECODING_LAB_SESSION_TTL`` seconds after it was last
  written. Each piece counts on its own: every Explorer action writes the Explorer's stepper,
  so it lives TTL seconds past the last Explorer action (an hour in the Compare tab does not
  keep it). The next action then starts afresh, as after Reset.
* Gradio itself keeps a few MB per tab however idle (its copy of the page's component configs,
  with the last value of every plot and table), for at most ``DECODING_LAB_MAX_SESSIONS`` tabs
  (``state_session_capacity``; the least recently used go first). That cap, not the TTL, is
  what bounds memory as visitors come and go. (A *closed* tab's state is kept for an hour by
  gradio whatever the TTL; the cap bounds that too.)
* ``SessionJobs`` + ``gated()``: at most ``DECODING_LAB_SESSION_JOBS`` model jobs of one tab
  run at once; one more is refused with a "busy" message instead of taking a second model
  slot from the other visitors. All visitors together share ``DECODING_LAB_CONCURRENCY`` model
  slots (``runtime.model_slot``, which ``gated`` takes; the queue's own limit, ``queue_kwargs()``,
  is the same number).

``SessionJobs`` knows nothing about a visitor but how many of their jobs are running right
now, and forgets a tab as soon as its last job ends, so it stays as small as the number of
running jobs.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import threading
from typing import Any, Callable, Iterator

import gradio as gr

from decoding_lab import limits
from decoding_lab.ui.common.i18n import t

log = logging.getLogger(__name__)


class ExpiryCounter:
    """How many session states gradio has dropped in this process (a number, for tests and logs)."""

    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def __call__(self, value: Any) -> None:  # gradio's delete_callback: gets the dropped value
        with self._lock:
            self._n += 1
        log.debug("session state expired: %s", type(value).__name__)

    @property
    def count(self) -> int:
        return self._n


EXPIRED = ExpiryCounter()


def session_state(value: Any = None) -> gr.State:
    """A per-tab ``gr.State`` that expires ``DECODING_LAB_SESSION_TTL`` seconds after its last write."""
    return gr.State(value, time_to_live=limits.current().session_ttl, delete_callback=EXPIRED)


def queue_kwargs() -> dict[str, Any]:
    """``demo.queue(**queue_kwargs())``: model slots shared by all visitors, and a bounded queue."""
    lim = limits.current()
    return {"default_concurrency_limit": lim.concurrency, "max_size": lim.queue_size}


# ----------------------------------------------------------------------------- jobs per tab
class SessionJobs:
    """Counts the running jobs of each tab; ``slot()`` refuses one over the limit."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit if limit is not None else limits.current().session_jobs
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def slot(self, session: str | None, lang: str = "en") -> Iterator[None]:
        if not session:  # a call without a session (none from the browser or gradio_client)
            yield
            return
        with self._lock:
            if self._running.get(session, 0) >= self.limit:
                raise gr.Error(t(lang, "busy"), title=t(lang, "error"), print_exception=False)
            self._running[session] = self._running.get(session, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._running.pop(session) - 1
                if left:
                    self._running[session] = left

    def running(self) -> int:
        with self._lock:
            return sum(self._running.values())


def gated(fn: Callable, jobs: SessionJobs | None, model_slot: bool = True) -> Callable:
    """Run ``fn`` inside a job slot of the calling tab and, with ``model_slot``, one of the
    process's model slots (``runtime.model_slot``; a handler that takes its own, after work that
    needs none, passes False). Gradio passes the request to a parameter annotated
    ``gr.Request``; we add one at the end of ``fn``'s signature (it is not part of the API). The
    first argument, when it is a string, is the language of the message."""
    if jobs is None:
        return fn
    from decoding_lab.ui.common.runtime import model_slot as slot
    held = slot if model_slot else contextlib.nullcontext
    sig = inspect.signature(fn)
    extra = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request)

    def split(args: tuple) -> tuple[tuple, str | None, str]:
        *rest, request = args
        lang = rest[0] if rest and isinstance(rest[0], str) else "en"
        return tuple(rest), getattr(request, "session_hash", None), lang

    if inspect.isgeneratorfunction(fn):
        def gen_wrapper(*args: Any) -> Any:
            rest, session, lang = split(args)
            with jobs.slot(session, lang), held():
                yield from fn(*rest)
        wrapper: Callable = gen_wrapper
    else:
        def call_wrapper(*args: Any) -> Any:
            rest, session, lang = split(args)
            with jobs.slot(session, lang), held():
                return fn(*rest)
        wrapper = call_wrapper
    functools.update_wrapper(wrapper, fn)
    del wrapper.__wrapped__  # type: ignore[attr-defined]  # gradio must read *this* signature
    wrapper.__signature__ = sig.replace(parameters=[*sig.parameters.values(), extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {"request": gr.Request}
    return wrapper
