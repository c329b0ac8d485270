"""The Explorer as a newcomer sees it, in headless chromium: what the page shows is read from the
page (legend texts, bar colours and heights, the hover box, font sizes, element boxes) and
checked against the core, recomputed in-process with the same settings.

Screenshots go to /tmp/shots/teach_*.png."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, new_context, open_page

pytestmark = pytest.mark.browser

CHART = "document.querySelector('#dist-chart .js-plotly-plot')"
N_TOKENS = "document.querySelectorAll('#generated-text .gen-tok').length"
#: A first step where decoding visibly cuts: top-p removes "One" (p ≈ 0.12) and top-k the tail.
CUT_QUERY = "?prompt=Tell+me+a+story.&T=1&top_k=10&top_p=0.7&seed=1"


def step(page) -> None:
    n = page.evaluate(N_TOKENS)
    page.click("#step-btn")
    page.wait_for_function(f"{N_TOKENS} > {n} && {CHART} && {CHART}.layout.title.text.match(/Step {n}:|第 {n} 步/)")


#: The colour a person sees in a shape: its fill, or a hatch pattern's background colour.
COLOUR_JS = """const colour = (el) => { const f = getComputedStyle(el).fill; const m = f.match(/#([^"')]+)/);
    const rect = m && document.getElementById(m[1]) && document.getElementById(m[1]).querySelector('rect');
    return rect ? getComputedStyle(rect).fill : f; };"""


def legend(page) -> list[dict]:
    """Each legend entry as drawn: its text and the fill colour of its swatch."""
    return page.evaluate("(() => {" + COLOUR_JS + """
        return Array.from(document.querySelectorAll('#dist-chart .legend .traces')).map(e => ({
            text: e.querySelector('.legendtext').textContent, fill: colour(e.querySelector('.legendpoints path'))}));
        })()""")


def bars(page) -> list[dict]:
    """Every drawn bar: its series' name, token id, colour and height in pixels (in view, so the
    mouse can reach it)."""
    page.evaluate("document.querySelector('#dist-chart').scrollIntoView({block: 'center'})")
    return page.evaluate("(() => {" + COLOUR_JS + f"""const gd = {CHART}; const out = [];
        gd.querySelectorAll('.barlayer .trace.bars').forEach(g => {{
            const d = g.__data__[0].trace;   // plotly binds each group to its trace's calcdata
            g.querySelectorAll('.point').forEach(pt => {{ const path = pt.querySelector('path');
                if (!path) return; const b = path.getBoundingClientRect();
                out.push({{name: d.name, id: d.customdata[pt.__data__.i], fill: colour(path), h: b.height,
                           x: b.x + b.width / 2, y: b.y + Math.min(b.height / 2, 3)}}); }}); }});
        return out; }})()""")


def box(page, selector: str) -> dict | None:
    return page.evaluate(f"(() => {{ const e = document.querySelector({selector!r}); if (!e) return null; "
                         "const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, r: b.right, b: b.bottom}; })()")


def overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["r"] and b["x"] < a["r"] and a["y"] < b["b"] and b["y"] < a["b"]


def hover_text(page, bar: dict) -> str:
    page.mouse.move(bar["x"], bar["y"])
    page.wait_for_function("document.querySelector('#dist-chart .hoverlayer .hovertext') !== null")
    return page.evaluate("document.querySelector('#dist-chart .hoverlayer .hovertext').textContent")


def test_chart_colours_each_fate_names_the_stage_and_has_a_log_view(browser, app_url, smollm):
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + CUT_QUERY)
    page.wait_for_function("document.querySelector('#top-p input[type=number]').value === '0.7'")
    step(page)
    core = Stepper.from_prompt(smollm, "Tell me a story.", True,
                               SamplingSettings(temperature=1.0, top_k=10, top_p=0.7, seed=1), top_n=20).step()
    cut = {r.token_id: r for r in core.top if r.cut_by}
    assert {r.cut_by for r in cut.values()} == {"top-k", "top-p"}

    entries = {e["text"]: e["fill"] for e in legend(page)}
    assert set(entries) == {"p raw (T = 1)", "p final (sampled from)", "chosen (drawn at random from p final)",
                            "✂ cut by top-k (p when cut)", "✂ cut by top-p (p when cut)"}
    fills = list(entries.values())
    assert len(set(fills)) == len(fills), f"two fates share a colour: {entries}"

    drawn = bars(page)
    for r in cut.values():   # each cut token has a bar in its stage's colour, as tall as p when cut
        mine = [b for b in drawn if b["id"] == r.token_id and b["name"] == f"✂ cut by {r.cut_by} (p when cut)"]
        assert len(mine) == 1 and mine[0]["fill"] == entries[mine[0]["name"]]
    top_p_cut = max((r for r in cut.values() if r.cut_by == "top-p"), key=lambda r: r.p_cut)
    target = next(b for b in drawn if b["id"] == top_p_cut.token_id and "top-p" in b["name"])
    assert target["h"] > 20   # p ≈ 0.12 at the cut: a bar one can see, not a sliver at zero
    shown = hover_text(page, target)
    assert f"cut by top-p: it had p = {top_p_cut.p_cut:.4f} when top-p removed it" in shown, shown

    # every text on the chart is readable (>= 11 px) and no bar carries a label
    sizes = page.evaluate("Array.from(document.querySelectorAll('#dist-chart svg text')).filter(e => e.textContent)"
                          ".map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert sizes and min(sizes) >= 11, sizes
    assert page.evaluate("document.querySelectorAll('#dist-chart .barlayer text').length") == 0
    title, leg = box(page, "#dist-chart .gtitle"), box(page, "#dist-chart .legend")
    page.mouse.move(400, 300)
    page.hover("#dist-chart .plot-container", position={"x": 300, "y": 200})
    modebar = box(page, "#dist-chart .modebar")
    assert not overlap(title, leg) and (modebar is None or not overlap(title, modebar))
    page.screenshot(path=str(SHOTS / "teach_cut_linear.png"))

    # log view: the smallest cut bars become visible, one tick per decade
    page.click("#log-view input")
    page.wait_for_function(f"{CHART} && {CHART}.layout.yaxis.type === 'log'")
    ticks = page.evaluate("Array.from(document.querySelectorAll('#dist-chart .ytick text')).map(e => e.textContent)")
    assert ticks and set(ticks) <= {"1", "0.1", "0.01", "10⁻³", "10⁻⁴", "10⁻⁵", "10⁻⁶"}, ticks
    smallest = min((r for r in cut.values()), key=lambda r: r.p_cut)
    tiny = next(b for b in bars(page) if b["id"] == smallest.token_id and "cut by" in b["name"])
    assert tiny["h"] > 20, tiny
    step(page)   # the choice is kept for the next step
    assert page.evaluate(f"{CHART}.layout.yaxis.type") == "log"
    page.locator("#dist-chart").screenshot(path=str(SHOTS / "teach_cut_log.png"))
    ctx.close()


def test_greedy_is_named_argmax_in_both_languages(page):
    page.fill("#temperature input[type=number]", "0")
    page.press("#temperature input[type=number]", "Enter")
    step(page)
    texts = [e["text"] for e in legend(page)]
    assert "chosen = argmax (greedy)" in texts and "p final (greedy takes the highest)" in texts
    assert not any("sampled" in x or "random" in x for x in texts), texts
    page.get_by_text("简体中文").click()
    page.wait_for_function(f"{CHART} && {CHART}.layout.title.text.includes('第 0 步')")
    texts = [e["text"] for e in legend(page)]
    assert "被选中 = 最大值（贪心）" in texts and "原始概率（T = 1）" in texts, texts
    chosen = next(b for b in bars(page) if b["name"] == "被选中 = 最大值（贪心）")
    shown = hover_text(page, chosen)
    assert "排名 1" in shown and "被选中 = 最大值（贪心）" in shown, shown
    page.locator("#dist-chart").screenshot(path=str(SHOTS / "teach_greedy_zh.png"))


def test_first_visit_strip_loads_a_step_that_cuts(browser, app_url):
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url)
    strip = page.locator("#onboard").first
    strip.wait_for(state="visible")
    assert "How to read this screen" in strip.inner_text()
    assert page.locator("#onboard-text li").count() == 3
    page.screenshot(path=str(SHOTS / "teach_first_visit.png"))
    page.click("#onboard-show")
    page.wait_for_function(f"{CHART} && {CHART}.layout.title.text.startsWith('Step 0:')")
    assert not strip.is_visible()
    assert page.input_value("#top-p input[type=number]") == "0.7" and page.input_value("#top-k input") == "10"
    assert "Loaded the prompt “Tell me a story.” with T 1, top-k 10, top-p 0.7" in page.inner_text("#status")
    texts = [e["text"] for e in legend(page)]
    assert "✂ cut by top-p (p when cut)" in texts and "✂ cut by top-k (p when cut)" in texts, texts
    assert max(b["h"] for b in bars(page) if "cut by top-p" in b["name"]) > 20   # a cut one can see

    # the chat template folds into one line that names the prompt; the whitespace note is there
    summary = page.locator("#gen-box details.gen-template > summary")
    assert "“Tell me a story.”" in summary.inner_text()
    assert summary.bounding_box()["height"] < 30
    assert "<|im_start|>" not in page.locator("#gen-box").inner_text()
    assert "␣ = space · ↵ = newline" in page.locator("#generated-text .gen-legend").inner_text()
    page.evaluate("window.scrollTo(0, 0)")
    assert page.locator("#dist-chart").bounding_box()["y"] < 768 - 150   # the chart starts in the first screen
    page.screenshot(path=str(SHOTS / "teach_first_cut.png"))
    summary.click()
    assert "<|im_start|>" in page.locator("#gen-box .gen-template-full").inner_text()

    page.reload()
    page.wait_for_selector("#step-btn")
    page.wait_for_timeout(1500)
    assert not page.locator("#onboard").first.is_visible()   # remembered in this browser
    ctx.close()


def test_strip_in_chinese_and_hide(browser, app_url):
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + "?lang=zh")
    strip = page.locator("#onboard").first
    page.wait_for_function("document.querySelector('#onboard-text').innerText.includes('如何阅读这个页面')")
    assert "知道了" in page.inner_text("#onboard-hide")
    page.click("#onboard-hide")
    strip.wait_for(state="hidden")
    step(page)
    assert "␣ = 空格 · ↵ = 换行" in page.locator("#generated-text .gen-legend").inner_text()
    assert "对话模板" in page.locator("#gen-box details.gen-template > summary").inner_text()
    ctx.close()


POPOVER_ROWS = """Array.from(document.querySelectorAll('#gen-pop.open .gen-alt')).map(b => ({
    rank: b.querySelector('.gen-alt-rank').textContent, tok: b.querySelector('.gen-alt-tok').textContent,
    p: b.querySelector('.gen-alt-p').textContent, fate: b.querySelector('.gen-alt-fate').textContent,
    disabled: b.disabled}))"""


def test_token_popover_lists_alternatives_and_forces_an_earlier_step(browser, app_url, smollm):
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    from decoding_lab.ui.common.plots import show_token
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + CUT_QUERY)
    page.wait_for_function("document.querySelector('#top-p input[type=number]').value === '0.7'")
    page.click("#onboard-hide")
    for _ in range(3):
        step(page)
    settings = SamplingSettings(temperature=1.0, top_k=10, top_p=0.7, seed=1)
    core = Stepper.from_prompt(smollm, "Tell me a story.", True, settings, top_n=20)
    traces = core.steps(3)
    second = sorted(traces[1].top, key=lambda r: r.rank)[:6]

    page.hover("#gen-box .gen-tok[data-step='1']")
    page.wait_for_selector("#gen-pop.open")
    assert page.inner_text("#gen-pop .gen-pop-head") == "Step 1: the top alternatives"
    rows = page.evaluate(POPOVER_ROWS)
    assert [r["tok"] for r in rows] == [show_token(r.token) for r in second]
    assert [r["rank"] for r in rows] == [f"#{r.rank}" for r in second]
    for shown, r in zip(rows, second):
        assert shown["p"] == f"p {r.p_raw:.4f}" or shown["p"] == f"p {r.p_raw:.1e}"
        if r.token_id == traces[1].chosen_token_id:
            assert shown["fate"].startswith("★ chosen") and shown["disabled"]
        elif r.cut_by:
            assert shown["fate"] == f"✂ cut by {r.cut_by}"
        else:
            assert shown["fate"].startswith("kept")
    page.screenshot(path=str(SHOTS / "teach_popover.png"))

    # choose an alternative at step 1 (not the last step): it is forced there, steps 2.. become a branch
    alt = next(i for i, r in enumerate(second) if r.token_id != traces[1].chosen_token_id)
    page.locator("#gen-pop .gen-alt").nth(alt).click()
    page.wait_for_function(f"{N_TOKENS} === 2 && document.querySelector('#gen-box .gen-tok.forced') !== null")
    forced = page.locator("#gen-box .gen-tok.forced")
    assert forced.get_attribute("data-step") == "1"
    assert forced.inner_text().replace("↵", "\n") == show_token(second[alt].token).replace("↵", "\n")
    core.rewind(1)
    core.step(force_token_id=second[alt].token_id)
    shown = page.evaluate("Array.from(document.querySelectorAll('#gen-box .gen-tok')).map(e => e.textContent)")
    assert "".join(shown) == "".join(show_token(t.chosen_token) for t in core.traces)
    page.click("#branches input")
    page.wait_for_function("document.querySelectorAll('#branches li[role=option]').length > 0")
    options = page.locator("#branches li[role=option]")
    assert options.count() == 1 and "from step 1, +2 tokens" in options.first.text_content()   # steps 1-2 saved
    ctx.close()


def test_token_popover_opens_on_tap_in_chinese(browser, app_url):
    ctx = new_context(browser, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = open_page(ctx.new_page(), app_url + CUT_QUERY + "&lang=zh")
    page.wait_for_function("document.querySelector('#step-btn').innerText.includes('单步')")
    step(page)
    page.tap("#gen-box .gen-tok[data-step='0']")
    page.wait_for_selector("#gen-pop.open")
    text = page.inner_text("#gen-pop")
    assert "第 0 步：排名靠前的候选" in text and "被 top-p 截断" in text and "★ 被选中" in text, text
    box = page.locator("#gen-pop").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390   # inside the phone's screen
    page.screenshot(path=str(SHOTS / "teach_popover_phone_zh.png"))
    ctx.close()


def test_phone_puts_the_step_row_and_chart_before_the_settings(browser, app_url):
    ctx = new_context(browser, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = open_page(ctx.new_page(), app_url)
    page.click("#onboard-hide")
    y = lambda sel: page.locator(sel).first.bounding_box()["y"]  # noqa: E731
    assert y("#step-btn") + 40 < 844                      # Step is on the first screen
    assert y("#dist-chart") < y("#prompt") < y("#temperature")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390   # no sideways scrolling
    step(page)
    # every token's label is drawn (plotly alone shows every other one at this width)
    page.wait_for_function("document.querySelectorAll('#dist-chart .xtick text').length === "
                           f"{CHART}.data[0].x.length", timeout=10_000)
    # read once the phone's relayout is drawn: a frame before it, plotly may not have placed the legend yet
    title, leg = box(page, "#dist-chart .gtitle"), box(page, "#dist-chart .legend")
    assert not overlap(title, leg)
    page.screenshot(path=str(SHOTS / "teach_phone.png"), full_page=False)
    ctx.close()


def test_a_changed_prompt_starts_a_new_run(page):
    page.click("#onboard-hide")
    step(page)   # a run exists (one token), so the next Step with a new prompt is a new run
    page.fill("#prompt textarea", "Tell me a story.")
    page.click("#step-btn")
    page.wait_for_function("document.querySelector('#status').innerText.includes('new run')")
    assert page.evaluate(N_TOKENS) == 1
    assert "“Tell me a story.”" in page.inner_text("#gen-box details.gen-template > summary")
    assert "New prompt or model: this is a new run from step 0" in page.inner_text("#status")
    step(page)   # the notice is said once
    assert "new run" not in page.inner_text("#status")
    page.screenshot(path=str(SHOTS / "teach_new_run.png"))


CUT_BARS = """Array.from(document.querySelectorAll('#dist-chart .barlayer .trace.bars')).filter(g =>
    String(g.__data__[0].trace.name).includes('✂')).flatMap(g => Array.from(g.querySelectorAll('.point path')))
    .map(p => { const b = p.getBoundingClientRect(); return {top: b.top, bottom: b.bottom, h: b.height}; })"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_show_me_a_cut_brings_the_cut_into_view_and_the_strip_points_to_the_lessons(browser, app_url, lang):
    """At 1366 x 768 the chart starts about 600 px down: after "Show me a cut" the page scrolls so
    that every cut bar is inside the window, with no scrolling of the visitor's own. The strip's
    "Start with the lessons" opens the Lessons tab, and the strip is still there when the newcomer
    comes back to the Explorer (only "Got it" and "Show me a cut" put it away): one page tries both."""
    words = {"en": ("New here?", "Start with the lessons", "the Lessons tab explains why"),
             "zh": ("第一次来？", "从课程开始", "「课程」标签页会逐个阶段讲解原因")}[lang]
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    try:
        page = open_page(ctx.new_page(), app_url + ("?lang=zh" if lang == "zh" else ""))
        page.locator("#onboard").first.wait_for(state="visible")
        page.wait_for_function(f"document.querySelector('#onboard-lessons').innerText.includes({words[1]!r})")
        assert words[0] in page.inner_text("#onboard-text")
        page.screenshot(path=str(SHOTS / f"teach_strip_{lang}.png"))
        assert page.evaluate("window.scrollY") == 0
        # a newcomer who reads first: the lessons button opens the Lessons tab ...
        page.click("#onboard-lessons")
        page.wait_for_function("document.querySelector('#tab-lessons-button').getAttribute('aria-selected') === 'true'")
        page.wait_for_function("location.search.includes('tab=lessons')")
        # ... and back on the Explorer, at the top of the page, the strip still offers a cut
        page.click("#tab-explorer-button")
        page.locator("#onboard").first.wait_for(state="visible")
        page.evaluate("window.scrollTo(0, 0)")
        assert page.evaluate("window.scrollY") == 0
        page.click("#onboard-show")
        page.wait_for_function(f"{CHART} && {CHART}.data.some(d => String(d.name).includes('✂'))")
        page.wait_for_function(f"(() => {{ const b = {CUT_BARS}; return b.length > 0 && b.every(x => x.top >= 0 "
                               "&& x.bottom <= window.innerHeight); })()", timeout=10_000)
        cut = page.evaluate(CUT_BARS)
        assert max(b["h"] for b in cut) > 20          # a cut one can see, inside the window
        assert page.evaluate("window.scrollY") > 0     # the page moved, the visitor did not have to
        assert words[2] in page.inner_text("#status")
        page.screenshot(path=str(SHOTS / f"teach_cut_in_view_{lang}.png"))
    finally:
        ctx.close()


