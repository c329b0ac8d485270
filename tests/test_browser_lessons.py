"""In a real browser: every lesson's preset loads and switches to its tab, in English and in Chinese."""

from __future__ import annotations


import pytest

from conftest_app import new_context, open_page
from decoding_lab.lessons import load_lessons

pytestmark = pytest.mark.browser

LESSONS = load_lessons()
#: how long a paging or a reveal may take: a round trip to the app, which shares two cores with the
#: other test process under `make test` (20 s was not always enough there)
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def page(browser, app_url):
    """One tab for the whole module: the lessons are loaded one after another in it."""
    pg = open_page(browser.new_page(viewport={"width": 1440, "height": 1000}), app_url, timeout_ms=180_000)
    yield pg
    pg.close()


def selected_tab(page) -> str:
    return page.evaluate("document.querySelector('button[role=tab][aria-selected=true]').id")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lesson_preset_loads(page, lang):
    page.click(f"#lang-radio input[value='{lang}']")
    page.click("#tab-lessons-button")
    page.wait_for_function("document.querySelector('#lesson-picker') !== null")
    for lesson in LESSONS:
        page.click("#tab-lessons-button")
        title = lesson.title[lang]
        page.get_by_text(f"{lesson.number}. {title}", exact=False).first.click()
        page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({title!r})")
        tilt = lesson.preset.get("tilt")
        if tilt:  # change η on the Many-samples tab first, so that loading the lesson must set it back
            page.click("#tab-multisample-button")
            page.fill("#ms-tilt-eta input", "3")
            page.press("#ms-tilt-eta input", "Tab")
            page.click("#tab-lessons-button")
        page.click("#lesson-load")
        want = f"tab-{lesson.preset.get('tab', 'explorer')}-button"
        page.wait_for_function(f"document.querySelector('button[role=tab][aria-selected=true]').id === {want!r}")
        if lesson.preset.get("tab", "explorer") == "explorer" and lesson.preset.get("steps"):
            page.wait_for_function("document.querySelectorAll('#generated-text .gen-tok').length >= 1")
        if tilt:
            for elem_id, key in (("ms-tilt-eta input", "eta"), ("ms-tilt-T input[type=number]", "temperature"),
                                 ("ms-tilt-rollout input[type=number]", "rollout_tokens")):
                page.wait_for_function(f"parseFloat(document.querySelector('#{elem_id}').value) === {float(tilt[key])}")
        assert selected_tab(page) == want
        assert not page.query_selector(".toast-body.error"), f"lesson {lesson.number} showed an error"


def test_a_check_explains_the_choice_picked_and_counts_when_right(page):
    """Feedback is written for the choice picked; progress counts checks passed (a fresh tab has none)."""
    page.click("#lang-radio input[value='en']")
    page.click("#tab-lessons-button")
    les = LESSONS[0]
    page.get_by_text(f"{les.number}. {les.title['en']}", exact=False).first.click()
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
    assert not page.is_visible("#lesson-question-0")          # the checks wait for the last screen
    n = len(les.screens("en"))
    for i in range(n - 1):
        page.click("#teacher-next")
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes(' {i + 2} ')",
                               timeout=WAIT_MS)
    check = les.checks[0]
    # the slots still hold the lesson loaded before until this one's views arrive: a click before
    # then picks a choice of the other lesson's question
    page.wait_for_function("document.querySelector('#lesson-question-0').innerText.includes("
                           f"{check.question['en'][:40]!r})")
    total = sum(len(x.checks) for x in LESSONS)
    wrong = next(i for i in range(len(check.choices)) if i != check.answer)
    before = page.evaluate("document.querySelector('#lesson-progress').innerText")
    done = int(before.split(":")[1].split("of")[0])
    for choice, sign in ((wrong, "✘"), (check.answer, "✔")):
        page.click(f"#lesson-quiz-0 input[value='{choice}']")
        page.click("#lesson-check-btn-0")
        why = check.choices[choice].why["en"]
        page.wait_for_function(f"document.querySelector('#lesson-feedback-0').innerText.includes({why[:40]!r})")
        assert sign in page.evaluate("document.querySelector('#lesson-feedback-0').innerText")
    page.wait_for_function(f"document.querySelector('#lesson-progress').innerText.includes('{done + 1} of {total}')")
    for i in range(n - 1, 0, -1):                      # back to the first screen for the next test
        page.click("#teacher-prev")
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes(' {i} ')",
                               timeout=WAIT_MS)


