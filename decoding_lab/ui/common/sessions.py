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
  slots (``runtime.model_slot``, which ``gated`` takes), fairly by client (``fair_share``).

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
from decoding_lab.errors import UserError
from decoding_lab.fair_share import Job, client_key, working_for
from decoding_lab.ui.common.errors import lang_of, user_error
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
    """``demo.queue(**queue_kwargs())``: a bounded queue, and up to ``DECODING_LAB_MODEL_THREADS``
    model events admitted at once. Admitted events wait for a model slot in the fair scheduler
    (``fair_share``), not in gradio's first-come-first-served queue, so that a short Step can
    go before the rest of a long job and a client over its cap is refused at once."""
    lim = limits.current()
    return {"default_concurrency_limit": max(lim.model_threads, lim.concurrency), "max_size": lim.queue_size}


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


def client_of(request: Any) -> str:
    """Who sent ``request``, as the model slots count clients (``fair_share.client_key``): the
    peer's address, or behind ``DECODING_LAB_PROXY_HOPS`` proxies the address the outermost
    trusted one saw. Never gradio's session id: the caller picks that itself."""
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    headers = getattr(request, "headers", None) or {}
    try:
        forwarded = headers.get("x-forwarded-for")
    except Exception:  # a stand-in request without a mapping of headers
        forwarded = None
    return client_key(host, forwarded, limits.current().proxy_hops or 0)


def gated(fn: Callable, jobs: SessionJobs | None, model_slot: bool = True) -> Callable:
    """Run ``fn`` inside a job slot of the calling tab and as a job of the calling client in the
    process's fair share of model slots (``fair_share``; a client over its job cap is refused
    at once); with ``model_slot``, holding a slot while it computes (a streamed ``fn`` holds
    one for each item it computes, not while the page draws it; a handler that takes its own,
    after work that needs none, passes False). Gradio passes the request to a parameter
    annotated ``gr.Request``; we add one at the end of ``fn``'s signature (it is not part of
    the API). The first argument, when it is a string, is the language of the message."""
    if jobs is None:
        return fn
    from decoding_lab.ui.common.runtime import model_slot as slot, model_slots
    held = slot if model_slot else contextlib.nullcontext
    sig = inspect.signature(fn)
    extra = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request)

    def split(args: tuple) -> tuple[tuple, Any, str]:
        *rest, request = args
        return tuple(rest), request, lang_of(tuple(rest), {})

    @contextlib.contextmanager
    def admitted(request: Any, lang: str) -> Iterator[Job]:
        """The tab's job slot, then the client's job in the fair share (refusals in ``lang``)."""
        with jobs.slot(getattr(request, "session_hash", None), lang):
            try:
                job_cm = model_slots().job(client_of(request))
                job = job_cm.__enter__()
            except UserError as e:
                raise user_error(lang, e) from None
            try:
                yield job
            finally:
                job_cm.__exit__(None, None, None)

    if inspect.isgeneratorfunction(fn):
        def gen_wrapper(*args: Any) -> Any:
            rest, request, lang = split(args)
            with admitted(request, lang) as job:
                with working_for(job):
                    items = fn(*rest)
                try:
                    while True:
                        with working_for(job), held():
                            try:
                                item = next(items)
                            except StopIteration:
                                return
                        yield item
                finally:
                    items.close()
        wrapper: Callable = gen_wrapper
    else:
        def call_wrapper(*args: Any) -> Any:
            rest, request, lang = split(args)
            with admitted(request, lang) as job, working_for(job), held():
                return fn(*rest)
        wrapper = call_wrapper
    functools.update_wrapper(wrapper, fn)
    del wrapper.__wrapped__  # type: ignore[attr-defined]  # gradio must read *this* signature
    wrapper.__signature__ = sig.replace(parameters=[*sig.parameters.values(), extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {"request": gr.Request}
    return wrapper
