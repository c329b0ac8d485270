"""The app in a real browser: headless Debian chromium through playwright.

Steps the live default model, reads the chart's data out of the page and checks it
against the core (recomputed in-process with the same settings), clicks a bar to force a
token, switches the language, opens a shared URL, stops a Play, and screenshots every
tab into /tmp/shots/ (look at them). Also measures Step latency end to end."""

from __future__ import annotations

import contextlib
import statistics
import time
from pathlib import Path

import pytest

from conftest_app import new_context, open_page

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots")
PROMPT = "What is the capital of France?"
N_TOKENS = "document.querySelectorAll('#generated-text .gen-tok').length"
CHART = "document.querySelector('#dist-chart .js-plotly-plot')"


# app_url, browser and page: the shared fixtures in conftest.py


def open_app(page, url: str) -> None:
    if page.url.rstrip("/") != url.rstrip("/"):   # the shared page fixture has usually opened it already
        page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("#step-btn")
    page.wait_for_selector("#dist-chart")   # the chart's frame; plotly draws into it with the first step


def click_step(page) -> float:
    """Click Step and wait until the new token is in the text and the chart shows it."""
    n = page.evaluate(N_TOKENS)
    t0 = time.perf_counter()
    page.click("#step-btn")
    # the chart is re-rendered for the newest step (a Play stopped mid-step may have added one more)
    last = f"({N_TOKENS} - 1)"
    title = f"{CHART}.layout.title.text"
    page.wait_for_function(f"{N_TOKENS} > {n} && {CHART} && ({title}.includes('Step ' + {last} + ':') "
                           f"|| {title}.includes('第 ' + {last} + ' 步'))")
    return time.perf_counter() - t0


def chart_data(page) -> list[dict]:
    return page.evaluate(f"Array.from({CHART}.data).map(d => ({{ids: Array.from(d.customdata || []), "
                         "y: Array.from(d.y || []), name: d.name}))")


def test_step_chart_agrees_with_core_and_latency(page, app_url, smollm):
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    open_app(page, app_url)
    pages_fetched = []   # the page's own address asked for again after it opened
    page.on("request", lambda r: r.url.split("?")[0].split("#")[0] == app_url and pages_fetched.append(r.url))
    times = [click_step(page) for _ in range(5)]
    core = Stepper.from_prompt(smollm, PROMPT, True, SamplingSettings(), top_n=20)  # the page's defaults
    traces = core.steps(5)
    raw, final = chart_data(page)[:2]
    last = traces[-1]
    assert raw["ids"] == [r.token_id for r in last.top]
    assert raw["y"] == pytest.approx([r.p_raw for r in last.top], abs=1e-9)
    assert final["y"] == pytest.approx([r.p_final for r in last.top], abs=1e-9)
    shown = page.evaluate("Array.from(document.querySelectorAll('#generated-text .gen-tok')).map(e => e.textContent)")
    assert "".join(shown).replace("↵", "\n") == "".join(t.chosen_token for t in traces)
    assert "T=1" not in page.url and "model=smollm2" in page.url  # the share link went into the address bar
    # each Step rewrote the address bar after the charts were drawn, and their clip paths still name
    # this document: none points at an earlier address, which the browser would fetch (the whole
    # page, rendered again) and not find the clip in (``assets/js/page.js``, the <base> it drops)
    clips = page.evaluate("[...document.querySelectorAll('#dist-chart [clip-path]')].map(e => e.getAttribute('clip-path'))")
    assert clips and all(c.startswith("url(#") for c in clips), clips[:3]
    assert pages_fetched == []
    # five Steps left none of their inputs or outputs in the browser's storage (no gradio run history)
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('gradio:run-history'))") == []
    page.screenshot(path=str(SHOTS / "app_explorer.png"), full_page=True)
    median = statistics.median(times[1:])  # the first includes prefill
    (SHOTS / "app_step_latency.txt").write_text(
        f"Step latency (click -> new token in text and chart re-rendered), default model, headless chromium:\n"
        f"all: {', '.join(f'{x:.2f}' for x in times)} s\nmedian of steps 2-5: {median:.2f} s\n")
    print(f"\nStep latency: {[round(x, 2) for x in times]} s, median {median:.2f} s")
    assert median < 30


