"""What a walk through every lesson's preset costs the browser, and where its script time goes.

Starts the app in this process (as the tests do), opens one Chromium tab on it and loads each
lesson's preset in turn (the steps of ``tests/test_browser_lessons.py``'s walk, in English),
with Chromium's sampling profiler running. For each walk it prints the wall time, the CPU time
the whole machine spent (``/proc/stat``: Chromium's processes, this process and anything else
running) and this process's own, and the functions with the most script time.

``--compare`` also walks an app built with two of gradio's and plotly's defaults put back, in the
same run and alternating with the app's own: gradio's run history (every event's inputs and
outputs kept in the browser's storage, rewritten on each event) and plotly's check of numeric
tick labels against the chart's edge (a measure of each label's box in the page).

    .venv/bin/python scripts/lesson_walk_profile.py --walks 2 --compare

Needs Debian's chromium and playwright (``make browser``). Run it on an otherwise idle machine:
the machine's CPU time counts every process."""

from __future__ import annotations

import argparse
import collections
import contextlib
import resource
import sys
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine so far (every core; idle and I/O wait excluded)."""
    with open("/proc/stat", encoding="ascii") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / 100


def own_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def walk(page: Any, lang: str = "en") -> None:
    """Load every lesson's preset, waiting each time for its tab (and, on the Explorer, its text)."""
    from decoding_lab.lessons import load_lessons
    page.click(f"#lang-radio input[value='{lang}']")
    page.click("#tab-lessons-button")
    page.wait_for_function("document.querySelector('#lesson-picker') !== null")
    for lesson in load_lessons():
        page.click("#tab-lessons-button")
        title = lesson.title[lang]
        page.get_by_text(f"{lesson.number}. {title}", exact=False).first.click()
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({title!r})")
        page.click("#lesson-load")
        want = f"tab-{lesson.preset.get('tab', 'explorer')}-button"
        page.wait_for_function(f"document.querySelector('button[role=tab][aria-selected=true]').id === {want!r}")
        if lesson.preset.get("tab", "explorer") == "explorer" and lesson.preset.get("steps"):
            page.wait_for_function("document.querySelectorAll('#generated-text .gen-tok').length >= 1")


def profiled_walk(browser: Any, url: str) -> dict[str, Any]:
    """One fresh tab on ``url``, opened, then walked with the profiler on."""
    from conftest_app import new_context, open_page
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
    try:
        page = open_page(ctx.new_page(), url, timeout_ms=180_000)
        cdp = ctx.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
        cdp.send("Profiler.start")
        m0, c0, t0 = machine_cpu_s(), own_cpu_s(), time.monotonic()
        walk(page)
        m1, c1, t1 = machine_cpu_s(), own_cpu_s(), time.monotonic()
        profile = cdp.send("Profiler.stop")["profile"]
    finally:
        ctx.close()
    return {"wall_s": t1 - t0, "machine_cpu_s": m1 - m0, "this_process_cpu_s": c1 - c0,
            "script_ms": _self_ms(profile)}


def _self_ms(profile: dict) -> collections.Counter:
    """Milliseconds of samples per function (name, file, line), the profiler's idle states left out."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    out: collections.Counter = collections.Counter()
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[sample]["callFrame"]
        if frame["functionName"] in ("(idle)", "(root)"):
            continue
        where = frame["url"].rsplit("/", 1)[-1]
        out[f"{frame['functionName'] or '(anonymous)'} {where}:{frame['lineNumber']}".strip()] += delta / 1000
    return out


@contextlib.contextmanager
def defaults_back(on: bool) -> Iterator[None]:
    """With ``on``, apps built inside keep gradio's run history and plotly's tick-label check."""
    if not on:
        yield
        return
    import plotly.io as pio
    import decoding_lab.ui.page as page_module
    from decoding_lab.ui.common import plots
    kwargs, look = page_module.launch_kwargs, plots.LOOK
    page_module.launch_kwargs = lambda: {**kwargs(), "run_history": True}
    default = pio.templates[pio.templates.default]
    plain = default.__class__(default)
    for axis in (plain.layout.xaxis, plain.layout.yaxis):
        axis.ticklabeloverflow = None
    pio.templates["decoding-lab"] = plain
    try:
        yield
    finally:
        page_module.launch_kwargs = kwargs
        pio.templates["decoding-lab"] = look


@contextlib.contextmanager
def app(with_defaults: bool) -> Iterator[str]:
    from conftest_app import running_app
    with defaults_back(with_defaults), running_app() as (_, url):
        yield url


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--walks", type=int, default=1, help="walks per app (default 1)")
    ap.add_argument("--compare", action="store_true",
                    help="also walk an app with gradio's run history and plotly's tick-label check back")
    ap.add_argument("--top", type=int, default=12, help="functions to list by script time (default 12)")
    args = ap.parse_args(argv)
    if args.walks < 1 or args.top < 0:
        ap.error("--walks must be at least 1 and --top at least 0")
    import torch
    torch.set_num_threads(1)
    from conftest_app import chromium
    variants = [("this app", False)] + ([("gradio/plotly defaults", True)] if args.compare else [])
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
    with chromium() as browser:
        for _ in range(args.walks):
            for name, with_defaults in variants:      # alternating, so a drift of the machine hits both
                with app(with_defaults) as url:
                    runs[name].append(profiled_walk(browser, url))
    for name, rows in runs.items():
        print(f"{name}: " + "; ".join(f"walk {i + 1}: {r['wall_s']:.1f} s wall, machine CPU {r['machine_cpu_s']:.1f} s, "
                                      f"this process {r['this_process_cpu_s']:.1f} s" for i, r in enumerate(rows)))
        total: collections.Counter = sum((r["script_ms"] for r in rows), collections.Counter())
        for fn, ms in total.most_common(args.top):
            print(f"    {ms / len(rows):8.0f} ms  {fn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
