"""A class in real browsers: one teacher (a laptop, teacher mode) and three students (two laptops
and a phone) walk one whole question: open, join by the link's code, the pushed screen, answers,
the live chart on the projector, a second round after discussion, the reveal beside each
student's own answer, and the CSV, in English and in Chinese. Also: a wrong code gets one line.
Screenshots go to /tmp/shots."""

from __future__ import annotations

import csv
import io
import re

import pytest

from conftest_app import _APPS, SHOTS, new_context, open_page, queue_report
from decoding_lab.lessons import load_lessons

pytestmark = pytest.mark.browser

LESSONS = {les.number: les for les in load_lessons()}
#: Lesson 3's third screen asks which temperature keeps the smallest ratio (a choice, a step on the model).
LESSON, SCREEN = 3, 2
WORDS = {"en": {"students": "students in the class", "round": "Round 2", "sent": "Sent", "right": "Right:",
                "model": "live result", "no_room": "no open class has the code", "last": "Screen 4 of 4"},
         "zh": {"students": "名学生", "round": "第 2 轮", "sent": "已提交", "right": "正确答案",
                "model": "实际结果", "no_room": "没有课堂码为", "last": "第 4 / 4 屏"}}


def plot_data(page, sel: str) -> list[dict]:
    return page.evaluate(f"(() => {{ const p = document.querySelector('{sel} .js-plotly-plot');"
                         " return p && p.data ? p.data.map(t => ({y: t.y ? Array.from(t.y) : [], x: t.x ? "
                         "Array.from(t.x) : [], name: t.name})) : []; })()")


def text(page, sel: str) -> str:
    return page.evaluate(f"(() => {{ const e = document.querySelector('{sel}'); return e ? e.innerText : ''; }})()")


def wait_text(page, sel: str, needle: str, timeout_ms: int = 60_000) -> None:
    try:
        page.wait_for_function("([s, n]) => { const e = document.querySelector(s); return !!e && e.innerText.includes(n); }",
                               arg=[sel, needle], timeout=timeout_ms)
    except Exception as exc:   # what the page shows instead, and what the app's queue holds
        if type(exc).__name__ != "TimeoutError":
            raise
        shown = {s: text(page, s)[:160] for s in (sel, "#class-status", "#class-student-head", "#teacher-counter")}
        demo = next((d for u, d in _APPS.items() if page.url.startswith(u)), None)
        raise AssertionError(f"{needle!r} never showed in {sel}; the page shows {shown}; rooms {_rooms()}; "
                             f"{queue_report(demo) if demo is not None else ''}") from exc


def _rooms() -> dict:
    """Every open room of this process's apps: its lesson, screen (from 0), asked question and version."""
    import gc
    from decoding_lab.classroom import RoomHall
    return {code: (r.lesson, r.screen, r.asked, r.version) for hall in gc.get_objects()
            if isinstance(hall, RoomHall) for code, r in list(hall._rooms.items())}


