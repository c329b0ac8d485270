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