def test_lesson_1_three_scores_from_the_shipped_sweep(page):
    """Lesson 1's predict-then-read screen: the guess is marked and the shipped file's three scores
    appear (no model run: it reads the sweep)."""
    from conftest_app import SHOTS
    page.click("#lang-radio input[value='en']")
    page.click("#tab-lessons-button")
    les = LESSONS[0]
    page.get_by_text(f"{les.number}. {les.title['en']}", exact=False).first.click()
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
    exp = les.experiments[0]
    for i in range(exp.screen - 1):
        page.click("#teacher-next")
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes(' {i + 2} ')",
                               timeout=WAIT_MS)
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)
    assert page.inner_text("#lesson-run").strip() == "Read the shipped results"   # no live model here
    page.click("#lesson-guess input[value='vote']")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-plot .js-plotly-plot') !== null", timeout=30_000)
    result = page.evaluate("document.querySelector('#lesson-result').innerText")
    assert "0.56" in result and "0.53" in result and "0.80" in result and "0.32" in result and "✔" in result
    assert "shipped result" in result and "live" not in result
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson1_three_scores.png"))


def test_lesson_10_loads_the_two_engine_case_into_temperature_0(page):
    les = next(x for x in LESSONS if x.number == 10)
    page.click("#lang-radio input[value='en']")
    page.click("#tab-lessons-button")
    page.get_by_text(f"{les.number}. {les.title['en']}", exact=False).first.click()
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title['en']!r})")
    page.click("#lesson-load")
    page.wait_for_function("document.querySelector('button[role=tab][aria-selected=true]').id"
                           " === 'tab-determinism-button'")
    page.wait_for_function("document.querySelector('#det-prompt textarea').value"
                           " === 'What is the capital of France?'", timeout=WAIT_MS)
    labels = page.evaluate("[...document.querySelectorAll('#det-variants label')].map(l => l.innerText)")
    assert any("llama.cpp" in x for x in labels)


def open_experiment_screen(page, les, lang: str = "en") -> None:
    page.click(f"#lang-radio input[value='{lang}']")
    page.click("#tab-lessons-button")
    page.get_by_text(f"{les.number}. {les.title[lang]}", exact=False).first.click()
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title[lang]!r})")
    for i in range(les.experiments[0].screen - 1):
        page.click("#teacher-next")
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes(' {i + 2} ')",
                               timeout=WAIT_MS)
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)


