"""Teacher mode in a real browser at 1920×1080: large type (computed sizes), the list, progress
and pointers hidden, the checks on a lesson's last screen, paging into the next lesson, paging with the keyboard, and a screen's experiment run on that screen
with the chart's fonts scaled to match; in English and in Chinese. Screenshots go to /tmp/shots."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, new_context, open_page
from decoding_lab.lessons import load_lessons

pytestmark = pytest.mark.browser

LESSONS = {les.number: les for les in load_lessons()}
HIDDEN = ("#lesson-picker", "#lesson-progress", "#lesson-look", "#lesson-checks", "#lesson-load")


def visible(page, selector: str) -> bool:
    return page.evaluate("(s) => { const e = document.querySelector(s);"
                         " return !!e && e.offsetParent !== null && e.getBoundingClientRect().height > 0; }", selector)


def px(page, selector: str) -> float:
    return page.evaluate("(s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize)", selector)


def counter(page) -> str:
    return page.evaluate("document.querySelector('#teacher-counter').innerText.trim()")


@pytest.fixture(scope="module")
def big(browser, app_url):
    ctx = new_context(browser, viewport={"width": 1920, "height": 1080})
    page = open_page(ctx.new_page(), app_url, timeout_ms=120_000)
    page.click("#tab-lessons-button")
    page.wait_for_selector("#lesson-picker")
    yield page
    ctx.close()


def set_teacher(page, on: bool) -> None:
    box = "#teacher-mode input[type=checkbox]"
    if page.is_checked(box) != on:
        page.click(box)
    want = "false" if on else "true"
    page.wait_for_function(f"(() => {{ const e = document.querySelector('#lesson-picker');"
                           f" return (!!e && e.offsetParent !== null) === {want}; }})()")


def test_teacher_mode_is_large_and_hides_the_rest(big):
    page = big
    assert visible(page, "#lesson-picker") and px(page, "#lesson-text p") < 20   # reading mode: ordinary type
    set_teacher(page, True)
    assert px(page, "#lesson-text p") >= 24 and px(page, "#lesson-text h2") >= 32
    for sel in HIDDEN:
        assert not visible(page, sel), f"{sel} is still on screen in teacher mode"
    assert visible(page, "#teacher-next") and visible(page, "#teacher-prev")
    # the toggle sits at the top of the tab, above the lesson text
    top = page.evaluate("document.querySelector('#teacher-mode').getBoundingClientRect().top")
    assert top < page.evaluate("document.querySelector('#lesson-text').getBoundingClientRect().top")
    set_teacher(page, False)
    assert visible(page, "#lesson-picker") and visible(page, "#lesson-load")
    assert not visible(page, "#lesson-checks")         # outside teacher mode the checks follow the last screen


def test_keyboard_pages_in_teacher_mode(big):
    page = big
    set_teacher(page, True)
    n = len(LESSONS[1].screens("en"))
    page.click("#lesson-text")              # focus on the page, not in a box
    page.wait_for_function("document.querySelector('#teacher-counter').innerText.includes('1 of')")
    for key, want in (("ArrowRight", 2), ("PageDown", 3), ("ArrowLeft", 2), ("PageUp", 1), ("PageUp", 1)):
        page.keyboard.press(key)
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes('Screen {want} of {n}')",
                               timeout=20_000)
    set_teacher(page, False)
    page.keyboard.press("ArrowRight")       # outside teacher mode the keys do not page
    page.wait_for_timeout(600)
    assert counter(page) == f"Screen 1 of {n}"


def test_teacher_mode_shows_the_checks_and_pages_on_into_the_next_lesson(big):
    """On a lesson's last screen the checks show in teacher mode too (in large type, to put a
    question to the class), and paging on goes into the next lesson and back."""
    page = big
    set_teacher(page, True)
    n = len(LESSONS[1].screens("en"))
    page.click("#lesson-text")
    page.wait_for_function("document.querySelector('#teacher-counter').innerText.includes('1 of')")
    for want in range(2, n + 1):      # one press per screen, each answered before the next
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes('Screen {want} of {n}')",
                               timeout=60_000)
    page.wait_for_function("document.querySelector('#teacher-next').innerText.includes('Next lesson')")
    assert visible(page, "#lesson-checks") and px(page, "#lesson-checks label span") >= 24
    page.screenshot(path=str(SHOTS / "teacher_checks_1920.png"))
    page.keyboard.press("ArrowRight")
    title2 = LESSONS[2].title["en"]
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({title2!r})", timeout=60_000)
    page.wait_for_function("document.querySelector('#teacher-counter').innerText.trim().startsWith('Screen 1 of')")
    assert not visible(page, "#lesson-checks")
    page.wait_for_function("document.querySelector('#teacher-prev').innerText.includes('Previous lesson')")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes('Screen {n} of {n}')",
                           timeout=60_000)
    set_teacher(page, False)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_experiment_on_its_screen_with_large_chart(browser, app_url, lang):
    ctx = new_context(browser, viewport={"width": 1920, "height": 1080})   # a fresh visitor: no run yet
    page = open_page(ctx.new_page(), app_url, timeout_ms=120_000)
    page.click("#tab-lessons-button")
    page.wait_for_selector("#lesson-picker")
    les = LESSONS[6]
    exp = les.experiments[0]
    if lang != "en":
        page.click(f"#lang-radio input[value='{lang}']")
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({LESSONS[1].title[lang]!r})")
    open_screen_in_teacher_mode(page, 6, les, exp.screen, lang)
    page.wait_for_selector("#lesson-run", state="visible")
    page.click("#lesson-run")               # no prediction yet: the run is refused, with a note
    page.wait_for_function("document.querySelector('#lesson-result').innerText.length > 5")
    assert not visible(page, "#lesson-plot .js-plotly-plot")
    page.click("#lesson-guess input[value='llama.cpp']")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-plot .js-plotly-plot') !== null", timeout=120_000)
    result = page.evaluate("document.querySelector('#lesson-result').innerText")
    assert "llama.cpp" in result and "3" in result and ("✔" in result)
    assert px(page, "#lesson-result p") >= 24
    font = page.evaluate("document.querySelector('#lesson-plot .js-plotly-plot').layout.font.size")
    tick = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#lesson-plot .xtick text')).fontSize)")
    assert font >= 24 and tick >= 24
    page.wait_for_timeout(500)
    # the run made the screen taller than the window: the pager still stands at its bottom edge
    page.evaluate("window.scrollTo(0, 0)")
    box = page.evaluate("(() => { const r = document.querySelector('#teacher-next').getBoundingClientRect();"
                        " return [r.top, r.bottom, window.innerHeight, document.body.scrollHeight]; })()")
    assert box[3] > box[2] and 0 <= box[0] and box[1] <= box[2], box
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"teacher_1920_{lang}.png"))
    set_teacher(page, False)
    small = page.evaluate("document.querySelector('#lesson-plot .js-plotly-plot').layout.font.size")
    assert small < 20            # the same run, redrawn at ordinary size
    # out of teacher mode the pointers the run released are there, and none waits any more
    assert visible(page, "#lesson-look") and les.look_at[0][lang] in page.inner_text("#lesson-look")
    ctx.close()


def open_screen_in_teacher_mode(page, number: int, les, screen: int, lang: str = "en") -> None:
    """Pick lesson ``number`` from the list, turn teacher mode on and page to ``screen`` with the keys."""
    page.get_by_text(f"{number}. {les.title[lang]}", exact=False).first.click()
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title[lang]!r})")
    set_teacher(page, True)
    page.click("#lesson-text")
    for _ in range(screen - 1):
        page.keyboard.press("ArrowRight")


def test_a_typed_prediction_is_large_in_teacher_mode(big):
    """Lesson 5's number guess: the box a teacher types into is as large as the text around it."""
    page = big
    set_teacher(page, False)
    les = LESSONS[5]
    exp = next(e for e in les.experiments if e.id == "four-shapes")
    open_screen_in_teacher_mode(page, 5, les, exp.screen)
    page.wait_for_selector("#lesson-guess-number input", state="visible")
    assert px(page, "#lesson-guess-number input") >= 24
    set_teacher(page, False)
    assert px(page, "#lesson-guess-number input") < 20