FONT = "(sel) => Array.from(document.querySelectorAll(sel)).filter(e => e.textContent.trim()).map(e => parseFloat(getComputedStyle(e).fontSize))"


def font_sizes(page, chart: str) -> dict[str, list[float]]:
    return {part: page.evaluate(FONT, f"#{chart} {sel}") for part, sel in
            (("xtick", ".xtick text"), ("ytick", ".ytick text"), ("legend", ".legend .legendtext"),
             ("title", ".gtitle"), ("axis_title", ".g-ytitle text, .g-xtitle text"))}


def test_teacher_mode_projects_the_explorer_s_charts_and_text(browser, app_url):
    """Opened from a teacher's link (teacher=1) at 1920 x 1080: the Explorer's charts draw every
    label, title, legend entry and the hover box at projection size (>= 24 px), the status line
    and the text too; unticking teacher mode gives the 12 px of reading mode back."""
    ctx = new_context(browser, viewport={"width": 1920, "height": 1080})
    page = open_page(ctx.new_page(), app_url + CUT_QUERY + "&teacher=1")
    # the Lessons tab (and its box) is drawn only once opened: the Explorer follows the link's teacher=1
    page.wait_for_function("document.body.classList.contains('dl-teacher')")
    page.click("#onboard-hide")
    step(page)
    page.wait_for_function("(() => { const e = document.querySelector('#dist-chart .xtick text'); "
                           "return e && parseFloat(getComputedStyle(e).fontSize) >= 24; })()", timeout=10_000)
    big = font_sizes(page, "dist-chart")
    for part, sizes in big.items():
        assert sizes and min(sizes) >= 24, (part, sizes)
    for chart in ("funnel-chart", "entropy-chart"):
        ticks = page.evaluate(FONT, f"#{chart} .xtick text, #{chart} .ytick text")
        assert ticks and min(ticks) >= 24, (chart, ticks)
    assert float(page.evaluate("parseFloat(getComputedStyle(document.querySelector('#status p')).fontSize)")) >= 24
    assert float(page.evaluate("parseFloat(getComputedStyle(document.querySelector('#gen-box')).fontSize)")) >= 24
    # no label runs into another: the title stays clear of the legend
    title, leg = box(page, "#dist-chart .gtitle"), box(page, "#dist-chart .legend")
    assert not overlap(title, leg)
    drawn = [b for b in bars(page) if b["h"] > 20]
    page.mouse.move(drawn[0]["x"], drawn[0]["y"])
    page.wait_for_function("document.querySelector('#dist-chart .hoverlayer .hovertext') !== null")
    hover = page.evaluate(FONT, "#dist-chart .hoverlayer .hovertext text")
    assert hover and min(hover) >= 24, hover
    page.screenshot(path=str(SHOTS / "teach_teacher_explorer_1080.png"))
    page.locator("#dist-chart").screenshot(path=str(SHOTS / "teach_teacher_dist_chart.png"))

    page.click("#tab-lessons-button")              # teacher mode off, where a teacher turns it off
    page.wait_for_function("document.querySelector('#teacher-mode input') && "
                           "document.querySelector('#teacher-mode input').checked")
    page.click("#teacher-mode input")
    page.click("#tab-explorer-button")
    page.wait_for_function("(() => { const e = document.querySelector('#dist-chart .xtick text'); "
                           "return e && parseFloat(getComputedStyle(e).fontSize) === 12; })()", timeout=10_000)
    assert max(font_sizes(page, "dist-chart")["legend"]) == 12
    step(page)   # a new figure in reading mode stays as the server drew it
    page.wait_for_timeout(500)
    assert max(font_sizes(page, "dist-chart")["xtick"]) == 12
    ctx.close()


