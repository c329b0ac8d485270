"""A class at once: one teacher (a real Chromium on the projector page) and ``--students`` students
(gradio_client sessions, each a phone) on ``app.py`` with the bundled model.

    python scripts/class_load.py                                  # 40 students, 10 stepping, in process
    python scripts/class_load.py --engine llama-server            # the Explorer steps llama.cpp's server
    python scripts/class_load.py --students 40 --steppers 10 --json

The teacher opens a class on lesson 5's last screen (its prediction and two checks: three
questions) and asks them one after another. Every student joins with the code and follows the
room (one event stream each, as a browser does), waits a think time for each question (uniform
in ``--think`` seconds), answers it with a confidence, and ``--steppers`` of them also step the
Explorer between questions with a pause between clicks (uniform in ``--pause`` seconds), the way
a student explores the screen's set-up.

Measured:

* **answer → projector**: from a student's answer request leaving to the projector's chart
  showing that many answers (the teacher page records each change of its chart with a
  MutationObserver; both clocks are this machine's);
* **Step latency** of the students who step, and of the same Step on an otherwise idle server
  before the class starts (the baseline);
* errors of any kind (a refused join, an answer not recorded, a failed step).

With ``--engine llama-server`` the script starts llama.cpp's ``llama-server`` on the bundled GGUF
(four slots, one thread, as the tests do) and points the Explorer at it (``remote:llama``): the
server batches the students' steps itself. Exit status 0 when nothing failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "tests")]

from load_test import start_server  # noqa: E402

LESSON, SCREEN = 5, 2           # three questions on one screen: a prediction and two checks
MODEL = "smollm2-135m-instruct"
PROMPT = "Tell me a story about a dog."


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


@contextlib.contextmanager
def engine(kind: str) -> Iterator[dict[str, str]]:
    """The app's environment for ``kind``: nothing for the in-process model, a configured
    llama-server for ``llama-server``."""
    if kind == "local":
        yield {}
        return
    from conftest_app import llama_server_endpoints, loopback_llama_server
    with loopback_llama_server() as url:
        yield {"DECODING_LAB_ENDPOINTS": llama_server_endpoints(url)}


class Projector:
    """The teacher: a Chromium page in teacher mode that opens the class and asks its questions."""

    OBSERVE = """() => { window.dlChart = []; const seen = () => {
        const p = document.querySelector('#class-plot .js-plotly-plot');
        if (!p || !p.data || !p.data.length) return;
        const t = p.data[p.data.length - 1]; const n = (t.y || []).reduce((a, b) => a + b, 0);
        const last = window.dlChart[window.dlChart.length - 1];
        if (!last || last[1] !== n) window.dlChart.push([Date.now() / 1000, n]); };
      new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, attributes: true});
      setInterval(seen, 50); }"""

    def __init__(self, url: str) -> None:
        from playwright.sync_api import sync_playwright
        from conftest_app import CHROMIUM, CHROMIUM_ARGS
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1366, "height": 900})
        self.page.set_default_timeout(180_000)
        self.page.goto(f"{url}?tab=lessons&lesson={LESSON}&screen={SCREEN}&teacher=1")
        self.page.wait_for_selector("#class-open", state="visible")
        self.page.click("#class-open")
        self.page.wait_for_selector("#class-code-shown")
        self.code = self.page.inner_text("#class-code-shown").strip()
        self.page.evaluate(self.OBSERVE)

    def questions(self) -> list[str]:
        return self.page.eval_on_selector_all("#class-asked input", "els => els.map(e => e.value)")

    def ask(self, i: int) -> None:
        self.page.locator("#class-asked input").nth(i).check()
        self.page.wait_for_function("(i) => document.querySelectorAll('#class-asked input')[i].checked", arg=i)
        time.sleep(0.5)   # the chart of the new question is drawn before its answers are counted
        self.page.evaluate("window.dlChart = []")

    def chart(self) -> list[tuple[float, int]]:
        return [(float(t), int(n)) for t, n in self.page.evaluate("window.dlChart")]

    def count_text(self) -> str:
        return self.page.inner_text("#class-count")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.page.click("#class-close")
            time.sleep(1.0)
        self.browser.close()
        self._pw.stop()


class Student(threading.Thread):
    def __init__(self, index: int, url: str, code: str, asked: list[threading.Event], args: argparse.Namespace,
                 model: str) -> None:
        super().__init__(daemon=True)
        self.index, self.url, self.code, self.asked, self.args, self.model = index, url, code, asked, args, model
        self.rng = random.Random(index)
        self.steps: list[float] = []
        self.answers: list[tuple[int, float, float]] = []   # (question, sent at, answered at)
        self.errors: list[str] = []
        self.follow: Any = None
        self.joined = threading.Event()

    def run(self) -> None:
        from gradio_client import Client
        try:
            client = Client(self.url, verbose=False)
            out = client.predict(self.code, f"s{self.index}", api_name="/class_join")
            if "⚠" in json.dumps(out, ensure_ascii=False):
                self.errors.append(f"join: {out}")
                return
            self.follow = client.submit(api_name="/class_follow")   # the room's stream, as a browser keeps
            self.joined.set()
            for q, event in enumerate(self.asked):
                event.wait()
                time.sleep(self.rng.uniform(*self.args.think))
                choice = self.rng.randrange(2)
                sent = time.time()
                status = client.predict(choice, None, self.rng.choice((1, 2, 3)), api_name="/class_answer")
                done = time.time()
                if "✔" not in str(status):
                    self.errors.append(f"answer {q}: {status}")
                else:
                    self.answers.append((q, sent, done))
                if self.index < self.args.steppers and q < len(self.asked) - 1:
                    self.explore(client)
        except Exception as e:  # noqa: BLE001 - every failure is counted and shown
            self.errors.append(f"{type(e).__name__}: {str(e)[:200]}")
        finally:
            self.joined.set()

    def explore(self, client: Any) -> None:
        from conftest_app import explorer_args
        args = explorer_args(model=self.model, prompt=PROMPT, temperature=0.8, seed=self.index)
        for _ in range(self.args.step_clicks):
            time.sleep(self.rng.uniform(*self.args.pause))
            t = time.perf_counter()
            client.predict(**args, api_name="/explorer_step")
            self.steps.append(time.perf_counter() - t)


def baseline_steps(url: str, model: str, n: int = 8) -> list[float]:
    from gradio_client import Client
    from conftest_app import explorer_args
    client = Client(url, verbose=False)
    args = explorer_args(model=model, prompt=PROMPT, temperature=0.8, seed=1)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        client.predict(**args, api_name="/explorer_step")
        out.append(time.perf_counter() - t)
    return out[2:]   # the first ones load and prefill


def run(args: argparse.Namespace) -> dict[str, Any]:
    with engine(args.engine) as env:
        proc, url = start_server({**env, "DECODING_LAB_MAX_SESSIONS": "400"})
        model = MODEL if args.engine == "local" else "remote:llama"
        try:
            base = baseline_steps(url, model)
            projector = Projector(url)
            keys = projector.questions()
            asked = [threading.Event() for _ in keys]
            students = [Student(i, url, projector.code, asked, args, model) for i in range(args.students)]
            t0 = time.time()
            for s in students:
                s.start()
                time.sleep(args.join_gap)
            for s in students:
                s.joined.wait(timeout=300)
            joined_s = time.time() - t0
            log(f"{sum(1 for s in students if s.follow is not None)} of {len(students)} joined in {joined_s:.1f} s")
            latencies: list[float] = []
            for q in range(len(keys)):
                projector.ask(q)
                asked[q].set()
                want = sum(1 for s in students if not s.errors)
                deadline = time.time() + args.think[1] + 120
                while time.time() < deadline:
                    got = [a for s in students for a in s.answers if a[0] == q]
                    if len(got) >= want and projector.chart() and projector.chart()[-1][1] >= len(got):
                        break
                    time.sleep(0.5)
                chart = projector.chart()
                log(f"question {q + 1}: {len([a for s in students for a in s.answers if a[0] == q])} answers, "
                    f"chart at {chart[-1][1] if chart else 0}")
                got = sorted((a for s in students for a in s.answers if a[0] == q), key=lambda a: a[2])
                for k, (_, sent, _) in enumerate(got, start=1):
                    shown = next((t for t, n in chart if n >= k), None)
                    if shown is not None:
                        latencies.append(max(0.0, shown - sent))
                # the last students' steps finish before the next question
                time.sleep(0.5)
            for s in students:
                s.join(timeout=300)
            count = projector.count_text()
            projector.close()
            steps = [x for s in students for x in s.steps]
            errors = [e for s in students for e in s.errors]
            return {
                "engine": args.engine, "students": args.students, "steppers": args.steppers,
                "questions": len(keys), "joined_s": round(joined_s, 1), "count_line": count,
                "answers": sum(len(s.answers) for s in students),
                "answer_to_projector_p50_s": _r(pct(latencies, 0.5)), "answer_to_projector_p95_s": _r(pct(latencies, 0.95)),
                "answer_to_projector_max_s": _r(max(latencies) if latencies else None),
                "step_idle_median_s": _r(statistics.median(base)), "steps": len(steps),
                "step_p50_s": _r(pct(steps, 0.5)), "step_p95_s": _r(pct(steps, 0.95)),
                "errors": len(errors), "first_errors": errors[:5],
            }
        finally:
            proc.terminate()
            with contextlib.suppress(Exception):
                proc.wait(timeout=30)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=40)
    p.add_argument("--steppers", type=int, default=10)
    p.add_argument("--step-clicks", type=int, default=4, help="Explorer steps a stepper makes between questions")
    p.add_argument("--think", type=float, nargs=2, default=(2.0, 12.0), help="a student's think time before answering (s)")
    p.add_argument("--pause", type=float, nargs=2, default=(1.0, 4.0), help="pause between a stepper's clicks (s)")
    p.add_argument("--join-gap", type=float, default=0.25, help="seconds between two students joining")
    p.add_argument("--engine", choices=("local", "llama-server"), default="local")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    out = run(args)
    print(json.dumps(out, ensure_ascii=False, indent=None if args.json else 2))
    return 0 if out["errors"] == 0 and out["answers"] == out["students"] * out["questions"] else 1


if __name__ == "__main__":
    sys.exit(main())