def test_lesson_4_asks_for_the_tails_mass_before_it_shows_it(page):
    """The screen states no result; the learner's number goes in first, then the live step's
    value sits beside it (text and chart)."""
    from conftest_app import SHOTS
    les = next(x for x in LESSONS if x.number == 4)
    open_experiment_screen(page, les)
    text = page.inner_text("#lesson-text")
    assert "48,000" in text and "0.09" not in text and "9%" not in text      # the answer is not given away
    page.fill("#lesson-guess-number input", "0.3")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-result').innerText.includes('0.09')", timeout=60_000)
    result = page.inner_text("#lesson-result")
    assert "0.3" in result and "one draw in eleven" in result
    page.wait_for_function("document.querySelector('#lesson-plot .js-plotly-plot') !== null", timeout=30_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson4_tail_guess.png"))


def test_lesson_7_in_chinese_marks_a_wrong_prediction_and_explains(page):
    les = next(x for x in LESSONS if x.number == 7)
    open_experiment_screen(page, les, "zh")
    page.click("#lesson-guess input[value='presence']")      # the penalty that leaves this step alone
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-result').innerText.includes('0.21')", timeout=60_000)
    result = page.inner_text("#lesson-result")
    assert "✘" in result and "0.97" in result and "重复惩罚统计提示词" in result
    page.click("#lang-radio input[value='en']")


def test_lesson_8_a_letter_prediction_is_marked_against_the_masked_run(page):
    """A "value" prediction: the learner picks a letter; the masked and free runs come back."""
    from conftest_app import SHOTS
    les = next(x for x in LESSONS if x.number == 8)
    open_experiment_screen(page, les)
    assert "Greedy\nwrites" not in page.inner_text("#lesson-text")
    page.click("#lesson-guess input[value='B']")     # the right city, the wrong guess
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-result').innerText.includes('London')", timeout=60_000)
    result = page.inner_text("#lesson-result")
    assert "✘" in result and "A) Paris" in result and "B (Paris)" in result
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson8_letter.png"))


def test_lesson_12_reads_the_shipped_bench_run_as_ratios(page):
    from conftest_app import SHOTS
    les = next(x for x in LESSONS if x.number == 12)
    open_experiment_screen(page, les, "zh")
    assert page.inner_text("#lesson-run").strip() == "读取随附的结果"      # a file, not the live model
    assert "132" not in page.inner_text("#lesson-text")                  # top-p's multiple is asked, not told
    page.fill("#lesson-guess-number input", "30")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-result').innerText.includes('132')", timeout=60_000)
    result = page.inner_text("#lesson-result")
    assert "30" in result and "ops_grammar.json" in result and "ms" not in result
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson12_ratios_zh.png"))
    page.click("#lang-radio input[value='en']")


def open_screen(page, les, screen: int, lang: str = "en") -> None:
    """Pick ``les`` and page forward to its (1-based) ``screen``."""
    page.click(f"#lang-radio input[value='{lang}']")
    page.click("#tab-lessons-button")
    page.get_by_text(f"{les.number}. {les.title[lang]}", exact=False).first.click()
    page.wait_for_function(f"document.querySelector('#lesson-text').innerText.includes({les.title[lang]!r})")
    for i in range(screen - 1):
        page.click("#teacher-next")
        page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes(' {i + 2} ')",
                               timeout=WAIT_MS)


def run_with_a_number(page, number: int, exp_id: str, guess: str, hidden: str, shows: str) -> str:
    """Open lesson ``number`` at experiment ``exp_id``'s screen, check the text keeps ``hidden`` back,
    type ``guess``, run, and wait until the result shows ``shows``; returns the result's text."""
    les = next(x for x in LESSONS if x.number == number)
    exp = next(e for e in les.experiments if e.id == exp_id)
    open_screen(page, les, exp.screen)
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)
    assert hidden not in page.inner_text("#lesson-text")
    page.fill("#lesson-guess-number input", guess)
    page.click("#lesson-run")
    page.wait_for_function(f"document.querySelector('#lesson-result').innerText.includes({shows!r})", timeout=90_000)
    return page.inner_text("#lesson-result")


def test_lesson_10_the_near_tie_is_guessed_before_it_is_measured(page):
    """The dog story's step-20 margin: the text gives the logits' range, not the gap; the learner's
    number sits beside the live one."""
    from conftest_app import SHOTS
    assert "near-tie" in run_with_a_number(page, 10, "dog-near-tie", "1", hidden="0.0075", shows="0.0075")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson10_dog_margin.png"))


def test_lesson_13_in_chinese_which_temperature_leaves_problems_without_a_signal(page):
    """A "min" prediction on the shipped sweep: the hottest temperature, not the coolest, leaves the
    most problems whose samples all agree."""
    from conftest_app import SHOTS
    les = next(x for x in LESSONS if x.number == 13)
    open_screen(page, les, 1, "zh")
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)
    page.click("#lesson-guess input[value='t03']")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-result').innerText.includes('0.64')", timeout=60_000)
    result = page.inner_text("#lesson-result")
    assert "✘" in result and "0.94" in result and "信号" in result
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson13_mixed_zh.png"))
    page.click("#lang-radio input[value='en']")


