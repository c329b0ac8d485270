"""The app in Chinese, read the way a person (or a screen reader) meets it. In the Explorer,
after a cut, a few steps and an Undo, no English word of ours is left in the status line, the
numbers table, the tokens' spoken labels, the chart's hover text or the saved branches; on
every other tab, after its main run, none in its text or its charts (titles, axes, legends,
hovers). What the model wrote (token texts) and names and formulas (p, id, dH/dT, top-p …)
may stay."""

from __future__ import annotations

import re

import pytest

from conftest_app import SHOTS, new_context, open_page

pytestmark = pytest.mark.browser

#: English words the Explorer's own strings use; none may reach a Chinese page.
ENGLISH = re.compile(r"(?i)(?<![A-Za-z\-])(step|rank|raw|final|forced|chosen|kept|cut|from|tokens?|sampled|"
                     r"greedy|quantity|value|time|forward|chain|entropy|mass|probability|when|had|the|of|and|"
                     r"at|with|by|use|via|built|settings|runs|copy|table|fullscreen|open|menu|upload|actions)"
                     r"(?![A-Za-z\-])")
N_TOKENS = "document.querySelectorAll('#generated-text .gen-tok').length"


def strip_model_text(s: str) -> str:
    """Drop what the model wrote: `token` in backticks, “quoted” branch text, <b>token</b> heads,
    and the glossary's English term once in parentheses (词元修复（token healing）)."""
    s = re.sub(r"`[^`]*`", "", s)
    s = re.sub(r"“[^”]*”", "", s)
    s = re.sub(r"（[A-Za-z][A-Za-z \-]*）", "", s)
    return re.sub(r"<b>[^<]*</b>", "", s)


def english_in(s: str) -> list[str]:
    return ENGLISH.findall(strip_model_text(s))


def test_explorer_in_chinese_has_no_english_words_of_ours(browser, app_url):
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
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
        places["gradio's footer and table tooltips"] = " | ".join([page.inner_text("footer"), *page.evaluate(
            "[...document.querySelectorAll('#step-table [aria-label], #step-table [title]')]"
            ".map(e => e.getAttribute('aria-label') || e.getAttribute('title'))")])
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


#: Every plot's visible words: titles, axis titles, trace names, hover texts and templates.
PLOT_WORDS = """Array.from(document.querySelectorAll('#tab-TAB .js-plotly-plot')).flatMap(p => {
  const l = p.layout || {}, ax = (a) => ((a || {}).title || {}).text || '';
  return [((l.title || {}).text || ''), ax(l.xaxis), ax(l.yaxis), ax(l.xaxis2), ax(l.yaxis2)].concat(
    (p.data || []).flatMap(d => [d.name || '', d.hovertemplate || ''].concat([].concat(d.hovertext || []))));
}).join(' | ')"""
#: The model's own output on each tab, left out of the scan: texts it generated (a status line quotes
#: them in a code span, ``common.markdown.code_span``), beam rows, charts (read below).
MODEL_TEXT = ".cmp-text, .det-text, .gen-tok, #beam-table, .js-plotly-plot, code"


@pytest.mark.parametrize("tab,run,done", [
    ("compare", "#cmp-run", "document.querySelectorAll('#tab-compare .js-plotly-plot').length > 0"),
    ("beam", "#beam-run", "document.querySelectorAll('#tab-beam .js-plotly-plot').length > 0"),
    ("grammar", "#grammar-step-n-btn", "document.querySelectorAll('#grammar-generated span[title]').length >= 8"),
    ("determinism", "#determinism-run", "document.querySelectorAll('#tab-determinism .js-plotly-plot').length > 0"),
    ("multisample", None, "document.querySelectorAll('#tab-multisample .js-plotly-plot').length > 0"),
])
def test_every_tab_in_chinese_after_its_run(browser, app_url, tab, run, done):
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
    page = open_page(ctx.new_page(), app_url)
    try:
        page.click("#lang-radio input[value='zh']")
        page.wait_for_function("document.querySelector('#step-btn').innerText.trim() !== 'Step'")
        page.click(f"#tab-{tab}-button")
        if run:
            page.click(run)
        page.wait_for_function(done, timeout=180_000)
        page.wait_for_timeout(1500)                 # the run's last redraw
        text = page.evaluate(f"""(() => {{ const root = document.querySelector('#tab-{tab}').cloneNode(true);
            root.querySelectorAll({MODEL_TEXT!r}).forEach(e => e.remove()); return root.innerText; }})()""")
        text += " | ".join(page.evaluate(f"Array.from(document.querySelectorAll('#tab-{tab} th')).map(e => e.innerText)"))
        plots = page.evaluate(PLOT_WORDS.replace("TAB", tab))
        found = {where: english_in(t) for where, t in (("text", text), ("charts", plots)) if english_in(t)}
        page.screenshot(path=str(SHOTS / f"zh_{tab}.png"), full_page=True)
        assert not found, f"English left on the Chinese {tab} tab: {found}"
    finally:
        ctx.close()


def test_a_toast_reads_in_chinese(browser, app_url):
    """Gradio titles a toast by its kind ("Info"); in Chinese the page writes it over."""
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + "?tab=grammar&lang=zh")
    try:
        page.wait_for_function("document.querySelector('#lang-radio input[value=\"zh\"]').checked")
        page.fill("#grammar-prompt textarea", "我的提示词")
        page.get_by_label("JSON Schema").first.check()    # the typed prompt is kept, and a toast says so
        page.wait_for_selector(".toast-body", timeout=30_000)
        page.wait_for_function("document.querySelector('.toast-title').innerText.trim() === '信息'", timeout=10_000)
        assert "保留了你写的提示词" in page.inner_text(".toast-body")
    finally:
        ctx.close()
