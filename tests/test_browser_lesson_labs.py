"""In a real browser: a lesson's lab appears under the learner's run (never before it), moving its
control redraws it from the same step with the chain's own counts, a sweep lab follows k, and
teacher mode draws it at projection size; in English and in Chinese."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, new_context, open_page, settle
from decoding_lab import lesson_labs as L
from decoding_lab import lesson_runs
from decoding_lab.lessons import load_lessons

pytestmark = pytest.mark.browser

LESSONS = {les.number: les for les in load_lessons()}
WAIT_MS = 60_000


def _open(page, url: str, number: int, screen: int, lang: str) -> None:
    open_page(page, f"{url}?lesson={number}&screen={screen}&lang={lang}", tab="lessons")
    page.wait_for_selector("#lesson-run", state="visible")


def _predict_and_run(page) -> None:
    assert not page.is_visible("#lesson-lab-plot")            # nothing of the lab before the prediction's run
    if page.is_visible("#lesson-guess-number"):
        page.fill("#lesson-guess-number input", "100")
        page.press("#lesson-guess-number input", "Tab")
    else:
        page.locator("#lesson-guess label").first.click()
    page.click("#lesson-run")
    page.wait_for_selector("#lesson-lab-plot .js-plotly-plot", timeout=WAIT_MS)


def _set(page, elem_id: str, value: str, expect: str) -> str:
    """Type ``value`` into a slider's box and leave it (a release): wait for the numbers to say ``expect``."""
    box = f"#{elem_id} input[type=number]"
    page.fill(box, value)
    page.press(box, "Tab")
    page.wait_for_function(f"document.querySelector('#lesson-lab-stats').innerText.includes({expect!r})",
                           timeout=WAIT_MS)
    return page.inner_text("#lesson-lab-stats")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cuts_lab_redraws_the_learners_step(browser, app_url, smollm, lang):
    les = LESSONS[5]
    exp = next(e for e in les.experiments if e.lab == "cuts")
    ctx = new_context(browser, viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    try:
        _open(page, app_url, 5, exp.screen - 1, lang)
        _predict_and_run(page)
        # the lab at the experiment's own settings says what the run measured, in the page's language
        stats = page.inner_text("#lesson-lab-stats")
        top_p, min_p = (exp.expect[v.key] for v in exp.variants)
        assert f"{top_p:,}" in stats and f"{min_p:,}" in stats, stats
        assert ("保留" in stats) == (lang == "zh")
        # cooler: the counts the chain gives on the same step, computed here on the same model
        step = lesson_runs.run(exp, lambda name: smollm).lab_step
        view = L.look(step, L.lab_settings("cuts", exp.settings, 1.2, top_p=0.9), smollm.token_str)
        stats = _set(page, "lesson-lab-t", "1.2", f"{view.top_p_kept:,}")
        assert f"{view.min_p_kept:,}" in stats and view.top_p_kept < top_p
        # top-p lower: fewer tokens kept, the slider for T keeps its value
        view = L.look(step, L.lab_settings("cuts", exp.settings, 1.2, top_p=0.5), smollm.token_str)
        _set(page, "lesson-lab-x", "0.5", "top-p 0.5")
        assert f"{view.top_p_kept:,}" in page.inner_text("#lesson-lab-stats")
        assert page.input_value("#lesson-lab-t input[type=number]") == "1.2"
        assert page.is_visible("#lesson-lab-bars .js-plotly-plot")
        assert not page.query_selector(".toast-body.error")
        page.locator("#lesson-lab-plot").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"lesson_lab_cuts_{lang}.png"))
    finally:
        ctx.close()


def test_the_passk_lab_follows_k_and_teacher_mode_projects_it(browser, app_url):
    les = LESSONS[9]
    exp = next(e for e in les.experiments if e.lab == "passk")
    ctx = new_context(browser, viewport={"width": 1920, "height": 1080})
    page = ctx.new_page()
    try:
        _open(page, app_url, 9, exp.screen - 1, "en")
        page.click("#teacher-mode input")
        page.wait_for_function("getComputedStyle(document.querySelector('#lesson-text .prose')).fontSize === '28px'")
        settle(page)     # teacher mode redraws the screen: its prediction box too
        _predict_and_run(page)
        import json
        from decoding_lab.experiments.sweep import ASSET_DIR
        result = json.loads((ASSET_DIR / exp.file).read_text(encoding="utf-8"))
        hot = L.passk_lines(result, 16)["min-p"][-1]
        stats = _set(page, "lesson-lab-x", "16", "pass@16")
        assert f"min-p {hot[1] + 1e-9:.2f}" in stats, stats
        assert not page.is_visible("#lesson-lab-bars .js-plotly-plot")       # one picture: it takes the width
        # projector-sized type in the picture, and a slider box wide enough for its digits
        size = page.evaluate("document.querySelector('#lesson-lab-plot .js-plotly-plot').layout.font.size")
        assert size >= 24
        box = page.locator("#lesson-lab-x input[type=number]")
        assert box.evaluate("e => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1")
        assert float(box.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 20
        # and nothing around it clips it (the slider's header box is 24 px high by default)
        assert box.evaluate("e => e.parentElement.getBoundingClientRect().height >= e.getBoundingClientRect().height")
        page.locator("#lesson-lab-plot").scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "lesson_lab_passk_teacher.png"))
    finally:
        ctx.close()
