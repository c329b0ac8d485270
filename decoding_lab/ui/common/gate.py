"""The door in front of gradio: a cap on request bodies, and a per-client rate of new events.

Gradio keeps one queue for everybody (``DECODING_LAB_QUEUE_SIZE`` places). Anyone can join it
with made-up session ids, so one client sending a burst of joins fills it, and every other
visitor is then told "Queue is full" for minutes. The model slots behind the queue are shared
fairly (``decoding_lab.fair_share``): a client over its job cap is refused as soon as its event
starts, so its joins leave the queue quickly. This middleware stops the burst before it gets
that far:

* **Starts per client.** A request that starts an event (``POST …/queue/join``, and the REST
  form ``POST …/call/<name>``) is counted for its client (the peer's address, or what a trusted
  proxy saw: ``fair_share.client_key``). More than ``DECODING_LAB_CLIENT_REQUESTS`` in any
  ``WINDOW_S`` seconds gets ``HTTP 429`` with one line, at once, and takes no place in the
  queue; the other visitors keep theirs. A page opening fires a handful of events and a
  person clicks a few times a second at most, far below the public default of 120 in 10 s.
* **Body size.** A body longer than ``DECODING_LAB_REQUEST_BYTES`` gets ``HTTP 413``, whether it
  says its length or streams it (a 100 MB join body was accepted and held in memory). The
  largest legal body is a prompt of ``DECODING_LAB_MAX_PROMPT_TOKENS`` × 16 characters (each
  up to 4 bytes of UTF-8 and 6 characters of JSON escape) plus the settings: the default
  1 MB is about twice that.

A pure ASGI middleware (not Starlette's ``BaseHTTPMiddleware``, which buffers and breaks
gradio's event streams); it only reads the request line, the headers and the body's length.

    >>> rate = StartRate(limit=2, window_s=10.0)
    >>> [rate.allow("a", now) for now in (0.0, 1.0, 2.0)], rate.allow("b", 2.0), rate.allow("a", 10.5)
    ([True, True, False], True, True)
"""

from __future__ import annotations

import collections
import json
import threading
import time
from typing import Any, Awaitable, Callable

from decoding_lab import limits
from decoding_lab.errors import MESSAGES
from decoding_lab.fair_share import client_key

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: The window over which a client's event starts are counted.
WINDOW_S = 10.0
#: Clients remembered at most (each a short deque of times); the idlest are forgotten first.
MAX_CLIENTS = 10_000


class StartRate:
    """Sliding-window counts of event starts per client (thread-safe, bounded)."""

    def __init__(self, limit: int, window_s: float = WINDOW_S) -> None:
        self.limit, self.window_s = limit, window_s
        self._starts: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def allow(self, client: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._starts.pop(client, None) or collections.deque()
            while times and times[0] <= now - self.window_s:
                times.popleft()
            ok = len(times) < self.limit
            if ok:
                times.append(now)
            self._starts[client] = times           # most recently seen last
            while len(self._starts) > MAX_CLIENTS:
                self._starts.popitem(last=False)
            return ok


def starts_an_event(method: str, path: str) -> bool:
    """Whether a request starts an event in gradio's queue (a join, or the REST ``/call/<name>``)."""
    return method == "POST" and (path.endswith("/queue/join") or "/call/" in path)


class ClientGate:
    """ASGI middleware: see the module docstring. ``lim``: the limits (read now when None)."""

    def __init__(self, app: Any, lim: limits.Limits | None = None) -> None:
        self.app = app
        self.lim = lim or limits.current()
        self.rate = StartRate(self.lim.client_requests) if self.lim.client_requests else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        cap = self.lim.request_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await _refuse(send, 413, MESSAGES["request_too_large"].format(
                got=declared, cap=cap, setting=f"{limits.PREFIX}REQUEST_BYTES"))
            return
        if self.rate is not None and starts_an_event(scope.get("method", ""), scope.get("path", "")):
            peer = (scope.get("client") or (None, None))[0]
            client = client_key(peer, headers.get("x-forwarded-for"), self.lim.proxy_hops or 0)
            if not self.rate.allow(client):
                await _refuse(send, 429, MESSAGES["too_many_requests"].format(
                    n=self.rate.limit, window=f"{self.rate.window_s:g}", setting=f"{limits.PREFIX}CLIENT_REQUESTS"))
                return
        await self.app(scope, _capped(receive, cap), send)


def _capped(receive: Receive, cap: int) -> Receive:
    """``receive`` that ends the request as a disconnect once more than ``cap`` body bytes came
    (a body with no length, streamed in chunks); the route then answers nothing more."""
    seen = 0

    async def wrapped() -> dict[str, Any]:
        nonlocal seen
        message = await receive()
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > cap:
                return {"type": "http.disconnect"}
        return message
    return wrapped


async def _refuse(send: Send, status: int, text: str) -> None:
    body = json.dumps({"detail": text}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def middleware() -> list[Any]:
    """``launch(app_kwargs={"middleware": middleware()})``: the gate, with the limits of now."""
    from starlette.middleware import Middleware
    return [Middleware(ClientGate, lim=limits.current())]