def test_click_a_bar_forces_that_token(page, app_url):
    open_app(page, app_url)
    click_step(page)
    raw = chart_data(page)[0]
    chosen = page.evaluate("document.querySelector('#generated-text .gen-tok:last-child')?.getAttribute('aria-label')")
    target = raw["ids"][2]  # the third most likely token
    bars = page.locator("#dist-chart .js-plotly-plot .trace.bars").first.locator("path")
    bars.nth(2).click(force=True)
    page.wait_for_function("document.querySelector('#generated-text .gen-tok.forced') !== null")
    title = page.evaluate("document.querySelector('#generated-text .gen-tok.forced').getAttribute('aria-label')")
    assert f"id {target} " in title and title != chosen


def test_language_switch(page, app_url):
    open_app(page, app_url)
    page.get_by_text("简体中文").click()
    page.wait_for_function("document.querySelector('#step-btn').innerText.includes('单步')")
    page.get_by_role("tab", name="探索").wait_for()
    click_step(page)
    assert "下一个词元" in page.evaluate(f"{CHART}.layout.title.text")
    page.screenshot(path=str(SHOTS / "app_explorer_zh.png"), full_page=True)


def test_shared_url_restores_settings(blank_page, app_url):
    # the link is the page's first address: one page start, which waits for the link to be read
    page = open_page(blank_page, app_url + "?model=smollm2-135m-instruct&prompt=Tell+me+a+joke&chat=raw&T=0.55"
                                           "&top_p=0.8&order=vllm&seed=3&lang=zh")
    page.wait_for_selector("#dist-chart")
    page.wait_for_function("document.querySelector('#temperature input[type=number]').value === '0.55'")
    assert page.input_value("#prompt textarea") == "Tell me a joke"
    assert page.input_value("#top-p input[type=number]") == "0.8"
    assert page.input_value("#seed input") == "3"
    assert page.input_value("#order-preset input") == "vllm"
    page.wait_for_function("document.querySelector('#step-btn').innerText.includes('单步')")
    click_step(page)
    assert "T=0.55" in page.url and "order=vllm" in page.url


def settled_count(page, quiet_s: float = 3.0, within_s: float = 90.0) -> int:
    """The number of tokens shown once it has not changed for ``quiet_s`` seconds."""
    deadline = time.monotonic() + within_s
    last, since = page.evaluate(N_TOKENS), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = page.evaluate(N_TOKENS)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return now
    raise AssertionError(f"tokens still arriving {within_s:.0f} s after Stop ({last} shown)")


def test_play_and_stop(page, app_url):
    open_app(page, app_url)
    page.fill("#prompt textarea", "Write a long story about a dragon.")
    page.click("#play-btn")
    page.wait_for_function(f"{N_TOKENS} >= 2")
    try:
        # One DOM click, as a person's click arrives: Playwright's own click waits for animation
        # frames, which a busy renderer (the text growing by a token every ~0.1 s on a loaded
        # machine) may not give it for a long time.
        # Asked with a plain evaluate, polled from here: Playwright's own visibility wait also waits
        # for animation frames (it once timed out with the button "resolved to visible").
        deadline = time.monotonic() + 60
        while not page.evaluate("(b => !!b && b.offsetParent !== null && !b.disabled)"
                                "(document.querySelector('#stop-btn'))"):
            assert time.monotonic() < deadline, "Stop never showed while Play ran"
            time.sleep(0.2)
        page.evaluate("document.querySelector('#stop-btn').click()")
    except Exception:
        with contextlib.suppress(Exception):   # a renderer this busy may not take a screenshot either
            page.screenshot(path=str(SHOTS / "app_failed_stop.png"), full_page=True, timeout=10_000)
        raise
    n = settled_count(page)   # a busy server may deliver the tokens already on their way
    time.sleep(4)
    assert page.evaluate(N_TOKENS) == n  # nothing arrives after Stop
    assert f"Step {n - 1}:" in page.evaluate(f"{CHART}.layout.title.text")  # Stop redrew the charts
    click_step(page)  # and the session goes on from where it stopped


