"""Fair share under attack: one client sends the heaviest legal requests, another just steps.

    python scripts/fair_share_attack.py                 # every attack, the flood and the memory check
    python scripts/fair_share_attack.py --only play,flood --json

It starts ``app.py`` in public mode (``DECODING_LAB_PUBLIC=1``) behind a simulated proxy
(``DECODING_LAB_PROXY_HOPS=1``), so each simulated client is named by the ``X-Forwarded-For``
header it sends, as behind a Space's proxy. Then:

1. **Baseline.** The victim (its own address, its own tab) clicks Step ``--steps`` times alone;
   the median latency is its baseline.
2. **Attacks.** For each attack the attacker opens several tabs (gradio session hashes of its
   choosing) from one address and starts the heaviest request the UI allows in each: Play (up to
   1,024 steps), Step ×256, a four-column Compare of 256 new tokens, the Temperature-0 tab's
   paths, an 8-beam search over a long prompt, a new session with a ~1,900-token prompt per click.
   While they run, the victim clicks Step ``--steps`` times. The ratio victim median / baseline is
   the number that matters (the fair scheduler's target: at most 3). The attacker's refusals
   (one client, at most ``client_jobs`` jobs) are counted too.
3. **Flood.** The attacker fires ``--flood`` queue joins in a burst; the script counts how many the
   app accepted, refused with HTTP 429 or answered "queue full" (HTTP 503), and checks the victim's
   next Step is served.
4. **Memory.** ``--sessions`` Explorer sessions, each with a ~1,900-token prompt, are opened one
   after the other from many addresses; the server's resident memory is read before and after
   (the memory budget, ``DECODING_LAB_MEMORY_MB``, parks the least recently used).

Exit status 0 when every victim ratio is within ``--target`` and the victim was never refused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_test import MODEL, rss_mb, start_server  # noqa: E402  (the same child-process server)

VICTIM_IP, ATTACKER_IP = "198.51.100.7", "203.0.113.66"
LONG_PROMPT = " ".join(["The quick brown fox jumps over the lazy dog."] * 190)   # ~1,900 tokens
#: the Temperature-0 tab's full-recompute path takes at most 1,024 tokens in all: ~900 + 64 new
MID_PROMPT = " ".join(["The quick brown fox jumps over the lazy dog."] * 90)
STORY = "Tell me a long story about a dragon who learns to paint."
HOT = {"temperature": 1.5, "top_p": 1.0}   # sampled hot: an end-of-text token is unlikely for a long while


def client(url: str, ip: str) -> Any:
    from gradio_client import Client
    return Client(url, verbose=False, headers={"X-Forwarded-For": ip})


def explorer_args(prompt: str, seed: int = 0, **kw: Any) -> dict[str, Any]:
    return {"model": MODEL, "hub_id": "", "prompt": prompt, "chat": "chat", "seed": seed, "top_n": 20, **kw}


def victim_steps(c: Any, n: int, seed: int) -> tuple[list[float], list[str]]:
    """``n`` Step clicks on a short prompt (a fresh session at the first); latencies and refusals."""
    lat, refused = [], []
    for i in range(n):
        t0 = time.perf_counter()
        try:
            c.predict(**explorer_args("Name a red fruit.", seed, temperature=0.8), api_name="/explorer_step")
            lat.append(time.perf_counter() - t0)
        except Exception as e:  # a refusal or a queue-full answer: the victim was hurt
            refused.append(str(e)[:160])
    return lat, refused


# --- the attacks: each starts the heaviest legal request in one tab and returns its job ----------
def play(c: Any, i: int) -> Any:
    return c.submit(**explorer_args(STORY, i, **HOT), api_name="/explorer_play")


def step_256(c: Any, i: int) -> Any:
    return c.submit(**explorer_args(STORY, i, n=256, **HOT), api_name="/explorer_step_n")


def compare_4x256(c: Any, i: int) -> Any:
    cols = {f"c{k}_{name}": v for k in range(4) for name, v in
            (("strategy", "sample"), ("temperature", 1.5), ("seed", i * 10 + k))}
    return c.submit(prompt=STORY, chat="chat", ncols=4, max_new_tokens=256, **cols, api_name="/compare_run")


def temperature_0(c: Any, i: int) -> Any:
    return c.submit(model=MODEL, prompt=MID_PROMPT, tokens=64, api_name="/determinism_run")


def beam_8(c: Any, i: int) -> Any:
    return c.submit(model=MODEL, prompt=LONG_PROMPT, num_beams=8, max_new_tokens=64, api_name="/beam_run")


def long_prompt_steps(c: Any, i: int) -> Any:
    """A new ~1,900-token session per click (the prompt changes, so each click prefills again);
    a refused click is followed by the next one at once."""
    def loop() -> None:
        for k in range(40):
            if job.stop:
                return
            try:
                c.predict(**explorer_args(LONG_PROMPT + f" {i}-{k}", k), api_name="/explorer_step")
            except Exception as e:  # noqa: BLE001 - refused: the attacker just clicks again
                job.refusals += 1
                job.error = str(e)[:160]

    class Job:
        def __init__(self) -> None:
            self.th = threading.Thread(target=self._run, daemon=True)
            self.error: str | None = None
            self.refusals = 0
            self.stop = False

        def start(self) -> "Job":
            self.th.start()
            return self

        def _run(self) -> None:
            try:
                loop()
            except Exception as e:
                self.error = str(e)[:160]

        def done(self) -> bool:
            return not self.th.is_alive()

        def cancel(self) -> None:
            self.stop = True

        def exception(self, timeout: float | None = None) -> Any:
            return self.error

    job = Job()
    return job.start()


ATTACKS: dict[str, Callable[[Any, int], Any]] = {
    "play": play, "step_256": step_256, "compare_4x256": compare_4x256, "temperature_0": temperature_0,
    "beam_8x64_long": beam_8, "long_prompt_steps": long_prompt_steps,
}


def attack(url: str, name: str, tabs: int, victim: Any, steps: int, seed: int,
           ip: str = ATTACKER_IP) -> dict[str, Any]:
    clients = [client(url, ip) for _ in range(tabs)]
    jobs = [ATTACKS[name](c, i) for i, c in enumerate(clients)]
    time.sleep(3.0)   # the attacker's jobs are running (or refused) before the victim clicks
    refused_attacker = []
    for j in jobs:
        if j.done():
            try:
                err = j.exception(timeout=0)
            except Exception as e:  # noqa: BLE001 - gradio_client raises what the job raised
                err = e
            if err:
                refused_attacker.append(str(err)[:120])
    lat, refused = victim_steps(victim, steps, seed)
    for j in jobs:
        try:
            j.cancel()
        except Exception:
            pass
    for c in clients:
        try:
            c.close()
        except Exception:
            pass
    time.sleep(2.0)
    return {"victim_median_s": statistics.median(lat) if lat else None, "victim_refused": refused,
            "attacker_tabs": tabs, "attacker_refused": refused_attacker}


def flood(url: str, joins: int, victim: Any) -> dict[str, Any]:
    """``joins`` queue joins from one address in a burst, each with a session hash of its own."""
    import random
    config = json.loads(urllib.request.urlopen(url + "config", timeout=30).read())
    fn = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "explorer_undo")
    root = url + "gradio_api/queue/join"
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def one(k: int) -> None:
        body = json.dumps({"data": [], "fn_index": fn, "trigger_id": None,
                           "session_hash": f"flood{random.getrandbits(40):x}{k}"}).encode()
        req = urllib.request.Request(root, data=body, headers={"Content-Type": "application/json",
                                                                 "X-Forwarded-For": ATTACKER_IP})
        try:
            urllib.request.urlopen(req, timeout=30).read()
            key = "accepted"
        except urllib.error.HTTPError as e:
            key = f"HTTP {e.code}"
        except OSError as e:
            key = type(e).__name__
        with lock:
            counts[key] = counts.get(key, 0) + 1

    threads = [threading.Thread(target=one, args=(k,)) for k in range(joins)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    burst = time.perf_counter() - t0
    lat, refused = victim_steps(victim, 3, 5)
    return {"joins": joins, "burst_s": burst, "outcome": counts, "victim_median_s": statistics.median(lat) if lat
            else None, "victim_refused": refused}


def memory(url: str, pid: int, sessions: int) -> dict[str, Any]:
    before = rss_mb(pid)
    peak, errors, trace = before, [], []
    for i in range(sessions):
        c = client(url, f"192.0.2.{i % 250 + 1}")
        try:
            c.predict(**explorer_args(LONG_PROMPT + f" {i}", i), api_name="/explorer_step")
        except Exception as e:
            errors.append(str(e)[:120])
        c.close()
        peak = max(peak, rss_mb(pid))
        if (i + 1) % 20 == 0:
            trace.append((i + 1, rss_mb(pid)))     # (sessions so far, MB): a plateau, or a climb
    return {"sessions": sessions, "rss_before_mb": before, "rss_after_mb": rss_mb(pid), "rss_peak_mb": peak,
            "rss_every_20": trace,
            "errors": errors[:5], "n_errors": len(errors)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join([*ATTACKS, "flood", "memory"]))
    ap.add_argument("--steps", type=int, default=8, help="victim Step clicks per measurement")
    ap.add_argument("--tabs", type=int, default=4, help="attacker tabs (session hashes) per attack")
    ap.add_argument("--flood", type=int, default=70, help="queue joins in the flood")
    ap.add_argument("--sessions", type=int, default=200, help="long-prompt sessions for the memory check")
    ap.add_argument("--memory-mb", type=int, default=None, help="DECODING_LAB_MEMORY_MB for the server")
    ap.add_argument("--target", type=float, default=3.0, help="victim ratio to pass")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    chosen = [s for s in args.only.split(",") if s] or [*ATTACKS, "flood", "memory"]
    env = {"DECODING_LAB_PUBLIC": "1", "DECODING_LAB_PROXY_HOPS": "1", "MALLOC_ARENA_MAX": "2"}
    if args.memory_mb is not None:
        env["DECODING_LAB_MEMORY_MB"] = str(args.memory_mb)
    proc, url = start_server(env)
    report: dict[str, Any] = {"env": env}
    ok = True
    try:
        victim = client(url, VICTIM_IP)
        victim_steps(victim, 2, 1)                       # load the model, warm the caches
        base, refused = victim_steps(victim, args.steps, 2)
        report["baseline_median_s"] = baseline = statistics.median(base)
        for name in chosen:
            if name in ATTACKS:
                # each attack from an address of its own: a job of the last one that a cancel does
                # not stop (a Temperature-0 run) still runs, but does not count against this one's cap
                r = attack(url, name, args.tabs, victim, args.steps, 3, ip=f"203.0.113.{66 + list(ATTACKS).index(name)}")
                r["ratio"] = r["victim_median_s"] / baseline if r["victim_median_s"] else None
                ok &= r["ratio"] is not None and r["ratio"] <= args.target and not r["victim_refused"]
            elif name == "flood":
                r = flood(url, args.flood, victim)
                ok &= not r["victim_refused"]
            elif name == "memory":
                r = memory(url, proc.pid, args.sessions)
            else:
                raise SystemExit(f"unknown part {name!r}")
            report[name] = r
            if not args.json:
                print(name, json.dumps(r), flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
    report["ok"] = ok
    print(json.dumps(report, indent=1) if args.json else f"baseline {report.get('baseline_median_s'):.3f} s; "
          f"all within {args.target}x: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