def test_lesson_10_a_pointer_that_names_the_result_waits_for_the_run(browser, app_url):
    """The two-engine screen asks which first token llama.cpp writes: "What to look at" names the
    answer, so it says nothing of it until the prediction has been made and run. The screen is
    opened by its link (``screen`` counts from 0), the way a teacher hands it out."""
    les = next(x for x in LESSONS if x.number == 10)
    exp = next(e for e in les.experiments if e.id == "same-gguf-first-token")
    ctx = new_context(browser, viewport={"width": 1440, "height": 1000})
    page = open_page(ctx.new_page(), f"{app_url}?tab=lessons&lesson={les.number}&screen={exp.screen - 1}")
    try:
        _pointer_waits_for_the_run(page, exp)
        _the_pointers_follow_into_the_setup(page, les)
    finally:
        ctx.close()


def _the_pointers_follow_into_the_setup(page, les) -> None:
    """"Open this lesson's setup" switches to the Temperature-0 tab: the strip above it names the
    lesson and screen and carries the pointers just revealed; "Back to the lesson" returns."""
    from conftest_app import SHOTS
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")    # the student is far down the page
    page.click("#lesson-load")
    page.wait_for_function("document.querySelector('button[role=tab][aria-selected=true]').id"
                           " === 'tab-determinism-button'", timeout=WAIT_MS)
    page.wait_for_selector("#lesson-follow", state="visible", timeout=WAIT_MS)
    text = page.inner_text("#lesson-follow")
    assert f"Lesson {les.number}" in text and "parts from float32 at step 0" in text
    page.wait_for_function("document.getElementById('lesson-follow').getBoundingClientRect().top >= -1 && "
                           "document.getElementById('lesson-follow').getBoundingClientRect().top < 200",
                           timeout=WAIT_MS)                           # scrolled to the strip, not left below
    page.screenshot(path=str(SHOTS / "lesson10_follows_into_its_tab.png"))
    page.click("#lesson-back")
    page.wait_for_function("document.querySelector('button[role=tab][aria-selected=true]').id"
                           " === 'tab-lessons-button'", timeout=WAIT_MS)
    page.wait_for_selector("#lesson-follow", state="hidden", timeout=WAIT_MS)


def _pointer_waits_for_the_run(page, exp) -> None:
    from conftest_app import SHOTS
    page.wait_for_function(f"document.querySelector('#teacher-counter').innerText.includes(' {exp.screen} ')",
                           timeout=WAIT_MS)
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)
    page.wait_for_function("document.querySelector('#lesson-look').innerText.includes('once you have made')",
                           timeout=WAIT_MS)
    assert "parts from float32 at step 0" not in page.inner_text("#lesson-look")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson10_pointer_before_run.png"), full_page=True)
    page.click("#lesson-guess input[value='The']")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-look').innerText"
                           ".includes('parts from float32 at step 0')", timeout=120_000)
    assert "once you have made" not in page.inner_text("#lesson-look")
    page.screenshot(path=str(SHOTS / "lesson10_pointer_after_run.png"), full_page=True)


