"""How long the seven-tab page takes to start in Chromium, and where its script time goes.

Starts the app in this process (as the tests do), opens fresh tabs on it one after another and,
for each, measures the time to the Explorer's Step button and to the end of the page's start-up
events (its link read, lessons' progress and class restored), with Chromium's own sampling
profiler running. It prints the median of each and the script time spent in gradio's loading
status loop (``update_loading_stati_state``, which rewrites every tracked component's status on
each status message of any event: see ``decoding_lab/ui/common/progress.py``).

``--compare`` runs the same pages on a second app built without ``narrow_progress`` (gradio's
default progress targets) in the same run, and prints the ratios.

    .venv/bin/python scripts/page_start_profile.py --pages 5 --compare

Needs Debian's chromium and playwright (``make browser``)."""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

READY_JS = "window.dlLinkRead === true && window.dlLessonsReady === true && window.dlClassReady === true"


def profile_page(browser: Any, url: str) -> dict[str, float]:
    """One fresh tab on ``url``: seconds to the Step button and to the start-up events' end, and
    milliseconds of script by what it was doing."""
    from conftest_app import new_context
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
    try:
        page = ctx.new_page()
        page.set_default_timeout(180_000)
        cdp = ctx.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 500})
        cdp.send("Profiler.start")
        t0 = time.monotonic()
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_selector("#step-btn")
        t1 = time.monotonic()
        page.wait_for_function(READY_JS)
        t2 = time.monotonic()
        profile = cdp.send("Profiler.stop")["profile"]
    finally:
        ctx.close()
    script, status_loop = _script_ms(profile)
    return {"to_step_button_s": t1 - t0, "to_ready_s": t2 - t0, "script_ms": script, "status_loop_ms": status_loop}


def _script_ms(profile: dict) -> tuple[float, float]:
    """(all script time, time under gradio's status loop) in a CPU profile, in milliseconds."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}
    per_node: collections.Counter = collections.Counter()
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        per_node[sample] += delta / 1000
    idle = {"(idle)", "(program)", "(garbage collector)", "(root)"}
    script = status = 0.0
    for node, ms in per_node.items():
        if nodes[node]["callFrame"]["functionName"] in idle:
            continue
        script += ms
        j: int | None = node
        while j is not None:
            if nodes[j]["callFrame"]["functionName"] == "update_loading_stati_state":
                status += ms
                break
            j = parent.get(j)
    return script, status


def measure(narrow: bool, pages: int, browser: Any) -> list[dict[str, float]]:
    import decoding_lab.ui.page as page_module
    from conftest_app import running_app
    real = page_module.narrow_progress
    if not narrow:
        page_module.narrow_progress = lambda demo, sink: 0   # gradio's default: every output tracked
    try:
        with running_app() as (_, url):
            profile_page(browser, url)                    # the first page warms the server's caches
            return [profile_page(browser, url) for _ in range(pages)]
    finally:
        page_module.narrow_progress = real


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=5, help="fresh tabs to time per app (default 5)")
    ap.add_argument("--compare", action="store_true", help="also time an app with gradio's default progress targets")
    args = ap.parse_args(argv)
    if args.pages < 1:
        ap.error("--pages must be at least 1")
    import torch
    torch.set_num_threads(1)
    from conftest_app import chromium
    rows: dict[str, dict[str, float]] = {}
    with chromium() as browser:
        for name, narrow in (("narrowed", True), ("gradio default", False))[: 2 if args.compare else 1]:
            runs = measure(narrow, args.pages, browser)
            rows[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    keys = ["to_step_button_s", "to_ready_s", "script_ms", "status_loop_ms"]
    print(f"{'medians of ' + str(args.pages) + ' pages':<20}" + "".join(f"{k:>18}" for k in keys))
    for name, row in rows.items():
        print(f"{name:<20}" + "".join(f"{row[k]:>18.2f}" for k in keys))
    if len(rows) == 2:
        a, b = rows["gradio default"], rows["narrowed"]
        print(f"{'default / narrowed':<20}" + "".join(f"{a[k] / b[k] if b[k] else float('inf'):>18.2f}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
