"""HTTP to a model server: a timeout on every request, a bounded number of retries, one-line errors.

A teaching app must never hang on a slow server or loop on a dead one, so each call has

* a per-request timeout (``Endpoint.timeout_s``) and a total deadline for all tries together
  (``(retries + 1) * timeout_s`` plus the backoff sleeps, never more);
* at most ``Endpoint.retries`` retries, only for failures that a retry can cure (connection
  refused or reset, timeout, HTTP 502/503/504), with a short doubling backoff (0.2 s, 0.4 s …);
* a ``ModelError`` whose message says which endpoint and what went wrong: server down, too
  slow, HTTP status with the first line of the body, or an answer that is not JSON;
* the body read as a stream against the same deadline (a server that trickles a byte at a time
  is cut off when the try's time is up, not after a read timeout per byte) and at most
  ``MAX_RESPONSE_BYTES`` after decompression (a small gzip body that inflates to gigabytes is
  refused, not held in memory).

The bearer key is read from the environment variable the endpoint names (``key_env``) at
each request, so rotating it needs no restart and the key is never stored in a config file.
Proxies from the environment are not used (``trust_env=False``): endpoints are reached directly.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from decoding_lab.errors import ModelError
from decoding_lab.remote.config import Endpoint

__all__ = ["RemoteError", "Client", "BACKOFF_S", "MAX_RESPONSE_BYTES"]

BACKOFF_S = 0.2            # first pause between tries; doubles each time
_RETRY_STATUS = {502, 503, 504}  # gateway / overloaded / loading: a later try may succeed
#: The largest answer read, decompressed: a whole-vocabulary log-probability list of a 262,144-token
#: model is about 10 MB of JSON, a top-20 answer a few kilobytes.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
_ERROR_BYTES = 4096        # of an error answer, enough for its first line


class _TooSlow(Exception):
    """The body was still arriving when the try's time ran out."""


class _TooLarge(Exception):
    """The body passed ``MAX_RESPONSE_BYTES``."""


class RemoteError(ModelError):
    """A model server could not be used (down, slow, an HTTP error, an unreadable answer)."""


def _first_line(text: str, limit: int = 200) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Client:
    """One endpoint's HTTP connection pool (thread-safe; shared by every cache of a model)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._http = httpx.Client(base_url=endpoint.base_url, trust_env=False, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def _where(self, method: str, path: str) -> str:
        return f"endpoint {self.endpoint.name!r} ({method} {self.endpoint.base_url}{path})"

    def request(self, method: str, path: str, payload: dict | None = None, retries: int | None = None,
                timeout_s: float | None = None) -> Any:
        """Send one JSON request (retrying as described above) and return the decoded JSON body."""
        ep = self.endpoint
        tries = 1 + (ep.retries if retries is None else retries)
        timeout = ep.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + tries * timeout + BACKOFF_S * (2 ** tries)
        headers = {"Accept": "application/json"}
        key = ep.key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        where = self._where(method, path)
        last = ""
        for attempt in range(tries):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                status, reason, body = self._send(method, path, payload, headers, min(timeout, left),
                                                  time.monotonic() + min(timeout, left))
            except httpx.ConnectError as e:
                refused = "refused" in str(e).lower() or "errno 111" in str(e).lower()
                last = (f"{where} is not reachable: "
                        f"{'connection refused (is the server running?)' if refused else _first_line(str(e), 120)}")
            except (httpx.TimeoutException, _TooSlow):
                last = f"{where} did not answer within {min(timeout, left):.1f} s"
            except _TooLarge:
                raise RemoteError(f"{where} answered with more than {MAX_RESPONSE_BYTES // 2**20} MB; "
                                  "not read further") from None
            except httpx.TransportError as e:  # reset, broken pipe, protocol error, a bad compressed body
                last = f"{where} failed: {type(e).__name__} {_first_line(str(e), 120)}"
            else:
                text = body.decode("utf-8", "replace")
                if 300 <= status < 400:          # redirects are not followed: the endpoint is what was configured
                    raise RemoteError(f"{where} answered HTTP {status} (a redirect), which is not followed: "
                                      "configure the address it points to")
                if status >= 400:
                    last = f"{where} answered HTTP {status}: {_first_line(text) or reason}"
                    if status not in _RETRY_STATUS:
                        raise RemoteError(last)
                else:
                    try:
                        return json.loads(body)
                    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                        raise RemoteError(f"{where} answered with something that is not JSON: "
                                          f"{_first_line(text, 80)!r}") from None
            if attempt + 1 < tries:
                time.sleep(min(BACKOFF_S * (2 ** attempt), max(0.0, deadline - time.monotonic())))
        raise RemoteError(f"{last} (after {tries} {'try' if tries == 1 else 'tries'})")

    def _send(self, method: str, path: str, payload: dict | None, headers: dict[str, str], timeout: float,
              deadline: float) -> tuple[int, str, bytes]:
        """One try: (status, reason, body). The body is read chunk by chunk, decompressed, until
        ``deadline`` (``_TooSlow``) or ``MAX_RESPONSE_BYTES`` (``_TooLarge``); of an error answer
        only its first few kilobytes."""
        with self._http.stream(method, path, json=payload, headers=headers,
                               timeout=httpx.Timeout(timeout)) as response:
            cap = _ERROR_BYTES if response.status_code >= 300 else MAX_RESPONSE_BYTES
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > cap:
                    if cap == _ERROR_BYTES:          # enough of an error to name it
                        chunks.append(chunk[: max(0, cap - (size - len(chunk)))])
                        break
                    raise _TooLarge
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise _TooSlow
            return response.status_code, response.reason_phrase, b"".join(chunks)

    def post(self, path: str, payload: dict, **kw: Any) -> Any:
        return self.request("POST", path, payload, **kw)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, None, **kw)