def test_lesson_5_one_rule_on_four_shapes(page):
    """top-p 0.9 on a sharp, a medium, a flat and a heated flat step: the counts come from the live
    steps, on a log axis, beside the learner's guess."""
    from conftest_app import SHOTS
    result = run_with_a_number(page, 5, "four-shapes", "500", hidden="11740", shows="698")
    assert "500" in result and "min-p 0.1 keeps 1, 5, 24 and 185" in result
    page.wait_for_function("document.querySelector('#lesson-plot .js-plotly-plot') !== null", timeout=30_000)
    plot = "document.querySelector('#lesson-plot .js-plotly-plot')"
    assert page.evaluate(f"{plot}.layout.yaxis.type") == "log" and page.evaluate(f"{plot}.layout.xaxis.type") == "log"
    # four sorted curves, each with its top-p and min-p marks, the guess on the heated one
    assert page.evaluate(f"{plot}.data.filter(t => t.mode === 'lines').length") == 4
    assert page.evaluate(f"{plot}.data.some(t => t.marker && t.marker.symbol === 'x' && t.x[0] === 500)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson5_four_shapes.png"))


@pytest.mark.parametrize("number,lang", [(3, "en"), (9, "zh")])
def test_a_lesson_picture_is_drawn_from_the_run(page, number, lang):
    """Lesson 3 draws the ratio law as straight lines with the measured dots on them; lesson 9 the
    shipped sweep's pass@k against T with error bars (a picked temperature ringed)."""
    from conftest_app import SHOTS
    les = next(x for x in LESSONS if x.number == number)
    exp = les.experiments[0]
    open_screen(page, les, exp.screen, lang)
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)
    if exp.predict.kind == "number":      # lesson 9 asks for pass@16 at T = 1.3
        page.fill("#lesson-guess-number input", "0.5")
        page.press("#lesson-guess-number input", "Tab")
    else:
        page.click(f"#lesson-guess input[value='{exp.variants[0].key}']")
    page.click("#lesson-run")
    page.wait_for_function("document.querySelector('#lesson-plot .js-plotly-plot') !== null", timeout=90_000)
    data = page.evaluate("document.querySelector('#lesson-plot .js-plotly-plot').data"
                         ".map(t => [t.mode, (t.x || []).length, !!(t.error_y && t.error_y.visible)])")
    if number == 3:
        assert sum(m == "lines" for m, _, _ in data) == 3 and all(n == 3 for m, n, _ in data if m == "markers")
    else:
        assert sum(e for _, _, e in data) == 3            # pass@1, @4, @16 with their standard errors
        assert exp.predict.kind == "number" or data[-1][0] == "markers"   # a picked temperature is ringed
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"lesson{number}_picture_{lang}.png"))
    page.click("#lang-radio input[value='en']")


def test_a_derivation_waits_in_a_closed_why_box(page):
    """Lesson 3's dH/dT derivation is folded under "Why?" and opens on a click, in the lesson text."""
    les = next(x for x in LESSONS if x.number == 3)
    open_screen(page, les, 2)
    page.wait_for_selector("#lesson-text details", state="attached", timeout=WAIT_MS)
    assert not page.is_visible("#lesson-text details p")
    page.click("#lesson-text details summary")
    page.wait_for_selector("#lesson-text details p", state="visible", timeout=5_000)
    assert "Var(z)/T³" in page.inner_text("#lesson-text details")


def test_lesson_2_folds_the_two_texts_under_the_result(page):
    """A decode experiment shows what greedy and beam search wrote, folded under the result."""
    from conftest_app import SHOTS
    les = next(x for x in LESSONS if x.number == 2)
    exp = les.experiments[0]
    open_screen(page, les, exp.screen)
    page.wait_for_selector("#lesson-run", state="visible", timeout=WAIT_MS)
    page.fill("#lesson-guess-number input", "100")        # how many times as probable
    page.press("#lesson-guess-number input", "Tab")
    page.click("#lesson-run")
    page.wait_for_selector("#lesson-result details", state="attached", timeout=120_000)
    assert not page.is_visible("#lesson-result details blockquote")
    page.click("#lesson-result details summary")
    page.wait_for_selector("#lesson-result details blockquote", state="visible", timeout=5_000)
    quotes = page.evaluate("[...document.querySelectorAll('#lesson-result details blockquote')].map(b => b.innerText)")
    assert len(quotes) == 2 and all(len(q) > 20 for q in quotes)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson2_texts.png"))
