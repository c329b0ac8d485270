"""The Beam tab in a real browser (headless Debian chromium through playwright): the tree laid
out by hypothesis, a hover lighting up the node's path from the prompt, and the slot layout one
click away. Screenshots go to /tmp/shots/ (look at them)."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser

CHART = "document.querySelector('#beam-chart .js-plotly-plot')"
ANCESTRY = f"{CHART}.data.findIndex(d => d.meta === 'ancestry')"


def test_tree_by_hypothesis_with_hovered_ancestry(browser, app_url):
    page = open_page(browser.new_page(viewport={"width": 1366, "height": 1000}), app_url, tab="beam",
                     timeout_ms=300_000)
    page.fill("#beam-max-new input[type=number]", "10")
    page.press("#beam-max-new input[type=number]", "Enter")
    page.click("#beam-run")
    page.wait_for_function("document.querySelector('#beam-status').innerText.includes('stopped by: ')"
                           " && !document.querySelector('#beam-status').innerText.includes('…')")
    page.wait_for_function(f"{CHART} && {ANCESTRY} >= 0")
    assert "by hypothesis" in page.evaluate(f"{CHART}.layout.title.text")
    # move the mouse onto the last finished node, as a person would
    curve = page.evaluate(f"{CHART}.data.findIndex(d => d.name === 'finished')")
    assert curve >= 0
    n = page.evaluate(f"{CHART}.data[{curve}].x.length")
    page.wait_for_function(f"{CHART}.__ancestry === true", timeout=20_000)  # the hover script has attached
    page.locator("#beam-chart").scroll_into_view_if_needed()
    x, y = page.evaluate(f"""(() => {{ const gd = {CHART}, L = gd._fullLayout, r = gd.getBoundingClientRect();
        const d = gd.data[{curve}];
        return [r.left + L._size.l + L.xaxis.l2p(d.x[{n - 1}]), r.top + L._size.t + L.yaxis.l2p(d.y[{n - 1}])]; }})()""")
    page.mouse.move(x - 30, y - 20)
    page.mouse.move(x, y, steps=5)
    page.wait_for_function(f"{CHART}.data[{ANCESTRY}].x.length > 0", timeout=20_000)
    xs = page.evaluate(f"Array.from({CHART}.data[{ANCESTRY}].x)")
    step = page.evaluate(f"{CHART}.data[{curve}].x[{n - 1}]")
    assert xs == list(range(-1, step + 1))  # the prompt, then one node per step up to the hovered one
    page.locator("#beam-chart").screenshot(path=str(SHOTS / "beam_by_hypothesis_hover.png"))
    page.mouse.move(5, 5)

    page.locator("#beam-layout").get_by_text("by beam slot", exact=True).click()
    page.wait_for_function(f"{CHART} && !{CHART}.layout.title.text.includes('hypothesis')")
    page.screenshot(path=str(SHOTS / "beam_by_slot.png"), full_page=True)
    page.close()
