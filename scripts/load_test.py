"""Load test: many browser tabs (gradio_client sessions) stepping and generating at once.

    python scripts/load_test.py                              # 8 tabs, 60 s, one round
    python scripts/load_test.py --sessions 16 --seconds 120 --rounds 3 --ttl 60 --json

It starts ``app.py`` in a child process (so the resident memory measured is the server's
alone), opens ``--sessions`` tabs, each with its own prompt and seed, and lets every tab
click for ``--seconds``: Step (most often), Step x3, Undo, and a two-column Compare. Each tab
checks every answer against what it saw before (the table only ever grows by its own steps),
and at the end the whole run is recomputed with the core: a tab's exported tokens must be
exactly what a fresh ``Stepper`` with that tab's prompt and seed draws, and its Compare
texts what ``greedy``/``sample`` give. A step from another tab would break both checks.

With ``--rounds`` > 1 each round opens fresh tabs, after waiting out the session TTL, so the
server's memory after each round shows whether state is freed (a plateau) or piles up. Keep
``--ttl`` above the longest pause of a tab within a round (its clicks wait in the queue), or
the tab's own work expires mid-round and its checks fail, as they should. Resident memory also
grows with the C allocator's per-thread arenas; ``MALLOC_ARENA_MAX=2`` (inherited by the
server) reduces that. Exit status 0 when every check held and nothing failed.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m-instruct"
PROMPTS = ["Name a red fruit.", "Give me one word that rhymes with cat.", "What colour is the sky?",
           "Say hello in French.", "Name a planet.", "Write one word about the sea.", "Count to three.",
           "Name an animal that can fly.", "What is two plus two?", "Name a musical instrument.",
           "Give a synonym for happy.", "Name a city in Japan.", "What do bees make?", "Name a vegetable.",
           "Name a colour of the rainbow.", "Say something kind."]
SAMPLING = {"temperature": 0.8, "top_p": 0.95}  # sampled, so a wrong seed or a foreign step shows
COMPARE_TOKENS = 6
TABLE = 5  # index of the step table in the Explorer's outputs


@dataclass
class Tab:
    """One simulated browser tab and everything it saw."""

    index: int
    prompt: str
    seed: int
    ids: list[int] = field(default_factory=list)      # token ids in the step table, in order
    steps: int = 0                                      # Step / Step xN clicks answered
    tokens_stepped: int = 0                             # rows those clicks added
    undos: int = 0
    compares: list[list[str]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)     # anything that should not happen
    exported: dict[str, Any] | None = None

    def args(self, **kw: Any) -> dict[str, Any]:
        """The Explorer's controls for this tab; the rest keep the page's defaults (all stages off)."""
        return {"model": MODEL, "hub_id": "", "prompt": self.prompt, "chat": "chat", **SAMPLING,
                "seed": self.seed, "top_n": 20, **kw}


def table_ids(outputs: Any) -> list[int]:
    return [int(row[2]) for row in outputs[TABLE]["data"]]


def act(client: Any, tab: Tab, rng: random.Random) -> None:
    """One click, chosen at random, and the check of its answer."""
    from gradio_client.exceptions import AppError
    roll = rng.random()
    t0 = time.perf_counter()
    try:
        if roll < 0.6 or not tab.ids:
            out = client.predict(**tab.args(), api_name="/explorer_step")
            got, want_new = table_ids(out), 1
        elif roll < 0.75:
            out = client.submit(**tab.args(n=3), api_name="/explorer_step_n").result(timeout=300)
            got, want_new = table_ids(out), 3
        elif roll < 0.85:
            got = table_ids(client.predict(api_name="/explorer_undo"))
            tab.undos += 1
            if got != tab.ids[:-1]:
                tab.errors.append(f"undo: table {got[-3:]} is not the previous one minus its last row")
            tab.ids = got
            return
        else:
            out = client.submit(prompt=tab.prompt, chat="chat", ncols=2, max_new_tokens=COMPARE_TOKENS,
                                c0_strategy="greedy", c1_strategy="sample", c1_temperature=0.9, c1_top_p=0.95,
                                c1_seed=tab.seed, api_name="/compare_run").result(timeout=300)
            tab.compares.append([out[0], out[1]])
            return
    except AppError as e:
        if "end-of-sequence" in str(e):  # the text ended: go back one step, as a user would
            tab.ids = table_ids(client.predict(api_name="/explorer_undo"))
            tab.undos += 1
        else:
            tab.errors.append(f"refused: {str(e)[:200]}")
        return
    except Exception as e:  # a timeout, a dropped connection: counted, never hidden
        tab.errors.append(f"{type(e).__name__}: {str(e)[:200]}")
        return
    tab.latencies.append(time.perf_counter() - t0)
    added = len(got) - len(tab.ids)
    if got[: len(tab.ids)] != tab.ids or not 1 <= added <= want_new:
        tab.errors.append(f"step: {len(tab.ids)} rows became {len(got)} and the old rows changed"
                          if got[: len(tab.ids)] != tab.ids else f"step added {added} rows, expected 1..{want_new}")
    tab.ids = got
    tab.steps += 1
    tab.tokens_stepped += max(added, 0)


def run_tab(url: str, tab: Tab, until: float) -> None:
    from gradio_client import Client
    rng = random.Random(tab.seed)
    try:
        client = Client(url, verbose=False)
        act(client, tab, _Fixed(0.0))  # every tab steps first, every other tab also generates,
        if tab.index % 2 == 0:          # then they click at random
            act(client, tab, _Fixed(0.9))
        while time.monotonic() < until:
            act(client, tab, rng)
        files = client.predict(api_name="/explorer_export")
        files = files["value"] if isinstance(files, dict) else files
        path = next((f for f in files if f.endswith(".json")), None)
        tab.exported = json.loads(Path(path).read_text(encoding="utf-8")) if path else None
    except Exception as e:
        tab.errors.append(f"{type(e).__name__}: {str(e)[:200]}")


# ----------------------------------------------------------------------------- the core's answer
def verify(tabs: list[Tab]) -> int:
    """Recompute every tab with the core; returns how many tabs disagree (each gets an error)."""
    import torch

    from decoding_lab.models import get_model
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    from decoding_lab.strategies import greedy, sample
    from transformers.utils import logging as hf_logging
    torch.set_num_threads(1)  # the server runs one thread too: the same sums, the same tokens
    hf_logging.disable_progress_bar()
    lm = get_model(MODEL)
    bad = 0
    for tab in tabs:
        before = len(tab.errors)
        ex = tab.exported or {}
        if ex.get("prompt_ids") != lm.encode_prompt(tab.prompt, True) or ex.get("settings", {}).get("seed") != tab.seed:
            tab.errors.append("the export holds another tab's prompt or seed")
        if ex.get("tokens") != tab.ids:
            tab.errors.append("the export's tokens are not the ones the tab's table showed")
        settings = SamplingSettings(**SAMPLING, seed=tab.seed)
        core = Stepper.from_prompt(lm, tab.prompt, True, settings, top_n=20)
        want = [t.chosen_token_id for t in core.steps(len(tab.ids))]
        if want != tab.ids:
            tab.errors.append(f"the core draws {want[:8]}… for this prompt and seed, the tab showed {tab.ids[:8]}…")
        if tab.compares:
            ids = lm.encode_prompt(tab.prompt, True)
            texts = [greedy(lm, ids, max_new_tokens=COMPARE_TOKENS).text,
                     sample(lm, ids, SamplingSettings(temperature=0.9, top_p=0.95, seed=tab.seed),
                            COMPARE_TOKENS).text]
            for shown in tab.compares:
                if any(html.escape(text).replace("\n", "<br>") not in col for text, col in zip(texts, shown)):
                    tab.errors.append("a Compare column shows text the core does not give for this tab")
                    break
        bad += len(tab.errors) > before
    return bad


# ----------------------------------------------------------------------------- the server
def new_tab(index: int) -> Tab:
    """Tab ``index`` gets its own prompt (numbered once the list runs out) and its own seed."""
    prompt = PROMPTS[index % len(PROMPTS)] + (f" (tab {index})" if index >= len(PROMPTS) else "")
    return Tab(index, prompt, 1000 + index)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict[str, str], timeout: float = 180) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PORT": str(port), "DECODING_LAB_HOST": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False",
           "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", **env}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with status {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).read(100)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"app.py did not answer within {timeout:.0f} s")


def rss_mb(pid: int) -> float:
    import psutil
    return psutil.Process(pid).memory_info().rss / 2**20


def warm_up(url: str) -> None:
    """Load the model and run each kind of click once, so 'before' is a server at work."""
    from gradio_client import Client
    client, tab = Client(url, verbose=False), Tab(-1, "Warm up: say one word.", 1)
    for roll in (0.0, 0.7, 0.8, 0.9):  # step, step x3, undo, compare
        act(client, tab, _Fixed(roll))
    if tab.errors:
        raise RuntimeError(f"warm-up failed: {tab.errors[0]}")


class _Fixed(random.Random):
    """A 'random' source that always rolls the same number: picks one kind of click."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def run(sessions: int = 8, seconds: float = 60, rounds: int = 1, ttl: float | None = None,
        url: str | None = None) -> dict[str, Any]:
    """Start a server (unless ``url``), warm it up, run the rounds, verify, return the numbers."""
    env = {"DECODING_LAB_SESSION_TTL": str(ttl)} if ttl else {}
    proc, url = (None, url) if url else start_server(env)
    try:
        warm_up(url)
        pid = proc.pid if proc else None
        report: dict[str, Any] = {"sessions": sessions, "seconds": seconds, "rounds": [],
                                  "rss_mb_before": round(rss_mb(pid), 1) if pid else None}
        all_tabs: list[Tab] = []
        for r in range(rounds):
            if r and ttl:
                time.sleep(ttl + 3)  # the previous round's tabs expire (gradio checks every second)
            tabs = [new_tab(r * sessions + i) for i in range(sessions)]
            until = time.monotonic() + seconds
            threads = [threading.Thread(target=run_tab, args=(url, tab, until)) for tab in tabs]
            t0 = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            lat = [x for tab in tabs for x in tab.latencies]
            report["rounds"].append({
                "wall_seconds": round(time.perf_counter() - t0, 1),
                "steps": sum(t.steps for t in tabs), "tokens_stepped": sum(t.tokens_stepped for t in tabs),
                "tokens_shown": sum(len(t.ids) for t in tabs),
                "undos": sum(t.undos for t in tabs), "compares": sum(len(t.compares) for t in tabs),
                "step_seconds_median": round(statistics.median(lat), 3) if lat else None,
                "step_seconds_p95": round(sorted(lat)[int(0.95 * (len(lat) - 1))], 3) if lat else None,
                "rss_mb_after": round(rss_mb(pid), 1) if pid else None})
            all_tabs += tabs
        report["mismatched_sessions"] = verify(all_tabs)
        report["errors"] = [f"tab {t.index}: {e}" for t in all_tabs for e in t.errors]
        return report
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=8, help="tabs clicking at once (default 8)")
    p.add_argument("--seconds", type=float, default=60, help="how long each round lasts (default 60)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of fresh tabs (default 1)")
    p.add_argument("--ttl", type=float, default=None, help="DECODING_LAB_SESSION_TTL for the server (seconds)")
    p.add_argument("--url", default=None, help="test a running app instead of starting one (no memory figures)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    report = run(a.sessions, a.seconds, a.rounds, a.ttl, a.url)
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{a.sessions} tabs x {a.rounds} round(s) of {a.seconds:g} s; server RSS before: "
              f"{report['rss_mb_before']} MB")
        for i, r in enumerate(report["rounds"]):
            print(f"  round {i + 1}: {r['steps']} step clicks ({r['tokens_stepped']} tokens), {r['undos']} undos, "
                  f"{r['compares']} compares; step median {r['step_seconds_median']} s, p95 "
                  f"{r['step_seconds_p95']} s; RSS after {r['rss_mb_after']} MB")
        print(f"  sessions whose results differ from the core: {report['mismatched_sessions']}; "
              f"errors: {len(report['errors'])}")
        for e in report["errors"][:20]:
            print("   ", e)
    return 0 if not report["errors"] and not report["mismatched_sessions"] else 1


if __name__ == "__main__":
    sys.exit(main())
