"""The Explorer's round trip through gradio against the core step it wraps (``bench --only ui``,
which runs ``python -m decoding_lab.ui.bench_roundtrip MODEL`` in a fresh process: the core's
bench never imports the UI).

One Step click in the app runs the core (``Stepper.step`` plus the H(T) curve the chart
shows), then draws every view and sends it through gradio's queue to the page. This
section launches the real app in this process on a loopback port and steps it the way a
browser does: a POST to the queue, then the answer pushed back on the session's event
stream (``PushClient``). Interleaved with it round by round, the same core step runs on an
identical session in the same process. The ratio of the medians is the price of the UI
layer; its target is 1.3 (the UI adds under a third of a model step).

Why not ``gradio_client``: it reads the event stream in a thread and *polls* what arrived
every 50 ms, so each call waits 25-75 ms that neither the server nor a browser spends (a
no-op endpoint took 75 ms through it here). The section reports that figure too
(``gradio_client_s``), beside the push round trip.

"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import sys
import time
import uuid
from typing import Any, Iterator

from decoding_lab.settings import SamplingSettings
from decoding_lab.backends.base import LanguageModel

PROMPT = "Tell me a story about a lighthouse keeper."
#: (name, Explorer controls): greedy, and a sampling chain with two truncations.
CASES = (("greedy", {"temperature": 0.0}),
         ("T 1.5, top-p 0.9, min-p 0.05", {"temperature": 1.5, "top_p": 0.9, "min_p": 0.05, "seed": 0}))
TARGET = 1.3


class PushClient:
    """The browser's protocol (gradio's "sse_v3") without a browser: join the queue with a
    POST, read the session's event stream until this event completes. One session, one
    event at a time, loopback only; every read has a timeout."""

    def __init__(self, url: str, timeout: float = 120.0) -> None:
        import httpx
        self.url, self.timeout = url, timeout
        self.http = httpx.Client(timeout=timeout)
        config = self.http.get(url + "config").json()
        self.components = {c["id"]: c for c in config["components"]}
        self.deps = {d.get("api_name"): (i, d) for i, d in enumerate(config["dependencies"])}
        self.session_hash = uuid.uuid4().hex

    def predict(self, api_name: str, values: list[Any]) -> list[Any]:
        """Call ``api_name`` with its visible inputs in order (states are filled with None, as
        gradio_client does); returns the outputs, or raises with the app's error message."""
        fn_index, dep = self.deps[api_name]
        it = iter(values)
        data = [None if self.components[c]["type"] == "state" else next(it) for c in dep["inputs"]]
        join = self.http.post(self.url + "gradio_api/queue/join",
                              json={"data": data, "fn_index": fn_index, "session_hash": self.session_hash,
                                    "event_data": None, "trigger_id": None})
        if join.status_code == 422:   # refused by the event's validator before it was queued
            bad = [f"{d.get('parameter_name')}: {d.get('message')}" for d in join.json().get("detail", [])
                   if isinstance(d, dict) and d.get("is_valid") is False]
            raise RuntimeError(f"{api_name}: {'; '.join(bad) or join.text[:200]}")
        join.raise_for_status()
        event_id = join.json()["event_id"]
        deadline = time.monotonic() + self.timeout
        with self.http.stream("GET", self.url + "gradio_api/queue/data",
                              params={"session_hash": self.session_hash}) as stream:
            for line in stream.iter_lines():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{api_name}: no answer in {self.timeout:.0f} s")
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") == event_id and msg.get("msg") == "process_completed":
                    out = msg.get("output", {})
                    if not msg.get("success", False) or "error" in out:
                        raise RuntimeError(f"{api_name}: {out.get('error')}")
                    return out["data"]
        raise RuntimeError(f"{api_name}: the event stream closed before the answer")

    def close(self) -> None:
        self.http.close()


@contextlib.contextmanager
def _app() -> Iterator[str]:
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from decoding_lab.ui import build_demo, launch_kwargs
    demo = build_demo()
    demo.queue(default_concurrency_limit=2, max_size=64)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        with contextlib.redirect_stdout(sys.stderr):   # gradio prints "Closing server …"; stdout is the report
            demo.close()


def _controls(model: str, overrides: dict[str, Any]) -> dict[str, Any]:
    from decoding_lab.ui.common.state import DEFAULTS
    return {"model": model, "hub_id": "", "prompt": PROMPT, "chat": "chat", **DEFAULTS, "top_n": 20, **overrides}


def ui_roundtrip(lm: LanguageModel, steps: int = 24, rounds: int = 3) -> list[dict[str, Any]]:
    """Per case: median seconds of one Step through the app (push protocol) and of the core
    step, their ratio, and the same Step through ``gradio_client`` for comparison."""
    from gradio_client import Client

    from decoding_lab.ui.common.state import SETTING_KEYS, settings_from_values
    from decoding_lab.ui.explorer.request import new_session

    rows = []
    with _app() as url:
        info = Client(url, verbose=False).view_api(print_info=False, return_format="dict")["named_endpoints"]
        params = info["/explorer_step"]["parameters"]     # the visible inputs, in the endpoint's order
        for name, overrides in CASES:
            controls = _controls(lm.name, overrides)
            values = [controls[p["parameter_name"]] if p["parameter_name"] in controls else p["parameter_default"]
                      for p in params]
            settings: SamplingSettings = settings_from_values({k: controls[k] for k in SETTING_KEYS})
            ui_times: list[float] = []
            core_times: list[float] = []
            for _ in range(rounds):
                client = PushClient(url)
                client.predict("explorer_reset", values)
                session = new_session(lm.name, PROMPT, "chat", settings, 20)
                for _ in range(steps):    # alternate: one Step through the app, one core step
                    if session.stepper.finished:
                        break
                    t0 = time.perf_counter()
                    client.predict("explorer_step", values)
                    ui_times.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    session.step()
                    core_times.append(time.perf_counter() - t0)
                client.close()
            polled = Client(url, verbose=False)     # the polling client, a few steps for the record
            polled.predict(**controls, api_name="/explorer_reset")
            polled_times = []
            for _ in range(min(steps, 8)):
                t0 = time.perf_counter()
                polled.predict(**controls, api_name="/explorer_step")
                polled_times.append(time.perf_counter() - t0)
            polled.close()
            ui, core = statistics.median(ui_times), statistics.median(core_times)
            rows.append({"case": name, "ui_step_s": ui, "core_step_s": core, "ratio": ui / core, "target": TARGET,
                         "gradio_client_s": statistics.median(polled_times), "steps": len(ui_times)})
    return rows


def main(argv: list[str] | None = None) -> None:
    """``python -m decoding_lab.ui.bench_roundtrip [MODEL] [--steps N] [--rounds R]``: the rows as JSON."""
    import argparse

    from decoding_lab.models import DEFAULT_MODEL, get_model
    p = argparse.ArgumentParser(prog="python -m decoding_lab.ui.bench_roundtrip")
    p.add_argument("model", nargs="?", default=DEFAULT_MODEL)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args(argv)
    rows = ui_roundtrip(get_model(a.model), steps=a.steps, rounds=a.rounds)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
