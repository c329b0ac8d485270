"""Helpers shared by the app tests (not a conftest: imported explicitly).

``running_app()`` launches the real Blocks in this process on a free port, the way
PLATFORM.md describes, and closes it afterwards."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

#: Debian's chromium, started the way this closed network needs (no background connections).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
                 "--disable-extensions", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app() -> Iterator[tuple[object, str]]:
    from decoding_lab.models import DEFAULT_MODEL, get_model
    from decoding_lab.ui import build_demo, launch_kwargs

    get_model(DEFAULT_MODEL)  # load once up front so the first request does not time out
    demo = build_demo()
    demo.queue(default_concurrency_limit=2, max_size=64)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    try:
        yield demo, f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


def explorer_args(**overrides: object) -> dict[str, object]:
    """Keyword arguments for the Explorer's step-like endpoints (greedy by default)."""
    from decoding_lab.ui.common.state import DEFAULTS
    args: dict[str, object] = {"model": "smollm2-135m-instruct", "hub_id": "", "prompt": "What is the capital of France?",
                               "chat": "chat", **DEFAULTS, "top_n": 20}
    args["temperature"] = 0.0
    args.update(overrides)
    return args


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian chromium through playwright; skips the calling test when either is missing."""
    import pytest
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian chromium: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


SHOTS = Path("/tmp/shots")   # screenshots the browser tests write, to look at


def open_page(page: Any, url: str, tab: str | None = None, timeout_ms: int = 120_000) -> Any:
    """Open the app in ``page`` and wait for the Explorer (and, with ``tab``, switch to that tab
    and wait for its first control)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_default_timeout(timeout_ms)
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#step-btn")
    # the page has read its link and restored the lessons' progress (``page._wire_share_link``)
    page.wait_for_function("window.dlLinkRead === true && (window.dlLessonsReady === true || "
                           "!document.querySelector('#lesson-main'))")
    if tab:
        page.click(f"#tab-{tab}-button")
    return page

