"""The HTTP client against tiny loopback servers: down, silent, failing, not JSON; all bounded in time."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from decoding_lab.remote.client import Client, RemoteError
from decoding_lab.remote.config import parse_endpoints


def ep(url: str, **kw):
    entry = {"name": "t", "base_url": url, "model": "m", "api": "openai", "tokenizer": "smollm2-135m-instruct", **kw}
    return parse_endpoints(json.dumps([entry]))[0]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextmanager
def http_server(replies: list[tuple[int, str]]):
    """Answers each request with the next (status, body); records what it was sent."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            status, text = replies[min(len(seen), len(replies)) - 1]
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_connection_refused_says_server_down_quickly():
    client = Client(ep(f"http://127.0.0.1:{closed_port()}", retries=2, timeout_s=2))
    t0 = time.monotonic()
    with pytest.raises(RemoteError, match=r"not reachable: connection refused .*after 3 tries"):
        client.post("/v1/completions", {})
    assert time.monotonic() - t0 < 5


def test_a_server_that_never_answers_times_out_within_the_bound():
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the handshake; nobody ever reads or writes
    try:
        client = Client(ep(f"http://127.0.0.1:{silent.getsockname()[1]}", retries=1, timeout_s=0.5))
        t0 = time.monotonic()
        with pytest.raises(RemoteError, match=r"did not answer within 0\.5 s \(after 2 tries\)"):
            client.post("/v1/completions", {})
        assert time.monotonic() - t0 < 3
    finally:
        silent.close()


def test_http_500_gives_status_and_first_line_without_retrying():
    with http_server([(500, "\nKeyError: 'prompt'\nTraceback ...")]) as (url, seen):
        with pytest.raises(RemoteError, match=r"HTTP 500: KeyError: 'prompt'$"):
            Client(ep(url, retries=2)).post("/v1/completions", {"x": 1})
        assert len(seen) == 1


def test_503_is_retried_then_succeeds_and_the_key_is_sent(monkeypatch):
    monkeypatch.setenv("LAB_TEST_KEY", "k-123")
    with http_server([(503, "loading"), (200, '{"ok": true}')]) as (url, seen):
        answer = Client(ep(url, retries=2, key_env="LAB_TEST_KEY")).post("/v1/completions", {"a": 1})
    assert answer == {"ok": True} and len(seen) == 2
    assert seen[0]["auth"] == "Bearer k-123" and json.loads(seen[0]["body"]) == {"a": 1}


def test_retries_are_capped_and_not_json_is_named():
    with http_server([(503, "busy")]) as (url, seen):
        with pytest.raises(RemoteError, match=r"HTTP 503: busy \(after 2 tries\)"):
            Client(ep(url, retries=1)).post("/v1/completions", {})
        assert len(seen) == 2
    with http_server([(200, "<html>proxy login</html>")]) as (url, _):
        with pytest.raises(RemoteError, match="not JSON: '<html>proxy login</html>'"):
            Client(ep(url, retries=0)).post("/v1/completions", {})


@contextmanager
def raw_server(handle):
    """A loopback server whose handler ``handle(wfile)`` writes the whole answer itself."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                handle(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up: what the test wants

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_trickles_its_body_is_cut_off_at_the_deadline():
    """Headers at once, then a byte every 50 ms for up to 20 s: each read is quick, so only a
    deadline over the whole body ends it (before, the client read all of it, then found no JSON)."""
    def trickle(h):
        h.send_response(200)
        h.send_header("Content-Length", "400")
        h.end_headers()
        for _ in range(400):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.05)

    with raw_server(trickle) as url:
        client = Client(ep(url, retries=0, timeout_s=1))
        with pytest.raises(RemoteError, match=r"did not answer within 1\.0 s"):
            client.post("/v1/completions", {})


def test_a_compressed_body_that_inflates_past_the_cap_is_refused():
    import gzip

    from decoding_lab.remote import client as C
    bomb = gzip.compress(b"[" + b" " * (C.MAX_RESPONSE_BYTES + 1024) + b"]", compresslevel=9)
    assert len(bomb) < C.MAX_RESPONSE_BYTES // 100      # small on the wire

    def send(h):
        h.send_response(200)
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(bomb)))
        h.end_headers()
        h.wfile.write(bomb)

    with raw_server(send) as url:
        with pytest.raises(RemoteError, match=r"more than 32 MB"):
            Client(ep(url, retries=0, timeout_s=30)).post("/v1/completions", {})


def test_a_redirect_is_named_and_not_followed():
    def redirect(h):
        h.send_response(302)
        h.send_header("Location", "http://127.0.0.1:9/elsewhere")
        h.send_header("Content-Length", "0")
        h.end_headers()

    with raw_server(redirect) as url:
        with pytest.raises(RemoteError, match=r"HTTP 302 \(a redirect\), which is not followed"):
            Client(ep(url, retries=0, timeout_s=5)).post("/v1/completions", {})
