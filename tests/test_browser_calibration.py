"""In a real browser: a prediction made with a confidence goes into the learner's calibration (the
Brier score under the progress, kept across a reload like the progress), and lesson 11's calibration
screen draws the learner's own points against the diagonal, in English and in Chinese."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, new_context, open_page
from decoding_lab import learner_calibration as LC
from decoding_lab.lessons import load_lessons

pytestmark = pytest.mark.browser

LESSONS = {les.number: les for les in load_lessons()}
WAIT_MS = 60_000


def _run_with_confidence(page, url: str, number: int, lang: str, pick: int, confidence: str) -> bool:
    """Predict on the lesson's first experiment with ``confidence`` and run it; whether the pick was right."""
    exp = LESSONS[number].experiments[0]
    open_page(page, f"{url}?lesson={number}&screen={exp.screen - 1}&lang={lang}", tab="lessons")
    page.wait_for_selector("#lesson-run", state="visible")
    assert exp.predict.kind in ("min", "max")
    page.locator("#lesson-guess label").nth(pick).click()
    page.locator("#lesson-confidence label", has_text=confidence).click()
    page.click("#lesson-run")
    page.wait_for_selector("#lesson-plot .js-plotly-plot", timeout=WAIT_MS)
    return "✔" in page.inner_text("#lesson-result")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_confident_prediction_enters_the_learners_calibration(browser, app_url, lang):
    ctx = new_context(browser, viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    try:
        right = _run_with_confidence(page, app_url, 3, lang, 0, "90%")
        brier = LC.brier([{"k": "a", "c": 0.9, "ok": right}])
        line = page.inner_text("#lesson-calib-line")
        assert f"{brier:.2f}" in line and ("Brier" in line), line
        # kept in the browser: a reload brings the same line back
        open_page(page, f"{app_url}?lesson=1&screen=0&lang={lang}", tab="lessons")
        page.wait_for_function(f"document.querySelector('#lesson-calib-line').innerText.includes('{brier:.2f}')",
                               timeout=WAIT_MS)
        # lesson 11's calibration screen draws the point: 90% against 0 or 1
        n = LESSONS[11].calibration_screen
        open_page(page, f"{app_url}?lesson=11&screen={n - 1}&lang={lang}", tab="lessons")
        page.wait_for_selector("#lesson-calib-plot .js-plotly-plot", timeout=WAIT_MS)
        xs, ys = page.evaluate("(() => { const d = document.querySelector('#lesson-calib-plot .js-plotly-plot').data;"
                               " return [d[1].x, d[1].y]; })()")
        assert xs == [0.9] and ys == [1.0 if right else 0.0]
        head = page.inner_text("#lesson-calib-text")
        assert ("校准" in head) == (lang == "zh")
        page.locator("#lesson-calib-plot").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"lesson_calibration_{lang}.png"))
    finally:
        ctx.close()


def test_a_prediction_without_a_confidence_is_not_counted(browser, app_url):
    ctx = new_context(browser, viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    try:
        exp = LESSONS[3].experiments[0]
        open_page(page, f"{app_url}?lesson=3&screen={exp.screen - 1}&lang=en", tab="lessons")
        page.wait_for_selector("#lesson-run", state="visible")
        page.locator("#lesson-guess label").first.click()
        page.click("#lesson-run")
        page.wait_for_selector("#lesson-plot .js-plotly-plot", timeout=WAIT_MS)
        assert "give a confidence" in page.inner_text("#lesson-calib-line")
    finally:
        ctx.close()