def test_a_refusal_far_from_the_step_button_is_opened_and_brought_into_view(browser, app_url):
    """On a phone the settings come after the Step button. A link that turns DRY on under transformers'
    order opens DRY's folded box (gradio draws a closed box's controls only when it opens), and the
    Step's refusal beside DRY is scrolled into the window instead of leaving the visitor at a Step
    that seems to do nothing."""
    ctx = new_context(browser, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = open_page(ctx.new_page(), app_url + "?dry=0.8")
    page.wait_for_function("parseFloat((document.querySelector('#dry input[type=number]') || {}).value) === 0.8",
                           timeout=60_000)      # the box was opened by the link
    page.click("#onboard-hide")
    page.evaluate("window.scrollTo(0, 0)")
    page.click("#step-btn")
    page.wait_for_function("(() => { const e = document.querySelector('#dry .validation-error'); if (!e) return false; "
                           "const b = e.getBoundingClientRect(); return b.top >= 0 && b.bottom <= window.innerHeight; })()",
                           timeout=60_000)
    assert "dry is not in transformers generate()'s sampler" in page.inner_text("#dry .validation-error")
    assert page.evaluate(N_TOKENS) == 0
    page.screenshot(path=str(SHOTS / "teach_phone_refusal_in_view.png"))
    ctx.close()


def test_the_step_under_each_engine_order(browser, app_url, smollm):
    """One click redoes the step on screen under transformers', vLLM's and llama.cpp's orders: a row
    each, the order it ran with marked, the run itself unchanged; the next Step clears the table."""
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    page = open_page(ctx.new_page(), app_url + "?prompt=Tell+me+a+story.&T=1.5&top_k=40&top_p=0.9&min_p=0.05&seed=0")
    page.wait_for_function("document.querySelector('#top-p input[type=number]').value === '0.9'")
    page.click("#onboard-hide")
    step(page)
    page.click("#orders-btn")
    page.wait_for_function("document.querySelectorAll('#orders-table tbody tr').length === 4", timeout=60_000)
    rows = page.evaluate("Array.from(document.querySelectorAll('#orders-table tbody tr')).map(r => "
                         "Array.from(r.cells).map(c => c.innerText))")
    assert [r[0] for r in rows] == ["transformers ◀", "vllm", "llama.cpp", "llama-cpp-python"]
    core = Stepper.from_prompt(smollm, "Tell me a story.", True, SamplingSettings(
        temperature=1.5, top_k=40, top_p=0.9, min_p=0.05, seed=0, order="vllm"), top_n=20).step()
    assert rows[1][2] == f"{core.kept_final:,}"          # vLLM's row is the core's step under vLLM's order
    assert rows[1][1].startswith(" → ".join(f"{s.name} {s.kept:,}" for s in core.stages)[:20])
    assert page.evaluate(N_TOKENS) == 1
    page.locator("#orders-table").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "teach_orders.png"))
    step(page)
    page.wait_for_function("document.querySelectorAll('#orders-table tbody tr').length === 0")
    ctx.close()
