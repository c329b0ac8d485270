"""The Many-samples tab in a real browser (headless Debian chromium through playwright): the sweep,
the calibrated-temperature section and a live verifier-tilted run, read the way a person sees them
(plot data from the page, visible text), in English and Chinese. Screenshots go to /tmp/shots/."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from decoding_lab.experiments import ctd_report, sweep

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots")
FILES = sweep.shipped_results()
CTD = ctd_report.load_ctd(ctd_report.ctd_path_for(FILES[0])) if FILES and ctd_report.ctd_path_for(FILES[0]) else None


def plot(elem_id: str) -> str:
    return f"document.querySelector('#{elem_id} .js-plotly-plot')"


def text(page, elem_id: str) -> str:
    return page.evaluate(f"document.querySelector('#{elem_id}').innerText")


# app_url, browser and page: the shared fixtures in conftest.py
pytestmark = [pytest.mark.browser, pytest.mark.skipif(CTD is None, reason="no shipped sweep and CTD files")]


def open_tab(page, lang: str = "en") -> None:
    if lang != "en":
        page.click(f"#lang-radio input[value='{lang}']")
    page.click("#tab-multisample-button")
    if lang != "en":
        page.wait_for_function("document.querySelector('#ms-tilt-run')?.innerText.includes('运行')")
    for elem_id in ("ms-passk-vs-T", "ms-ctd-fit", "ms-ctd-compare"):
        page.wait_for_function(f"{plot(elem_id)} !== null && {plot(elem_id)}.data.length > 0")


def run_tilt(page, summary_has: str, timeout: int = 300_000) -> None:
    page.click("#ms-tilt-run")
    page.wait_for_function(f"document.querySelector('#ms-tilt-summary').innerText.includes({summary_has!r})",
                           timeout=timeout)


def test_ctd_section_shows_the_shipped_numbers(page):
    open_tab(page)
    shown = text(page, "ms-ctd-text")
    first = CTD["rows"][0]
    assert f"T_ctd = {CTD['ctd_temperature']:g}" in shown and f"{first['ctd']:.3f}" in shown
    assert ("CTD did worse" in shown) == (first["ctd"] < first["grid"])
    ys = page.evaluate(f"Array.from({plot('ms-ctd-compare')}.data).map(d => Array.from(d.y))")
    assert ys == [[r[key] for r in CTD["rows"]] for key in ("ctd", "grid", "oracle")]
    names = page.evaluate(f"Array.from({plot('ms-ctd-fit')}.data).map(d => d.name)")
    assert names == ["samples", "pass rate (equal-count bins)", "fit σ(α + βℓ)"]
    n_points = page.evaluate(f"{plot('ms-ctd-fit')}.data[0].x.length")
    assert n_points == CTD["fit"]["samples"]
    assert f"{first['grid']:.4f}".rstrip("0") in text(page, "ms-ctd-table")
    page.screenshot(path=str(SHOTS / "ms_tab.png"), full_page=True)


def test_tilt_run_fixes_greedy_and_draws_every_step(page):
    open_tab(page)
    page.locator("#ms-tilt").scroll_into_view_if_needed()
    run_tilt(page, "best-V candidate")
    texts = text(page, "ms-tilt-texts")
    assert "2 + 5 = 8" in texts and "The answer is 7." in texts and "✗ wrong" in texts and "✓ right" in texts
    summary = text(page, "ms-tilt-summary")
    assert "step 0" in summary and "7 of 7" in summary
    page.wait_for_function(f"{plot('ms-tilt-plot')} !== null")
    picked = page.evaluate(f"{plot('ms-tilt-plot')}.data[3].x.length")
    assert picked == 7                                  # one star per step
    table = text(page, "ms-tilt-table")           # the rows in view (the table scrolls)
    assert "z + ηV" in table and "rollout judged" in table and "★" in table
    page.locator("#ms-tilt").screenshot(path=str(SHOTS / "ms_tilt.png"))


def test_eta_zero_gives_the_plain_tokens_and_stop_stops(page):
    open_tab(page)
    page.click("#ms-tilt-try-eta0")
    page.wait_for_function("document.querySelector('#ms-tilt-eta input').value === '0'")
    assert page.input_value("#ms-tilt-T input[type=number]") == "0.7"
    run_tilt(page, "η = 0")
    assert "bit for bit" in text(page, "ms-tilt-summary")
    page.locator("#ms-tilt-texts").screenshot(path=str(SHOTS / "ms_tilt_eta0.png"))
    # a slow tilted run (many rollout tokens), stopped after its first step
    page.fill("#ms-tilt-eta input", "10")
    page.press("#ms-tilt-eta input", "Tab")
    page.fill("#ms-tilt-rollout input[type=number]", "32")
    page.press("#ms-tilt-rollout input[type=number]", "Enter")
    page.click("#ms-tilt-run")
    page.wait_for_function("document.querySelector('#ms-tilt-summary').innerText.includes('Running the tilted chain')",
                           timeout=120_000)
    page.click("#ms-tilt-stop")                            # the run ends after its current step, with a verdict
    page.wait_for_function("document.querySelector('#ms-tilt-summary').innerText.includes('Stop was pressed')",
                           timeout=60_000)
    summary = text(page, "ms-tilt-summary")
    shown = page.evaluate(f"{plot('ms-tilt-plot')}.data[3].x.length")
    assert 1 <= shown < 24 and "Error" not in summary
    time.sleep(4)
    assert text(page, "ms-tilt-summary") == summary        # nothing arrives after the stop
    assert "answer" in text(page, "ms-tilt-texts")         # both runs got their verdict
    page.locator("#ms-tilt").screenshot(path=str(SHOTS / "ms_tilt_stopped.png"))
    # and the tab runs again; the stopped step may still hold this tab's job slot for a moment
    page.click("#ms-tilt-try-eta0")
    page.wait_for_function("document.querySelector('#ms-tilt-eta input').value === '0'")
    for _ in range(12):
        page.click("#ms-tilt-run")
        page.wait_for_function("document.querySelector('#ms-tilt-summary').innerText.includes('η = 0') "
                               "|| document.querySelector('.toast-body') !== null", timeout=120_000)
        if "η = 0" in text(page, "ms-tilt-summary"):
            break
        assert "busy" in page.evaluate("document.querySelector('.toast-body').innerText")
        page.evaluate("document.querySelectorAll('.toast-close').forEach(b => b.click())")
        time.sleep(5)
    assert "bit for bit" in text(page, "ms-tilt-summary")


def test_chinese(page):
    open_tab(page, "zh")
    assert "校准温度" in text(page, "ms-ctd-text")
    title = page.evaluate(f"{plot('ms-ctd-compare')}.layout.title.text")
    assert "留出集" in title
    assert "验证器倾斜采样" in text(page, "ms-tilt-intro")
    page.click("#ms-tilt-try-vg")                          # T = 0.05, η = 20, short rollouts: verifier-greedy
    page.fill("#ms-tilt-rollout input[type=number]", "8")
    page.press("#ms-tilt-rollout input[type=number]", "Enter")
    run_tilt(page, "验证器贪心")
    summary = text(page, "ms-tilt-summary")
    steps = page.evaluate(f"{plot('ms-tilt-plot')}.data[3].x.length")
    assert f"{steps} / {steps}" in summary                  # every pick was the best-V candidate
    assert "步" in page.evaluate(f"{plot('ms-tilt-plot')}.layout.xaxis.title.text")
    page.screenshot(path=str(SHOTS / "ms_tab_zh.png"), full_page=True)
    page.locator("#ms-tilt").screenshot(path=str(SHOTS / "ms_tilt_zh.png"))
