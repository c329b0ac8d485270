"""Crafted links and inputs, opened in Chromium: a message that echoes them shows their text,
never an element (no link, image or form in the toast)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser

PAYLOAD = ('<a id="evil-link" href="https://evil.example/">click</a><img id="evil-img" src="/x.png">'
           '<form id="evil-form"><input type="password"></form>')
TOASTS = "[data-testid='toast-body']"


def toast_elements(page) -> dict:
    """What the toasts hold: their text, and any element that is not plain text formatting."""
    return page.evaluate(f"""() => {{
        const toasts = [...document.querySelectorAll("{TOASTS}")];
        const bad = toasts.flatMap(t => [...t.querySelectorAll('a, img, form, input, iframe, script, svg image')]
                                        .filter(e => !e.closest('button')));
        return {{n: toasts.length, text: toasts.map(t => t.innerText).join(' | '),
                evil: document.querySelectorAll('#evil-link, #evil-img, #evil-form').length, bad: bad.length}};
    }}""")


def wait_for_toast(page) -> dict:
    page.wait_for_selector(TOASTS, timeout=60_000)
    page.wait_for_timeout(300)
    return toast_elements(page)


def test_a_crafted_share_link_shows_text_only(browser, app_url):
    pg = browser.new_page(viewport={"width": 1366, "height": 768})
    open_page(pg, app_url + "?T=" + quote(PAYLOAD) + "&top_k=" + quote("<img id=evil-img src=y>"))
    seen = wait_for_toast(pg)
    pg.screenshot(path=str(SHOTS / "hostile_share_link.png"))
    assert seen["n"] >= 1 and "is not a number" in seen["text"]
    assert "<a" in seen["text"] or "evil" in seen["text"]      # the visitor sees what was sent, as text
    assert seen["evil"] == 0 and seen["bad"] == 0
    pg.close()


def test_a_crafted_stage_order_shows_text_only(browser, app_url):
    """A link whose order names a "stage" made of markup is refused as the page opens (the default
    order stays), and the same order typed into the box is refused beside it at Step: both show
    what was sent as text, never as elements."""
    pg = browser.new_page(viewport={"width": 1366, "height": 768})
    open_page(pg, app_url + "?order=" + quote("temperature," + PAYLOAD))
    seen = wait_for_toast(pg)
    assert "kept the default order" in seen["text"] and "<a id=" in seen["text"]
    assert seen["evil"] == 0 and seen["bad"] == 0
    assert "evil" not in pg.input_value("#custom-order textarea")
    pg.fill("#custom-order textarea", "temperature," + PAYLOAD)
    pg.locator("#custom-order textarea").press_sequentially(" ")   # a key typed, as a person would: the box's input event
    # typing makes the order "custom" (one round trip); a Step before that would use the preset's order
    pg.wait_for_function("document.querySelector('#order-preset input').value === 'custom'", timeout=60_000)
    pg.click("#step-btn")     # refused beside the order box, before the step runs
    pg.wait_for_function("(document.querySelector('#custom-order .validation-error') || {}).innerText",
                         timeout=60_000)
    text = pg.inner_text("#custom-order .validation-error")
    pg.screenshot(path=str(SHOTS / "hostile_order.png"))
    assert "unknown stage" in text and "<a id=" in text     # what was typed, shown as text
    bad = pg.evaluate("document.querySelectorAll('#custom-order .validation-error *').length")
    assert bad == 0 and toast_elements(pg)["evil"] == 0
    pg.close()


def test_markup_in_a_grammar_shows_text_only(browser, app_url):
    """An invalid regex made of markup: the error echoes it, as text. Typing into the number
    boxes is the browser's job (it sends numbers only); the API side is tests/test_hostile_api.py."""
    pg = browser.new_page(viewport={"width": 1366, "height": 900})
    open_page(pg, app_url, tab="grammar")
    pg.get_by_label("regex").first.check()
    pg.fill("#grammar-text textarea", PAYLOAD + "([0-9]+")
    pg.click("#grammar-step-btn")     # refused under the grammar box, before the step runs
    pg.wait_for_function("(document.querySelector('#grammar-text .validation-error') || {}).innerText",
                         timeout=60_000)
    text = pg.inner_text("#grammar-text .validation-error")
    pg.screenshot(path=str(SHOTS / "hostile_grammar.png"))
    assert "invalid regex" in text and "evil" in text          # what was typed, shown as text
    bad = pg.evaluate("document.querySelectorAll('#grammar-text .validation-error *').length")
    assert bad == 0 and toast_elements(pg)["evil"] == 0
    pg.close()
