"""The Grammar tab in a real browser (headless Debian chromium through playwright).

Steps a JSON preset, reads the "how hard the grammar pushed" chart out of the page and
compares it with the core (the same stepper and mask run in-process), runs constrained
versus free, token healing, and a bad regex (an error toast; the session's steps stay).
Screenshots go to /tmp/shots/ (look at them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest_app import open_page

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots")
TRACE = "document.querySelector('#grammar-trace .js-plotly-plot')"
SPANS = "document.querySelectorAll('#grammar-generated span[title]').length"


@pytest.fixture(scope="module")
def page(browser, app_url):
    pg = open_page(browser.new_page(viewport={"width": 1440, "height": 1100}), app_url, tab="grammar",
                   timeout_ms=180_000)
    pg.wait_for_selector("#grammar-step-n-btn")
    yield pg
    pg.close()


def set_number(page, elem_id: str, value: float) -> None:
    """Type into a slider's number box and commit it (Enter), as a person would."""
    box = f"#{elem_id} input[type=number]"
    page.fill(box, str(value))
    page.press(box, "Enter")


def trace_data(page) -> dict:
    """The chart's series as the page holds them: allowed counts (row 1) and removed mass (row 2)."""
    return page.evaluate(f"""(() => {{ const d = {TRACE}.data;
        const line = d.find(t => t.type === 'scatter' && t.mode === 'lines+markers');
        const bar = d.find(t => t.type === 'bar');
        return {{x: Array.from(line.x), allowed: Array.from(line.y), removed: Array.from(bar.y)}}; }})()""")


def test_steps_match_the_core(page, smollm):
    from decoding_lab.grammar import GrammarMask, preset, preset_prompt
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    from decoding_lab.ui.common.plots import show_token

    set_number(page, "grammar-temperature", 0)
    set_number(page, "grammar-n-steps", 12)
    page.click("#grammar-step-n-btn")
    page.wait_for_function(f"{SPANS} >= 12 && {TRACE} && {TRACE}.data.length >= 2")
    page.wait_for_function("document.querySelector('#grammar-status').innerText.includes('Step 11')")
    shown = trace_data(page)

    mask = GrammarMask(preset("json-person"), smollm)
    core = Stepper(smollm, smollm.encode_prompt(preset_prompt("json-person"), True), SamplingSettings(temperature=0.0),
                   top_n=40, extra_stages={"grammar": mask})
    traces = core.steps(12)
    records = [next(r for r in tr.stages if r.name == "grammar") for tr in traces]
    assert shown["x"] == list(range(12))
    assert shown["allowed"] == [r.extra.allowed for r in records]
    assert shown["removed"] == pytest.approx([r.removed_mass for r in records], abs=1e-6)
    assert shown["allowed"][0] < smollm.vocab_size / 100  # a JSON object must open with `{` (and whitespace)
    text = page.inner_text("#grammar-generated")
    assert text.lstrip().startswith("{")
    # forbidden tokens and timings are on screen for the latest step
    assert "mask, this step" in page.inner_text("#grammar-timing")
    forbidden = sorted((r for r in traces[-1].top if r.cut_by == "grammar"), key=lambda r: -r.p_raw)
    table = page.inner_text("#grammar-forbidden")
    assert all(show_token(r.token) in table for r in forbidden[:3]) if forbidden else "none of" in table
    page.screenshot(path=str(SHOTS / "grammar_steps.png"), full_page=True)


def test_bad_regex_is_a_message_and_steps_survive(page):
    before = page.evaluate(SPANS)
    page.get_by_label("regex").first.check()
    page.fill("#grammar-text textarea", "([0-9]+")
    page.click("#grammar-step-btn")
    # the compile error is written under the grammar box, once: no toast, no other block marked
    page.wait_for_function("(document.querySelector('#grammar-text .validation-error') || {}).innerText",
                           timeout=60_000)
    message = page.inner_text("#grammar-text .validation-error")
    assert "invalid regex '([0-9]+'" in message
    assert page.locator(".toast-body.error").count() == 0
    marked = page.evaluate("[...document.querySelectorAll('.validation-error')].map(e => (e.closest('[id]') || {}).id)")
    assert set(marked) == {"grammar-text"} and page.locator("div.validation-error").count() == 1
    assert page.evaluate(SPANS) == before  # the earlier run is still on screen
    page.screenshot(path=str(SHOTS / "grammar_bad_regex.png"), full_page=True)
    # fixing the regex starts a fresh run that works, and the message goes
    page.fill("#grammar-text textarea", "[0-9]+")
    page.click("#grammar-step-btn")
    page.wait_for_function(f"{SPANS} === 1")
    assert page.locator("#grammar-text .validation-error").count() == 0


