"""Links that open what they were copied from, in a real browser: the tab, a lesson's screen,
and the Explorer's run with its steps and forced tokens replayed (checked against the core),
plus the "Copy link" button. Screenshots go to /tmp/shots/."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser

TOKENS = "Array.from(document.querySelectorAll('#generated-text .gen-tok')).map(e => e.textContent)"
SELECTED = "document.querySelector('button[role=tab][aria-selected=true]').id"


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def fresh(browser, url: str):
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    return ctx, open_page(ctx.new_page(), url)


def test_a_lesson_screen_travels_in_the_link(browser, app_url):
    from decoding_lab.lessons import load_lessons
    les = load_lessons()[4]
    ctx, page = fresh(browser, app_url)
    try:
        page.click("#tab-lessons-button")
        page.get_by_text(f"{les.number}. {les.title['en']}", exact=False).first.click()
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
        page.click("#teacher-next")
        page.wait_for_function("document.querySelector('#teacher-counter').innerText.includes('Screen 2 of')")
        page.wait_for_function("location.search.includes('screen=1')")
        q = query(page)
        assert q["tab"] == "lessons" and q["lesson"] == str(les.number) and q["screen"] == "1"
        page.click("#copy-link-btn")      # the button copies the address bar and says so
        page.wait_for_function("document.querySelector('#copy-link-btn').dataset.copied === location.href")
        assert "Link copied" in page.inner_text("#copy-link-btn")
        link = page.url
    finally:
        ctx.close()
    ctx, page = fresh(browser, link)      # someone else opens it
    try:
        page.wait_for_function(f"{SELECTED} === 'tab-lessons-button'")
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
        page.wait_for_function("document.querySelector('#teacher-counter').innerText.includes('Screen 2 of')")
        page.screenshot(path=str(SHOTS / "share_lesson_link.png"))
        assert not page.query_selector(".toast-body.error")
    finally:
        ctx.close()


def test_an_explorer_run_is_replayed_with_its_forced_token(browser, app_url, smollm):
    """Three steps at T = 1 with seed 1, the second one forced: the link names them, and opening
    it replays exactly the run the core makes with those settings."""
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    from decoding_lab.ui.common.plots import show_token

    settings = SamplingSettings(temperature=1.0, top_k=10, seed=1)
    core = Stepper.from_prompt(smollm, "Tell me a story.", True, settings)
    core.step()
    forced = core.traces[-1].top[3].token_id if core.traces[-1].top[3].token_id != core.tokens[-1] else \
        core.traces[-1].top[4].token_id
    core.rewind(0)
    core.step()
    core.step(force_token_id=forced)
    core.step()
    link = app_url + "?" + urlencode({"model": "smollm2-135m-instruct", "prompt": "Tell me a story.", "chat": "chat",
                                      "T": 1, "top_k": 10, "seed": 1, "steps": 3, "force": f"1:{forced}"})
    ctx, page = fresh(browser, link)
    try:
        page.wait_for_function(f"{TOKENS}.length === 3", timeout=120_000)
        assert page.evaluate(TOKENS) == [show_token(smollm.token_str(t)) for t in core.tokens]
        assert page.evaluate("document.querySelectorAll('#generated-text .gen-tok.forced').length") == 1
        # the address bar now names the replayed run again: steps and the forced token
        page.wait_for_function("location.search.includes('steps=3')")
        q = query(page)
        assert q["force"] == f"1:{forced}" and q["seed"] == "1"
        page.screenshot(path=str(SHOTS / "share_explorer_replay.png"))
        assert not page.query_selector(".toast-body.error")
    finally:
        ctx.close()


def test_a_bad_link_says_what_it_skipped(browser, app_url):
    ctx, page = fresh(browser, app_url + "?tab=nowhere&steps=abc&lesson=99&top_p=7")
    try:
        page.wait_for_selector(".toast-body", timeout=60_000)
        page.wait_for_function("document.body.innerText.includes('top_p=')")
        text = page.inner_text("body")
        assert "tab='nowhere'" in text or "nowhere" in text
        assert f"{SELECTED}" and page.evaluate(SELECTED) == "tab-explorer-button"
        assert float(page.input_value("#top-p input[type=number]")) == 1.0   # the default, not 7
    finally:
        ctx.close()