def answer(page, label: str, confidence: int | None = None) -> None:
    page.locator("#class-choice label").filter(has_text=label).first.click()
    if confidence:
        page.locator("#class-confidence label").nth(confidence - 1).click()
    page.click("#class-send")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_teacher_and_three_students_walk_one_question(browser, app_url, lang):
    w = WORDS[lang]
    les = LESSONS[LESSON]
    exp = les.experiment_on(SCREEN)
    labels = [v.label[lang] for v in exp.variants]
    teacher_ctx = new_context(browser, viewport={"width": 1366, "height": 900}, accept_downloads=True)
    contexts = [teacher_ctx]
    try:
        teacher = open_page(teacher_ctx.new_page(), f"{app_url}?tab=lessons&lesson={LESSON}&screen={SCREEN}"
                                                    f"&teacher=1&lang={lang}")
        teacher.wait_for_selector("#class-open", state="visible")
        teacher.click("#class-open")
        teacher.wait_for_selector("#class-code-shown")
        code = text(teacher, "#class-code-shown").strip()
        assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}", code), code
        assert f"?room={code}" in text(teacher, "#class-info")
        assert teacher.locator("#class-info img.class-qr").count() == 1
        # the question asked is the screen's prediction, in the page's language
        assert exp.predict.question[lang][:12] in text(teacher, "#class-asked")

        students = []
        for i, size in enumerate(((1280, 800), (1280, 800), (390, 844))):
            ctx = new_context(browser, viewport={"width": size[0], "height": size[1]})
            contexts.append(ctx)
            page = open_page(ctx.new_page(), f"{app_url}?room={code.lower()}&lang={lang}")
            page.wait_for_selector("#class-student", state="visible")
            wait_text(page, "#class-question", exp.predict.question[lang][:12])
            # the pushed screen is the teacher's: lesson 3, screen 3
            wait_text(page, "#lesson-text", les.title[lang])
            students.append(page)
        wait_text(teacher, "#class-count", f"3 {w['students']}" if lang == "en" else "3")

        for page, pick in zip(students, (labels[0], labels[0], labels[1])):
            answer(page, pick, confidence=2)
            wait_text(page, "#class-status", w["sent"])
        teacher.wait_for_function("() => { const p = document.querySelector('#class-plot .js-plotly-plot');"
                                  " return p && p.data && p.data.length === 1 &&"
                                  " p.data[0].y.reduce((a, b) => a + b, 0) === 3; }")
        first = plot_data(teacher, "#class-plot")
        assert sorted(first[0]["y"], reverse=True)[:2] == [2, 1]
        # a student's page reloaded comes back in the class, in the same place (still 3 students)
        students[2].reload()
        students[2].wait_for_selector("#class-student", state="visible")
        wait_text(students[2], "#class-status", w["sent"])
        wait_text(teacher, "#class-count", "3")
        assert sum(plot_data(teacher, "#class-plot")[0]["y"]) == 3
        teacher.screenshot(path=str(SHOTS / f"class-teacher-round1-{lang}.png"))

        # a second round after discussion: every student is asked again, both rounds side by side
        teacher.click("#class-round")
        for page in students:
            wait_text(page, "#class-question", w["round"])
        for page in students[:2]:
            answer(page, labels[1], confidence=3)
            wait_text(page, "#class-status", w["sent"])
        teacher.wait_for_function("() => { const p = document.querySelector('#class-plot .js-plotly-plot');"
                                  " return p && p.data && p.data.length === 2 &&"
                                  " p.data[1].y.reduce((a, b) => a + b, 0) === 2; }")
        both = plot_data(teacher, "#class-plot")
        assert [sum(t["y"]) for t in both] == [3, 2]
        # the projector reloaded gets its class back: code, count and both rounds
        teacher.reload()
        wait_text(teacher, "#class-count", code)          # the code stays in the count line for latecomers
        teacher.wait_for_function("() => { const p = document.querySelector('#class-plot .js-plotly-plot');"
                                  " return p && p.data && p.data.length === 2; }")

        # the reveal runs the experiment once; each student sees it beside their own answer
        teacher.click("#class-reveal")
        wait_text(teacher, "#class-result", w["right"], timeout_ms=120_000)
        teacher.wait_for_selector("#class-figure .js-plotly-plot")
        marked = [x for x in plot_data(teacher, "#class-plot")[0]["x"] if x.startswith("✔")]
        assert len(marked) == 1
        for page in students:
            wait_text(page, "#class-status", w["model"])
            # in class the room asks the question: the lesson's own Run waits (in Chinese too, after the relabel)
            assert not page.is_visible("#lesson-run")
        verdicts = [text(p, "#class-status") for p in students]
        right_label = marked[0][2:].rstrip("…")
        for v, last in zip(verdicts, (labels[1], labels[1], labels[1])):
            assert ("✔" in v) == last.startswith(right_label), v
        teacher.screenshot(path=str(SHOTS / f"class-teacher-reveal-{lang}.png"), full_page=True)
        students[2].screenshot(path=str(SHOTS / f"class-phone-reveal-{lang}.png"), full_page=True)

        # the teacher pages on: the lesson's last screen reaches every student, with its first check asked
        teacher.click("#teacher-next")
        check = les.checks[0]
        for page in students:
            wait_text(page, "#class-question", check.question[lang][:12])
            wait_text(page, "#teacher-counter", w["last"])
        answer(students[0], check.choices[check.answer].text[lang][:20])
        wait_text(students[0], "#class-status", w["sent"])
        teacher.wait_for_function("() => { const p = document.querySelector('#class-plot .js-plotly-plot');"
                                  " return p && p.data && p.data.length === 1 &&"
                                  " p.data[0].y.reduce((a, b) => a + b, 0) === 1; }")

        # the counts as CSV: both rounds, no student in them
        teacher.click("#class-csv")
        link = teacher.wait_for_selector("#class-csv-file a")
        with teacher.expect_download() as dl:
            link.click()
        rows = list(csv.DictReader(io.StringIO(open(dl.value.path(), encoding="utf-8").read())))
        assert {(r["round"], r["answer"], r["count"]) for r in rows if r["question"] == f"predict:{exp.id}"} >= \
            {("1", labels_en(exp)[0], "2"), ("2", labels_en(exp)[1], "2")}

        teacher.click("#class-close")
        for page in students:
            wait_text(page, "#class-student-head", "ended" if lang == "en" else "已结束")
    finally:
        for ctx in contexts:
            ctx.close()


