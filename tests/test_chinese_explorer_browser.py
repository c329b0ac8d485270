"""The Explorer in Chinese, read the way a person (or a screen reader) meets it: after a cut,
a few steps and an Undo, no English word of ours is left in the status line, the numbers
table, the tokens' spoken labels, the chart's hover text or the saved branches. What the
model wrote (token texts) and names and formulas (p, id, dH/dT, top-p …) may stay."""

from __future__ import annotations

import re

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser

#: English words the Explorer's own strings use; none may reach a Chinese page.
ENGLISH = re.compile(r"(?i)(?<![A-Za-z\-])(step|rank|raw|final|forced|chosen|kept|cut|from|tokens?|sampled|"
                     r"greedy|quantity|value|time|forward|chain|entropy|mass|probability|when|had|the|of|and|"
                     r"at|with|by)(?![A-Za-z\-])")
N_TOKENS = "document.querySelectorAll('#generated-text .gen-tok').length"


def strip_model_text(s: str) -> str:
    """Drop what the model wrote: `token` in backticks, “quoted” branch text, <b>token</b> heads."""
    s = re.sub(r"`[^`]*`", "", s)
    s = re.sub(r"“[^”]*”", "", s)
    return re.sub(r"<b>[^<]*</b>", "", s)


def english_in(s: str) -> list[str]:
    return ENGLISH.findall(strip_model_text(s))


def test_explorer_in_chinese_has_no_english_words_of_ours(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = open_page(ctx.new_page(), app_url)
    try:
        page.click("#lang-radio input[value='zh']")
        page.wait_for_function("document.querySelector('#step-btn').innerText.trim() !== 'Step'")
        page.click("#onboard-show")                      # T 1, top-k 10, top-p 0.7: something is cut
        page.wait_for_function(f"{N_TOKENS} >= 1")
        for _ in range(2):
            n = page.evaluate(N_TOKENS)
            page.click("#step-btn")
            page.wait_for_function(f"{N_TOKENS} > {n}")
        page.click("#undo-btn")                          # the undone step is kept as a branch
        page.wait_for_function(f"{N_TOKENS} === 2")
        found: dict[str, list[str]] = {}
        places = {
            "status": page.inner_text("#status"),
            "numbers": page.inner_text("#numbers"),
            "token labels": " | ".join(page.evaluate(
                "Array.from(document.querySelectorAll('#generated-text .gen-tok')).map(e => e.getAttribute('aria-label'))")),
            "chart hover": " | ".join(page.evaluate(
                "document.querySelector('#dist-chart .js-plotly-plot').data.flatMap(d => d.hovertext || [])")),
            "chart legend": " | ".join(page.evaluate(
                "document.querySelector('#dist-chart .js-plotly-plot').data.map(d => d.name)")),
        }
        page.click("#branches input")
        page.wait_for_function("document.querySelectorAll('#branches li[role=option]').length > 0")
        places["branches"] = page.inner_text("#branches ul")
        for where, text in places.items():
            words = english_in(text)
            if words:
                found[where] = words
        page.screenshot(path=str(SHOTS / "explorer_zh_words.png"), full_page=True)
        assert not found, f"English left in the Chinese Explorer: {found}"
    finally:
        ctx.close()
