"""The Compare tab in a real browser (headless Debian chromium through playwright), read the
way a person reads it: which controls a column shows for its strategy, and what "Send to the
Explorer" does (the tab it lands on, the message it shows, the values it copied).
Screenshots go to /tmp/shots/ (look at them)."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser

#: knobs a greedy or beam column must not show (they act only when a token is drawn)
SAMPLING_IDS = ("temperature", "top-k", "top-p", "min-p", "seed")


@pytest.fixture(scope="module")
def page(browser, app_url):
    pg = open_page(browser.new_page(viewport={"width": 1366, "height": 900}), app_url, tab="compare",
                   timeout_ms=180_000)
    pg.wait_for_selector("#cmp0-strategy")
    yield pg
    pg.close()


def visible(page, col: int, name: str) -> bool:
    return page.locator(f"#cmp{col}-{name}").is_visible()


def pick_strategy(page, col: int, label: str) -> None:
    page.locator(f"#cmp{col}-strategy").get_by_text(label, exact=True).click()


def test_each_strategy_shows_only_its_controls(page):
    # the starting columns: 0 greedy, 1 beam, 2 sampling
    for col in (0, 1):
        assert not any(visible(page, col, k) for k in SAMPLING_IDS), col
        assert visible(page, col, "not-sampling") and visible(page, col, "repetition-penalty")
    assert visible(page, 1, "beams") and visible(page, 1, "alpha") and not visible(page, 0, "beams")
    assert all(visible(page, 2, k) for k in SAMPLING_IDS) and not visible(page, 2, "not-sampling")
    assert "do_sample=False" in page.locator("#cmp0-not-sampling").inner_text()
    page.screenshot(path=str(SHOTS / "compare_controls_per_strategy.png"))

    # switching a column's strategy shows and hides them
    pick_strategy(page, 0, "sampling")
    page.wait_for_function("document.querySelector('#cmp0-top-p') && "
                           "document.querySelector('#cmp0-top-p').offsetParent !== null")
    assert all(visible(page, 0, k) for k in SAMPLING_IDS) and not visible(page, 0, "not-sampling")
    pick_strategy(page, 2, "beam search")
    page.wait_for_selector("#cmp2-beams", state="visible")
    assert not any(visible(page, 2, k) for k in SAMPLING_IDS) and visible(page, 2, "not-sampling")
    pick_strategy(page, 0, "greedy")
    pick_strategy(page, 2, "sampling")
    page.wait_for_selector("#cmp2-top-p", state="visible")
    page.wait_for_selector("#cmp0-not-sampling", state="visible")
    assert not any(visible(page, 0, k) for k in SAMPLING_IDS)


def test_send_copies_prompt_model_settings_and_opens_the_explorer(page):
    prompt = "Name three colours of the sea."
    page.fill("#cmp-prompt textarea", prompt)
    page.fill("#cmp2-min-p input", "0.07")
    page.press("#cmp2-min-p input", "Tab")
    page.click("#cmp2-send")
    # the Explorer tab opens, with the column's prompt and settings in its controls, and says so
    page.wait_for_selector("#step-btn", state="visible")
    toast = page.get_by_text("Column 3 sent to the Explorer", exact=False)
    toast.first.wait_for(state="visible")
    assert "smollm2-135m-instruct" in toast.first.inner_text()
    assert page.locator("#tab-explorer-button").get_attribute("aria-selected") == "true"
    assert page.input_value("#prompt textarea") == prompt
    assert float(page.input_value("#temperature input[type=number]")) == 0.8
    assert float(page.input_value("#top-p input[type=number]")) == 0.9
    assert float(page.input_value("#min-p input[type=number]")) == 0.07
    page.screenshot(path=str(SHOTS / "compare_sent_to_explorer.png"))

    # the same in Chinese, from a greedy column: the message names T = 0
    page.locator("#lang-radio").get_by_text("简体中文").click()
    page.wait_for_function("document.querySelector('#tab-compare-button').innerText.includes('对比')")
    page.click("#tab-compare-button")
    page.click("#cmp0-send")
    zh = page.get_by_text("第 1 列已发送到“探索”", exact=False)
    zh.first.wait_for(state="visible")
    assert "T = 0" in zh.first.inner_text()
    assert page.locator("#tab-explorer-button").get_attribute("aria-selected") == "true"
    assert float(page.input_value("#temperature input[type=number]")) == 0
    page.screenshot(path=str(SHOTS / "compare_sent_to_explorer_zh.png"))
    page.locator("#lang-radio").get_by_text("English").click()


def test_one_temperature_range_everywhere(page):
    from decoding_lab.params import PARAMS
    lo, hi = PARAMS["temperature"].slider_range
    page.click("#tab-explorer-button")
    explorer = [float(page.get_attribute("#temperature input[type=range]", a)) for a in ("min", "max")]
    page.click("#tab-compare-button")
    page.wait_for_selector("#cmp2-temperature input[type=range]", state="visible")
    compare = [float(page.get_attribute("#cmp2-temperature input[type=range]", a)) for a in ("min", "max")]
    assert compare == explorer == [lo, hi]
    page.locator("#cmp2-temperature").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "compare_temperature_slider.png"))