def labels_en(exp) -> list[str]:
    return [v.label["en"] for v in exp.variants]


def test_a_wrong_code_gets_one_line_and_the_page_keeps_working(page):
    page.click("#tab-lessons-button")
    page.locator("#class-join > button").first.click()       # the folded "Join a class" box
    page.locator("#class-code textarea, #class-code input").first.fill("K7M2-9QXP")
    page.click("#class-join-btn")
    wait_text(page, "#class-join-msg", WORDS["en"]["no_room"])
    assert not page.is_visible("#class-student")
    page.locator("#class-code textarea, #class-code input").first.fill("hello")
    page.click("#class-join-btn")
    wait_text(page, "#class-join-msg", "not a class code")
    page.click("#lesson-picker label:has-text('2.')")    # the lesson goes on working
    wait_text(page, "#lesson-text", LESSONS[2].title["en"])


def test_a_student_who_switches_language_in_class_follows_in_it(browser, app_url):
    """The follower is one long event that read the page's language when it started: a switch
    afterwards redraws the room's question and the teacher's screen in the new language, and so
    does the teacher's next push."""
    les = LESSONS[LESSON]
    exp = les.experiment_on(SCREEN)
    contexts = [new_context(browser, viewport={"width": 1366, "height": 900}) for _ in range(2)]
    try:
        teacher = open_page(contexts[0].new_page(), f"{app_url}?tab=lessons&lesson={LESSON}&screen={SCREEN}&teacher=1")
        teacher.click("#class-open")
        teacher.wait_for_selector("#class-code-shown")
        code = text(teacher, "#class-code-shown").strip()
        student = open_page(contexts[1].new_page(), f"{app_url}?room={code.lower()}")
        wait_text(student, "#class-question", exp.predict.question["en"][:12])
        student.click("#lang-radio input[value='zh']")
        wait_text(student, "#class-question", exp.predict.question["zh"][:12])
        wait_text(student, "#lesson-text", les.title["zh"])          # the teacher's lesson, not this tab's own
        wait_text(student, "#teacher-counter", "第 3 / 4 屏")
        teacher.click("#teacher-next")
        wait_text(student, "#class-question", les.checks[0].question["zh"][:12])
        wait_text(student, "#teacher-counter", WORDS["zh"]["last"])
        teacher.click("#class-close")
    finally:
        for ctx in contexts:
            ctx.close()
