"""A bad value is refused at its control, in a real browser: typed out of range, it is neither
clamped nor run; the message stands beside that control (in the visitor's language), no other
block is marked with an error, and fixing the value clears it. Screenshots go to /tmp/shots/."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, new_context, open_page

pytestmark = pytest.mark.browser

TOKENS = "document.querySelectorAll('#generated-text .gen-tok').length"
ERROR_BLOCKS = "[...document.querySelectorAll('.error')].length"


def message_at(page, elem_id: str) -> str:
    return page.evaluate(f"(document.querySelector('#{elem_id} .validation-error') || {{innerText: ''}}).innerText")


@pytest.mark.parametrize("lang, says", [("en", "top-p must be <= 1, got 1.5"), ("zh", "top-p 必须 <= 1，收到的是 1.5")])
def test_an_out_of_range_value_is_refused_beside_its_control(browser, app_url, lang, says):
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + ("?lang=zh" if lang == "zh" else ""))
    try:
        if lang == "zh":   # the page relabels itself after reading the link; a relabel redraws the controls
            page.wait_for_function("document.querySelector('#top-p').innerText.includes('核采样')")
        box = "#top-p input[type=number]"
        page.fill(box, "1.5")
        page.press(box, "Tab")                      # a slider's box would clamp it to 1 here
        assert page.input_value(box) == "1.5"       # what was typed stays, not a silent 1 (off)
        page.click("#step-btn")                     # refused before it runs: nothing stepped, no error badges
        page.wait_for_function("(document.querySelector('#top-p .validation-error') || {}).innerText",
                               timeout=60_000)
        page.wait_for_timeout(1000)
        assert page.evaluate(TOKENS) == 0
        assert page.evaluate(ERROR_BLOCKS) == 0 and not page.query_selector(".toast-body.error")
        assert says in message_at(page, "top-p")
        page.locator("#top-p").scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"control_refusal_{lang}.png"))
        page.fill("#top-k input", "-3")            # a number box: the same, beside it
        page.press("#top-k input", "Tab")
        page.wait_for_function("(document.querySelector('#top-k .validation-error') || {}).innerText", timeout=30_000)
        assert "-3" in message_at(page, "top-k")
        page.fill("#top-k input", "0")
        page.press("#top-k input", "Tab")
        page.fill(box, "0.9")
        page.press(box, "Tab")
        page.wait_for_function("!document.querySelector('#top-p .validation-error') && "
                               "!document.querySelector('#top-k .validation-error')", timeout=30_000)
        page.click("#step-btn")                     # fixed: the step runs
        page.wait_for_function(f"{TOKENS} >= 1", timeout=60_000)
    finally:
        ctx.close()


def test_compare_refuses_a_bad_column_setting_beside_it(browser, app_url):
    """Compare: a column's bad value is marked under that column's control as it is typed, and
    Run refuses to start (no column output, no error badges) until it is fixed."""
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url, tab="compare")
    try:
        box = "#cmp2-top-p input"
        page.fill(box, "1.5")
        page.press(box, "Tab")
        page.wait_for_function("(document.querySelector('#cmp2-top-p .validation-error') || {}).innerText",
                               timeout=30_000)
        assert "top-p must be <= 1, got 1.5" in message_at(page, "cmp2-top-p")
        page.click("#cmp-run")
        page.wait_for_timeout(1500)
        assert page.evaluate(ERROR_BLOCKS) == 0 and not page.query_selector(".toast-body.error")
        assert "waiting" in page.inner_text("#cmp0-output")        # nothing ran
        page.locator("#cmp2-top-p").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "compare_refusal.png"))
    finally:
        ctx.close()


def test_an_engine_only_stage_and_an_empty_raw_prompt_are_refused_beside_their_controls(browser, app_url):
    """DRY (llama.cpp's alone) under transformers' order, and a raw prompt with nothing for SmolLM2 to
    continue from: each is refused under its own control before the Step runs, no block marked
    "Error" and nothing stepped."""
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + "?dry=0.8")
    try:
        # the link opens the box DRY is in (a setting it turns on is drawn); open it by hand otherwise
        if not page.locator("#dry").first.is_visible():
            page.get_by_text("More samplers (llama.cpp)").first.click()
        # the box's controls are drawn when it opens: wait for the control, then for the link's value in it
        page.wait_for_function("parseFloat((document.querySelector('#dry input[type=number]') || {}).value) === 0.8",
                               timeout=60_000)
        page.click("#step-btn")
        page.wait_for_function("(document.querySelector('#dry .validation-error') || {}).innerText", timeout=60_000)
        page.wait_for_timeout(1000)
        assert "dry is not in transformers generate()'s sampler" in message_at(page, "dry")
        assert page.evaluate(TOKENS) == 0
        assert page.evaluate(ERROR_BLOCKS) == 0 and not page.query_selector(".toast-body.error")
        page.locator("#dry").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "control_refusal_dry.png"))
        page.fill("#dry input[type=number]", "0")
        page.press("#dry input[type=number]", "Tab")
        page.fill("#prompt textarea", "")
        page.click("#chat-mode input[value='raw']")
        page.click("#step-btn")
        page.wait_for_function("(document.querySelector('#prompt .validation-error') || {}).innerText",
                               timeout=60_000)
        page.wait_for_timeout(1000)
        assert "the prompt is empty" in message_at(page, "prompt")
        assert page.evaluate(TOKENS) == 0 and page.evaluate(ERROR_BLOCKS) == 0
        page.locator("#prompt").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "control_refusal_empty_raw_prompt.png"))
    finally:
        ctx.close()