def test_screenshot_compare_and_beam(page, app_url):
    open_app(page, app_url)
    page.get_by_role("tab", name="Compare").click()
    page.fill("#cmp-max-new input[type=number]", "10")
    page.press("#cmp-max-new input[type=number]", "Enter")
    page.click("#cmp-run")
    page.wait_for_function("document.querySelector('#cmp-table').innerText.includes('3: T=0.8') "
                           "&& document.querySelectorAll('.cmp-cursor').length === 0", timeout=300_000)
    traces = page.evaluate("document.querySelector('#cmp-entropy-chart .js-plotly-plot').data.length")
    assert traces == 3
    page.screenshot(path=str(SHOTS / "app_compare.png"), full_page=True)
    page.get_by_role("tab", name="Beam search").click()
    page.fill("#beam-max-new input[type=number]", "10")
    page.press("#beam-max-new input[type=number]", "Enter")
    page.click("#beam-run")
    page.wait_for_function("document.querySelector('#beam-status').innerText.includes('stopped by: ')"
                           " && !document.querySelector('#beam-status').innerText.includes('…')", timeout=300_000)
    names = page.evaluate("Array.from(document.querySelector('#beam-chart .js-plotly-plot').data).map(d => d.name)")
    assert "live beam" in names
    page.screenshot(path=str(SHOTS / "app_beam.png"), full_page=True)


def test_two_tabs_do_not_share_steps(browser, app_url):
    ctx = new_context(browser, viewport={"width": 1280, "height": 900})
    a, b = ctx.new_page(), ctx.new_page()  # same browser profile, two tabs
    for pg in (a, b):
        pg.set_default_timeout(120_000)
        open_app(pg, app_url)
    click_step(a)
    click_step(a)
    click_step(b)
    assert a.evaluate(N_TOKENS) == 2 and b.evaluate(N_TOKENS) == 1
    ctx.close()


def test_screenshot_lessons_and_temperature_zero(page, app_url):
    open_app(page, app_url)
    if page.get_by_role("tab", name="Lessons").count() == 0:
        pytest.skip("the lessons tab is not mounted")
    page.get_by_role("tab", name="Lessons").click()
    page.click("#lesson-load")
    page.wait_for_function(f"{N_TOKENS} >= 1")  # the lesson switched to the Explorer and ran its steps
    page.get_by_role("tab", name="Lessons").click()
    page.screenshot(path=str(SHOTS / "app_lessons.png"), full_page=True)
    if page.get_by_role("tab", name="Grammar").count():
        page.get_by_role("tab", name="Grammar").click()
        page.wait_for_timeout(1500)
        page.screenshot(path=str(SHOTS / "app_grammar.png"), full_page=True)
    if page.get_by_role("tab", name="Temperature 0").count():
        page.get_by_role("tab", name="Temperature 0").click()
        page.fill("#det-tokens input[type=number]", "8")
        page.press("#det-tokens input[type=number]", "Enter")
        page.click("#determinism-run")
        page.wait_for_function("document.querySelector('#det-margins .js-plotly-plot') !== null", timeout=300_000)
        page.screenshot(path=str(SHOTS / "app_temperature0.png"), full_page=True)


ANIMATED = """(() => { const probe = document.createElement('div');
    probe.style.cssText = 'animation: dl-probe 2s infinite; transition: opacity 3s';
    document.body.appendChild(probe);
    const s = getComputedStyle(probe), out = [s.animationDuration, s.animationIterationCount, s.transitionDuration];
    probe.remove(); return out; })()"""


def test_reduced_motion_stops_every_animation(page):
    """The test contexts ask for reduced motion (``conftest_app.new_context``), as a visitor may: the
    page's rule turns every animation into a single instant one (transitions are left as they are).
    A visitor who did not ask keeps gradio's animations."""
    assert page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches")
    assert page.evaluate(ANIMATED) == ["1e-05s", "1", "3s"]
    page.emulate_media(reduced_motion="no-preference")
    assert page.evaluate(ANIMATED) == ["2s", "infinite", "3s"]
