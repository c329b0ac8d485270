"""Links that open what they were copied from, in a real browser: the tab, a lesson's screen,
and the Explorer's run with its steps and forced tokens replayed (checked against the core),
plus the "Copy link" button. Screenshots go to /tmp/shots/."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from conftest_app import SHOTS, new_context, open_page

pytestmark = pytest.mark.browser

TOKENS = "Array.from(document.querySelectorAll('#generated-text .gen-tok')).map(e => e.textContent)"
SELECTED = "document.querySelector('button[role=tab][aria-selected=true]').id"


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def fresh(browser, url: str):
    ctx = new_context(browser, viewport={"width": 1366, "height": 768})
    return ctx, open_page(ctx.new_page(), url)


def test_a_lesson_screen_travels_in_the_link(browser, app_url):
    from decoding_lab.lessons import load_lessons
    les = load_lessons()[4]
    ctx, page = fresh(browser, app_url)
    try:
        page.click("#tab-lessons-button")
        page.get_by_text(f"{les.number}. {les.title['en']}", exact=False).first.click()
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
        page.click("#teacher-next")
        page.wait_for_function("document.querySelector('#teacher-counter').innerText.includes('Screen 2 of')")
        page.wait_for_function("location.search.includes('screen=1')")
        q = query(page)
        assert q["tab"] == "lessons" and q["lesson"] == str(les.number) and q["screen"] == "1"
        page.click("#copy-link-btn")      # the button copies the address bar and says so
        page.wait_for_function("document.querySelector('#copy-link-btn').dataset.copied === location.href")
        shown = page.evaluate("getComputedStyle(document.querySelector('#copy-link-btn'), '::after').content")
        assert "Link copied" in shown
        link = page.url
        # the button's own label still follows the language (the confirmation never replaced it)
        page.wait_for_function("!document.querySelector('#copy-link-btn').classList.contains('link-copied')",
                               timeout=10_000)
        page.click("#lang-radio input[value='zh']")
        page.wait_for_function("document.querySelector('#copy-link-btn').innerText.trim() === '复制链接'",
                               timeout=20_000)
        page.click("#lang-radio input[value='en']")
    finally:
        ctx.close()
    ctx, page = fresh(browser, link)      # someone else opens it
    try:
        page.wait_for_function(f"{SELECTED} === 'tab-lessons-button'")
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
        page.wait_for_function("document.querySelector('#teacher-counter').innerText.includes('Screen 2 of')")
        page.screenshot(path=str(SHOTS / "share_lesson_link.png"))
        assert not page.query_selector(".toast-body.error")
    finally:
        ctx.close()


def test_an_explorer_run_is_replayed_with_its_forced_token(browser, app_url, smollm):
    """Three steps at T = 1 with seed 1, the second one forced: the link names them, and opening
    it replays exactly the run the core makes with those settings."""
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    from decoding_lab.ui.common.plots import show_token

    settings = SamplingSettings(temperature=1.0, top_k=10, seed=1)
    core = Stepper.from_prompt(smollm, "Tell me a story.", True, settings)
    core.step()
    forced = core.traces[-1].top[3].token_id if core.traces[-1].top[3].token_id != core.tokens[-1] else \
        core.traces[-1].top[4].token_id
    core.rewind(0)
    core.step()
    core.step(force_token_id=forced)
    core.step()
    link = app_url + "?" + urlencode({"model": "smollm2-135m-instruct", "prompt": "Tell me a story.", "chat": "chat",
                                      "T": 1, "top_k": 10, "seed": 1, "steps": 3, "force": f"1:{forced}"})
    ctx, page = fresh(browser, link)
    try:
        page.wait_for_function(f"{TOKENS}.length === 3", timeout=120_000)
        assert page.evaluate(TOKENS) == [show_token(smollm.token_str(t)) for t in core.tokens]
        assert page.evaluate("document.querySelectorAll('#generated-text .gen-tok.forced').length") == 1
        # the address bar now names the replayed run again: steps and the forced token
        page.wait_for_function("location.search.includes('steps=3')")
        q = query(page)
        assert q["force"] == f"1:{forced}" and q["seed"] == "1"
        page.screenshot(path=str(SHOTS / "share_explorer_replay.png"))
        assert not page.query_selector(".toast-body.error")
    finally:
        ctx.close()


def test_a_bad_link_says_what_it_skipped(browser, app_url):
    ctx, page = fresh(browser, app_url + "?tab=nowhere&steps=abc&lesson=99&top_p=7")
    try:
        page.wait_for_selector(".toast-body", timeout=60_000)
        page.wait_for_function("document.body.innerText.includes('top_p=')")
        text = page.inner_text("body")
        assert "tab='nowhere'" in text or "nowhere" in text
        assert f"{SELECTED}" and page.evaluate(SELECTED) == "tab-explorer-button"
        assert float(page.input_value("#top-p input[type=number]")) == 1.0   # the default, not 7
    finally:
        ctx.close()


def test_every_tab_s_setup_travels_in_the_link(browser, app_url):
    """Compare's columns, Beam's settings, Grammar's own grammar, the Temperature-0 paths and the
    Many-samples view go into the address bar as they are changed, and a fresh tab opened on the
    copied link shows them."""
    import json
    ctx, page = fresh(browser, app_url)
    try:
        page.click("#tab-compare-button")
        page.fill("#cmp-prompt textarea", "Write a haiku about rain.")
        page.fill("#cmp2-temperature input[type=number]", "1.1")
        page.press("#cmp2-temperature input[type=number]", "Tab")
        page.click("#tab-beam-button")
        page.fill("#beam-alpha input", "2")
        page.press("#beam-alpha input", "Tab")
        page.click("#tab-grammar-button")
        page.click("#grammar-kind input[value='regex']")
        page.wait_for_function("!document.querySelector('#grammar-text textarea').disabled")
        page.fill("#grammar-text textarea", "(yes|no)")
        page.fill("#grammar-prompt textarea", "Is the sky blue? Answer yes or no.")
        page.click("#tab-determinism-button")
        page.fill("#det-prompt textarea", "Name three rivers.")
        page.click("#tab-multisample-button")
        page.wait_for_function("location.search.includes('determinism=')")
        q = query(page)
        assert json.loads(q["compare"]) == {"prompt": "Write a haiku about rain.", "c3.temperature": 1.1}
        assert json.loads(q["beam"]) == {"alpha": 2}
        assert json.loads(q["grammar"]) == {"kind": "regex", "grammar": "(yes|no)",
                                            "prompt": "Is the sky blue? Answer yes or no."}
        assert json.loads(q["determinism"]) == {"prompt": "Name three rivers."}
        assert q["tab"] == "multisample"
        link = page.url
    finally:
        ctx.close()
    ctx, page = fresh(browser, link)
    try:
        page.wait_for_function(f"{SELECTED} === 'tab-multisample-button'")
        page.click("#tab-compare-button")
        assert page.input_value("#cmp-prompt textarea") == "Write a haiku about rain."
        assert float(page.input_value("#cmp2-temperature input[type=number]")) == 1.1
        page.click("#tab-beam-button")
        assert float(page.input_value("#beam-alpha input")) == 2
        page.click("#tab-grammar-button")
        assert page.input_value("#grammar-text textarea") == "(yes|no)"
        assert not page.evaluate("document.querySelector('#grammar-text textarea').disabled")  # editable, as typed
        assert page.input_value("#grammar-prompt textarea") == "Is the sky blue? Answer yes or no."
        page.click("#tab-determinism-button")
        assert page.input_value("#det-prompt textarea") == "Name three rivers."
        assert not page.query_selector(".toast-body.error")
        page.screenshot(path=str(SHOTS / "link_tab_setups.png"))
    finally:
        ctx.close()


def test_a_bad_tab_setup_in_a_link_is_refused_by_name(browser, app_url):
    """A value no person could set at the control (a temperature of -3, a choice that does not
    exist) is skipped with a note naming it; the rest of the setup is restored."""
    import json
    bad = {"prompt": "kept", "c3.temperature": -3, "c1.strategy": "telepathy", "nonsense": 1}
    ctx, page = fresh(browser, app_url + "?" + urlencode({"tab": "compare", "compare": json.dumps(bad)}))
    try:
        page.wait_for_function(f"{SELECTED} === 'tab-compare-button'")
        page.wait_for_function("document.body.innerText.includes('c3.temperature')")
        text = page.inner_text("body")
        assert "telepathy" in text and "nonsense" in text
        assert page.input_value("#cmp-prompt textarea") == "kept"
        assert float(page.input_value("#cmp2-temperature input[type=number]")) == 0.8   # its default
    finally:
        ctx.close()


def test_settings_changed_without_a_step_are_in_the_link(browser, app_url):
    """A visitor sets T, top-k and a prompt and copies the link before stepping: the link carries
    them, and opening it sets them back."""
    ctx, page = fresh(browser, app_url)
    try:
        page.fill("#prompt textarea", "Name a fruit.")
        for elem_id, value in (("temperature", "0.55"), ("top-k", "7")):
            box = f"#{elem_id} input[type=number]"
            page.fill(box, value)
            page.press(box, "Enter")
        page.wait_for_function("location.search.includes('top_k=7') && location.search.includes('T=0.55')",
                               timeout=20_000)
        q = query(page)
        assert q["prompt"] == "Name a fruit." and "steps" not in q
        link = page.url
    finally:
        ctx.close()
    ctx, page = fresh(browser, link)
    try:
        page.wait_for_function("document.querySelector('#prompt textarea').value === 'Name a fruit.'", timeout=30_000)
        assert page.input_value("#temperature input[type=number]") == "0.55"
        assert page.input_value("#top-k input[type=number]") == "7"
    finally:
        ctx.close()


def test_a_chinese_teacher_link_opens_in_chinese_and_in_teacher_mode(browser, app_url):
    """The language picked with the radio and teacher mode travel in the link (``lang=zh``,
    ``teacher=1``) and come back when someone opens it; switching back takes them out again."""
    from decoding_lab.lessons import load_lessons
    les = load_lessons()[2]
    ctx, page = fresh(browser, app_url)
    try:
        page.click("#lang-radio input[value='zh']")
        page.wait_for_function("location.search.includes('lang=zh')")
        page.click("#tab-lessons-button")
        page.get_by_text(f"{les.number}. {les.title['zh']}", exact=False).first.click()
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['zh']!r})")
        page.check("#teacher-mode input[type=checkbox]")
        page.wait_for_function("location.search.includes('teacher=1')")
        q = query(page)
        assert q["lang"] == "zh" and q["teacher"] == "1" and q["lesson"] == str(les.number)
        link = page.url
        page.uncheck("#teacher-mode input[type=checkbox]")
        page.click("#lang-radio input[value='en']")
        page.wait_for_function("!location.search.includes('teacher=') && !location.search.includes('lang=')")
    finally:
        ctx.close()
    ctx, page = fresh(browser, link)
    try:
        page.wait_for_function("document.querySelector('#lang-radio input[value=\"zh\"]').checked")
        page.wait_for_function("document.querySelector('#teacher-mode input[type=checkbox]').checked")
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['zh']!r})")
        # teacher mode's large type is on: the lesson text is drawn far larger than the page's 16 px
        size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#lesson-main .prose p')).fontSize)")
        assert size >= 24, size
        page.screenshot(path=str(SHOTS / "share_teacher_zh_link.png"))
    finally:
        ctx.close()


def test_a_run_whose_settings_changed_is_not_replayed_by_its_link(browser, app_url):
    """Two steps, then a new temperature and one more: a replay would run all three with the new
    temperature, so the link keeps the set-up without the steps, and the status line says why."""
    ctx, page = fresh(browser, app_url)
    try:
        page.click("#step-btn")
        page.wait_for_function("location.search.includes('steps=1')", timeout=60_000)
        page.click("#step-btn")
        page.wait_for_function("location.search.includes('steps=2')", timeout=60_000)
        box = "#temperature input[type=number]"
        page.fill(box, "1.3")
        page.press(box, "Enter")
        page.click("#step-btn")
        page.wait_for_function("document.querySelector('#status').innerText.includes('settings changed during this run')",
                               timeout=60_000)
        page.wait_for_function("location.search.includes('T=1.3')", timeout=20_000)
        assert "steps" not in query(page)
        page.locator("#status").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "share_settings_changed.png"))
    finally:
        ctx.close()


def test_a_long_link_replays_its_first_steps_and_asks_before_the_rest(browser, app_url, smollm):
    """A posted link with many steps must not start that whole job for everyone who opens it: the
    page replays the first LINK_REPLAY_STEPS, says so, keeps the whole run in the address bar, and
    replays the rest only when the visitor presses the button; the text is then the core's."""
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    from decoding_lab.ui.common.urlstate import LINK_REPLAY_STEPS

    total = LINK_REPLAY_STEPS + 6
    prompt = "1, 2, 3, 4, 5,"    # greedy counting: no end-of-sequence for dozens of tokens
    core = Stepper.from_prompt(smollm, prompt, False, SamplingSettings(temperature=0.0))
    core.steps(total)
    assert not core.finished
    link = app_url + "?" + urlencode({"model": "smollm2-135m-instruct", "prompt": prompt, "chat": "raw", "T": 0,
                                      "steps": total})
    ctx, page = fresh(browser, link)
    try:
        page.wait_for_function(f"{TOKENS}.length === {LINK_REPLAY_STEPS}", timeout=240_000)
        page.wait_for_selector("#replay-rest-btn", state="visible")
        assert "Replay the other 6 steps of the link" in page.inner_text("#replay-rest-btn")
        status = page.inner_text("#status")
        assert f"This link names {total} steps; the first {LINK_REPLAY_STEPS} were replayed" in status, status
        page.wait_for_function(f"location.search.includes('steps={total}')")   # still the whole run
        page.wait_for_timeout(2000)
        assert len(page.evaluate(TOKENS)) == LINK_REPLAY_STEPS   # nothing more ran by itself
        page.screenshot(path=str(SHOTS / "share_long_link_paused.png"))
        page.click("#replay-rest-btn")
        page.wait_for_function(f"{TOKENS}.length === {total}", timeout=240_000)
        page.wait_for_selector("#replay-rest-btn", state="hidden")
        shown = page.evaluate(TOKENS)
        assert "".join(shown).replace("↵", "\n") == "".join(tr.chosen_token for tr in core.traces)
        assert "This link names" not in page.inner_text("#status")
        assert query(page)["steps"] == str(total)
        assert not page.query_selector(".toast-body.error")
    finally:
        ctx.close()
