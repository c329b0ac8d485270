"""A fair share in the app, without a model: the handlers' wrapper (``sessions.gated``) counts
jobs by client address, not by the session id a caller picks; a streamed job holds a slot only
while it computes an item; and the gate in front of gradio (``common.gate``) caps bodies and
event starts per client."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import gradio as gr
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from decoding_lab import limits
from decoding_lab.fair_share import FairShare, Quota
from decoding_lab.ui.common import runtime
from decoding_lab.ui.common.gate import ClientGate
from decoding_lab.ui.common.sessions import SessionJobs, client_of, gated


def request(session: str, host: str, forwarded: str | None = None) -> SimpleNamespace:
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return SimpleNamespace(session_hash=session, client=SimpleNamespace(host=host), headers=headers)


@pytest.fixture
def share(monkeypatch) -> FairShare:
    """The process's slots replaced by one slot shared by clients of at most two jobs each."""
    fresh = FairShare(Quota(slots=1, client_slots=1, client_jobs=2))
    monkeypatch.setattr(runtime, "_share", fresh)
    return fresh


def test_new_session_ids_do_not_buy_a_client_more_jobs(share):
    """The attack: a fresh session id per request. The cap follows the address."""
    entered, release = threading.Event(), threading.Event()

    def hold(lang: str) -> str:
        entered.set()
        release.wait(20)
        return "done"

    g = gated(hold, SessionJobs(limit=1))
    results: list[object] = []
    threads = [threading.Thread(target=lambda i=i: results.append(g("en", request(f"s{i}", "6.6.6.6"))))
               for i in range(2)]
    for th in threads:
        th.start()
    entered.wait(20)
    try:
        while share.jobs_of("6.6.6.6") < 2:
            threading.Event().wait(0.01)
        with pytest.raises(gr.Error, match="already has 2 model job"):
            g("en", request("s-new", "6.6.6.6"))            # a third session id from the same address
        with pytest.raises(gr.Error, match="这个地址已有 2 个模型任务"):
            g("zh", request("s-new2", "6.6.6.6"))
        assert share.jobs_of("7.7.7.7") == 0
    finally:
        release.set()
        for th in threads:
            th.join(20)
    assert results == ["done", "done"]


def test_a_streamed_job_holds_a_slot_only_while_it_computes_an_item(share):
    seen: list[int] = []

    def stream(lang: str, n: int):
        for i in range(n):
            seen.append(share.running())     # computing: the slot is held
            yield i

    s = gated(stream, SessionJobs(limit=1))
    it = s("en", 3, request("tab", "1.2.3.4"))
    assert next(it) == 0
    assert share.running() == 0 and share.jobs_of("1.2.3.4") == 1   # drawn by the page: the slot is free
    assert list(it) == [1, 2]
    assert seen == [1, 1, 1] and share.jobs_of("1.2.3.4") == 0


def test_the_client_is_the_address_a_trusted_proxy_saw(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert client_of(request("s", "10.0.0.1", "1.1.1.1")) == "10.0.0.1"       # no proxy: the header is ignored
    monkeypatch.setenv("DECODING_LAB_PROXY_HOPS", "1")
    assert client_of(request("s", "10.0.0.1", "9.9.9.9, 1.1.1.1")) == "1.1.1.1"
    monkeypatch.delenv("DECODING_LAB_PROXY_HOPS")
    monkeypatch.setenv("SPACE_ID", "someone/space")                           # a Space has one proxy in front
    assert limits.current().proxy_hops == 1


def test_public_mode_shares_the_slots_and_budgets_each_job(monkeypatch):
    monkeypatch.setenv("DECODING_LAB_CONCURRENCY", "4")
    assert limits.current().quota() == Quota(slots=4, client_slots=4)         # a machine of one's own: no caps
    monkeypatch.setenv("DECODING_LAB_PUBLIC", "1")
    q = limits.current().quota()
    assert (q.client_slots, q.client_jobs, q.job_seconds, q.job_passes) == (2, 3, 120.0, 2048)
    monkeypatch.setenv("DECODING_LAB_CLIENT_JOBS", "0")                       # 0: no cap
    assert limits.current().quota().client_jobs is None
    monkeypatch.setenv("DECODING_LAB_JOB_SECONDS", "-1")
    with pytest.raises(limits.LimitsError, match="DECODING_LAB_JOB_SECONDS must be at least 0"):
        limits.current()


# ----------------------------------------------------------------------------- the gate
def gated_app(**env: str) -> TestClient:
    async def echo(req: Request) -> JSONResponse:
        body = await req.body()
        return JSONResponse({"bytes": len(body)})

    inner = Starlette(routes=[Route("/gradio_api/queue/join", echo, methods=["POST"]),
                              Route("/gradio_api/other", echo, methods=["POST"])])
    lim = limits.Limits.from_env({f"DECODING_LAB_{k.upper()}": v for k, v in env.items()})
    return TestClient(ClientGate(inner, lim))


def test_the_gate_refuses_a_body_over_the_cap_by_its_length_or_as_it_streams():
    client = gated_app(request_bytes="1000")
    assert client.post("/gradio_api/other", content=b"x" * 1000).json() == {"bytes": 1000}
    big = client.post("/gradio_api/other", content=b"x" * 1001)
    assert big.status_code == 413 and "at most 1000 are accepted" in big.json()["detail"]

    def chunks():                      # no Content-Length: the body streams
        for _ in range(20):
            yield b"x" * 100
    with pytest.raises(Exception):     # the route sees a disconnect and answers nothing
        client.post("/gradio_api/other", content=chunks())


def test_the_gate_limits_event_starts_per_client_and_leaves_the_others_alone():
    client = gated_app(client_requests="3", proxy_hops="1")
    flood = {"x-forwarded-for": "6.6.6.6"}
    codes = [client.post("/gradio_api/queue/join", content=b"{}", headers=flood).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    refused = client.post("/gradio_api/queue/join", content=b"{}", headers=flood)
    assert "too many requests from this address" in refused.json()["detail"]
    victim = {"x-forwarded-for": "7.7.7.7"}
    assert client.post("/gradio_api/queue/join", content=b"{}", headers=victim).status_code == 200
    assert client.post("/gradio_api/other", content=b"{}", headers=flood).status_code == 200   # not an event start


def test_outside_public_mode_event_starts_are_not_counted():
    client = gated_app()
    assert all(client.post("/gradio_api/queue/join", content=b"{}").status_code == 200 for _ in range(200))
