"""Per-tab bounds in the app (``decoding_lab.ui.common.sessions``): idle state expires and is freed,
and one tab runs one model job at a time without slowing the other tabs."""

from __future__ import annotations

import gc
import inspect
import time
import weakref

import gradio as gr
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from conftest_app import explorer_args, running_app
from decoding_lab.ui.common.sessions import EXPIRED, SessionJobs, gated
from decoding_lab.ui.explorer import ExplorerSession

TTL = 3  # seconds, for this module's server only

STEP_OUT = ["dist", "funnel", "entropy", "numbers", "gen", "table", "candidates", "branches", "status", "share"]


# ----------------------------------------------------------------------------- no server
def test_session_jobs_refuse_one_over_the_limit():
    jobs = SessionJobs(limit=1)
    with jobs.slot("tab-a"):
        with pytest.raises(gr.Error, match="busy"):
            with jobs.slot("tab-a"):
                pass
        with jobs.slot("tab-b"):  # another tab is not affected
            assert jobs.running() == 2
    assert jobs.running() == 0 and not jobs._running  # a tab is forgotten when its jobs end
    with jobs.slot(None):  # no session (no browser, no client): not counted
        assert jobs.running() == 0


def test_gated_adds_a_request_parameter_the_api_does_not_show():
    def handler(lang: str, x: int) -> int:
        return x + 1

    def streamer(lang: str, n: int):
        yield from range(n)

    jobs = SessionJobs(limit=1)
    g = gated(handler, jobs)
    params = inspect.signature(g).parameters
    assert list(params) == ["lang", "x", "request"] and params["request"].annotation is gr.Request
    request = type("Req", (), {"session_hash": "tab-a"})()
    assert g("en", 1, request) == 2
    s = gated(streamer, jobs)
    assert inspect.isgeneratorfunction(s)
    it = s("en", 3, request)
    assert next(it) == 0 and jobs.running() == 1
    it.close()  # Stop closes the stream: the slot is free again
    assert jobs.running() == 0


# ----------------------------------------------------------------------------- a live server
@pytest.fixture(scope="module")
def app():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DECODING_LAB_SESSION_TTL", str(TTL))
        with running_app() as (demo, url):
            yield demo, url


def step(client: Client, **kw) -> dict:
    return dict(zip(STEP_OUT, client.predict(**explorer_args(**kw), api_name="/explorer_step")))


@pytest.mark.real
def test_idle_session_state_is_dropped_and_freed(app):
    demo, url = app
    client = Client(url, verbose=False)
    step(client)
    assert len(step(client)["table"]["data"]) == 2
    held = demo.state_holder.session_data[client.session_hash].state_data  # gradio's store, read only
    session = next(v for v in held.values() if isinstance(v, ExplorerSession))
    stepper, cache = weakref.ref(session.stepper), weakref.ref(session.stepper._cache)
    del session, held
    before = EXPIRED.count
    deadline = time.monotonic() + TTL + 15
    while (EXPIRED.count == before or stepper() is not None) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.25)
    assert EXPIRED.count > before, "gradio never called the state's delete_callback"
    assert stepper() is None and cache() is None, "the expired stepper (and its KV cache) is still alive"
    # The tab goes on: its next action starts afresh, as after Reset.
    assert len(step(client)["table"]["data"]) == 1


@pytest.mark.real
def test_one_tab_runs_one_model_job_at_a_time(app, monkeypatch):
    """A Play holds its tab's model slot: a second job of the tab is refused, another tab is served,
    and after Stop the tab steps on. The Play's steps after its first two wait for the test (the app
    runs in this process), so it cannot reach its 1,024-token end first on a slow machine."""
    import threading

    from decoding_lab.stepper import Stepper
    _, url = app
    client = Client(url, verbose=False)
    story = "Tell me a very long story about a lighthouse."
    story_ids = None
    release = threading.Event()
    real_step = Stepper.step

    def held_step(self, *args, **kwargs):
        if self.prompt_ids == story_ids and len(self.traces) >= 2:
            release.wait(120)
        return real_step(self, *args, **kwargs)

    from decoding_lab.models import get_model
    story_ids = get_model("smollm2-135m-instruct").encode_prompt(story, True)
    monkeypatch.setattr(Stepper, "step", held_step)
    job = client.submit(**explorer_args(prompt=story), api_name="/explorer_play")
    deadline = time.monotonic() + 60
    while not job.outputs() and time.monotonic() < deadline:  # playing: the job holds its slot
        time.sleep(0.1)
    assert job.outputs() and not job.done()
    with pytest.raises(AppError, match="busy"):  # a second job of the same tab, e.g. from a second click
        client.predict(prompt="Say hi.", ncols=2, max_new_tokens=4, api_name="/compare_run")
    other = Client(url, verbose=False)  # another tab is served meanwhile
    assert len(step(other)["table"]["data"]) == 1
    assert not job.done(), "the Play ended before Stop"
    monkeypatch.setattr(Stepper, "step", real_step)
    release.set()   # the held step goes on (a cancel waits for the step it is in) ...
    job.cancel()    # ... and Stop closes the stream and releases the slot, a few steps later at most
    deadline = time.monotonic() + 30
    while True:
        try:
            rows = step(client, prompt=story)["table"]["data"]   # the same prompt: the same run goes on
            break
        except AppError as e:
            assert "busy" in str(e) and time.monotonic() < deadline, e
            time.sleep(0.2)
    assert len(rows) >= 2  # the played steps are still there, and one more


@pytest.mark.real
def test_an_expired_session_says_so(monkeypatch, smollm):
    """After the TTL the tab's stepper is gone; its next Step starts at step 0 and says why."""
    from conftest_app import explorer_args as args
    from decoding_lab.ui.explorer import handlers
    from decoding_lab.ui.explorer.request import ExplorerRequest
    said: list[str] = []
    monkeypatch.setattr(handlers.gr, "Warning", lambda text, *a, **k: said.append(text))
    req = ExplorerRequest.from_inputs({"lang": "en", **args()})
    fresh = handlers.prepare(req, None, started=False)
    assert said == [] and fresh.stepper.tokens == []
    handlers.prepare(req, None, started=True)
    assert len(said) == 1 and "expired" in said[0] and "step 0" in said[0]
    req_zh = ExplorerRequest.from_inputs({"lang": "zh", **args()})
    handlers.prepare(req_zh, None, started=True)
    assert "过期" in said[-1]
