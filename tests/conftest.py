"""Shared fixtures. Real-model fixtures load each bundled model once per test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")       # tests never reach the Hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tiny_model import make_tiny_lm  # noqa: E402

# Property tests explore new random cases on a developer's machine; in CI (CI=true) they replay
# the same derived cases every run, so a submission fails for its own change and not for a case
# that happened to be drawn that day. A case found locally goes in the test as an @example.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """Two shared cores: one torch thread is several times faster than two fighting each other
    (and than two fighting the app server or the browser in the same test)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_lm():
    return make_tiny_lm()


@pytest.fixture(scope="session")
def smollm():
    from decoding_lab.models import get_model
    return get_model("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def gemma():
    from decoding_lab.models import get_model
    return get_model("gemma-3-270m")


@pytest.fixture(scope="session")
def vllm_servers():
    """(processed, raw) base URLs of two vLLM servers on 127.0.0.1 with the bundled SmolLM2, alike but
    for what their log-probabilities report (``conftest_app.loopback_vllm``): ``processed_logprobs``
    and ``raw_logits``. They start at once (about a minute) and serve the whole run: every test that
    asks for them is put in one xdist group (``lanes.py``), so one process starts them once."""
    import contextlib
    from concurrent.futures import ThreadPoolExecutor

    from conftest_app import loopback_vllm

    def start(mode: str) -> tuple[contextlib.AbstractContextManager, str]:
        """One server and its URL; a second try if the first exits while starting (its engine picks
        its own internal ports, which another process can take first on a busy machine)."""
        for attempt in (1, 2):
            manager = loopback_vllm(mode)
            try:
                return manager, manager.__enter__()
            except pytest.fail.Exception:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    with contextlib.ExitStack() as stack, ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(start, mode) for mode in ("processed_logprobs", "raw_logits")]
        started = []
        for f in futures:   # wait for both; every server that started is stopped, whatever failed
            if f.exception() is None:
                manager, url = f.result()
                stack.push(manager.__exit__)
                started.append(url)
        for f in futures:
            if f.exception() is not None:
                raise f.exception()
        yield tuple(started)


# ----------------------------------------------------------------------------- the app, a client, a browser
# One app and one Chromium for the whole run (the app lane): starting either costs seconds, and
# gradio already keeps every visitor's state per session, so each test isolates itself by opening
# its own session (a new ``Client``) or its own browser context (``page``). A module that needs
# another configuration (a short session TTL, configured endpoints, tighter limits read at build
# time) starts its own app with ``conftest_app.running_app()``.
@pytest.fixture(scope="session")
def app_url():
    from conftest_app import running_app
    with running_app() as (_, url):
        yield url


@pytest.fixture
def client(app_url):
    from gradio_client import Client
    return Client(app_url, verbose=False)  # one client = one browser tab = one session


@pytest.fixture(scope="session")
def browser():
    from conftest_app import chromium
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser, app_url):
    """A fresh browser context and tab (1440 x 1000) on the app, opened and ready."""
    from conftest_app import new_context, open_page
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
    pg = open_page(ctx.new_page(), app_url)
    yield pg
    ctx.close()


@pytest.fixture
def blank_page(browser, app_url):
    """A fresh browser context and tab (1440 x 1000) not yet on the app: for a test that opens
    its own address (``conftest_app.open_page``), so the page is loaded once, not twice."""
    from conftest_app import new_context
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
    yield ctx.new_page()
    ctx.close()