def test_constrained_vs_free_and_healing(page, smollm):
    from decoding_lab.grammar import healing_demo, preset_prompt
    from decoding_lab.experiments.constrained_vs_free import answer_prefix_ids
    from decoding_lab.ui.grammar import HEAL_PREFIX
    from decoding_lab.ui.common.plots import show_token

    page.get_by_label("preset").first.check()
    set_number(page, "grammar-cmp-n", 2)
    set_number(page, "grammar-cmp-tokens", 48)
    page.click("#grammar-cmp-btn")
    page.wait_for_function("document.querySelectorAll('#grammar-compare .grammar-sample').length === 4")
    summary = page.inner_text("#grammar-compare-summary")
    assert "constrained: 0%" in summary
    valid = page.evaluate("Array.from(document.querySelectorAll('#grammar-compare .grammar-constrained "
                          ".grammar-sample')).map(e => e.dataset.valid)")
    assert valid == ["true", "true"]  # the constrained side validates, whatever the free side did
    page.click("#grammar-heal-btn")
    page.wait_for_function("document.querySelector('#grammar-heal-summary').innerText.includes('Removed prompt text')")
    core = healing_demo(smollm, answer_prefix_ids(smollm, preset_prompt("json-person"), HEAL_PREFIX, True), top_n=10)
    table = page.inner_text("#grammar-heal-with")
    assert [show_token(x["token"]) in table for x in core.with_healing[:3]] == [True] * 3
    assert f"{core.with_healing[0]['p']:.4f}".rstrip("0") in table
    page.screenshot(path=str(SHOTS / "grammar_compare_heal.png"), full_page=True)


def test_constrained_vs_free_shows_progress_and_stops(page):
    """A long comparison says which side and step it is on while it runs, and Stop ends it with
    the samples it has (marked as stopped), without an error."""
    errors = "Array.from(document.querySelectorAll('.toast-body.error')).map(e => e.innerText)"
    before = set(page.evaluate(errors))        # an earlier test's bad-regex toast may still be up
    page.get_by_label("preset").first.check()
    set_number(page, "grammar-cmp-n", 8)
    set_number(page, "grammar-cmp-tokens", 192)
    page.click("#grammar-cmp-btn")
    summary = "document.querySelector('#grammar-compare-summary').innerText"
    page.wait_for_function(f"{summary}.includes('without the grammar (1 of 2): step')", timeout=60_000)
    page.screenshot(path=str(SHOTS / "grammar_compare_progress.png"))
    page.click("#grammar-cmp-stop")
    page.wait_for_function(f"{summary}.includes('Stopped:')", timeout=60_000)
    assert page.evaluate("document.querySelectorAll('#grammar-compare .grammar-sample').length") == 16
    marks = page.inner_text("#grammar-compare")
    assert "cut by Stop" in marks and "cut by the budget" not in marks   # 192 tokens were never reached
    assert set(page.evaluate(errors)) <= before, "stopping the comparison raised an error"


def test_chinese_labels_and_chart(page):
    page.click("#lang-radio input[value='zh']")
    page.wait_for_function("document.querySelector('#grammar-step-btn').innerText.includes('单步')")
    page.click("#grammar-step-btn")
    page.wait_for_function(f"{TRACE} && {TRACE}.layout.title.text.includes('语法')")
    # the chart and the status line are two outputs of one event: they may paint one after the other
    page.wait_for_function("(document.querySelector('#grammar-status')?.innerText || '').includes('步')")
    page.screenshot(path=str(SHOTS / "grammar_zh.png"), full_page=True)
