"""A lesson's checks: up to ``MAX_CHECKS`` question slots, each a question, its choices in this
learner's shuffled order, a Check button and feedback written for the choice picked (why it is
right, or why it is wrong). Progress is the set of check ids passed, kept in the browser."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.lessons import MAX_CHECKS, Check, Lesson
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.lessons.parts import LessonSlot, LessonsParts
from decoding_lab.ui.lessons.strings import tr


def _lg(lang: str) -> str:
    return "zh" if norm_lang(lang) == "zh" else "en"


def build_slots() -> tuple[gr.Column, gr.Markdown, list[LessonSlot]]:
    """The checks' box, its heading and its question slots (called inside the tab's layout)."""
    slots: list[LessonSlot] = []
    with gr.Column(elem_id="lesson-checks") as checks_box:
        checks_head = gr.Markdown("", elem_id="lesson-checks-head")
        for i in range(MAX_CHECKS):
            with gr.Group(visible=False, elem_id=f"lesson-check-{i}") as box:
                q = gr.Markdown("", elem_id=f"lesson-question-{i}")
                radio = gr.Radio([], value=None, show_label=False, elem_id=f"lesson-quiz-{i}")
                btn = gr.Button(tr("en", "check"), elem_id=f"lesson-check-btn-{i}", size="sm")
                fb = gr.Markdown("", elem_id=f"lesson-feedback-{i}")
            slots.append(LessonSlot(box=box, question=q, answer=radio, check=btn, feedback=fb))
    return checks_box, checks_head, slots


def outputs(ui: LessonsParts) -> list[Any]:
    return [ui.checks_box, ui.checks_head, *(c for s in ui.slots for c in (s.box, s.question, s.answer, s.check,
                                                                           s.feedback))]


def question_markdown(check: Check, lang: str, i: int, n: int) -> str:
    lg = _lg(lang)
    extra = f" *{tr(lang, 'transfer')}*" if check.transfer else ""
    return f"**{tr(lang, 'check_n', i=i + 1, n=n)}** {check.question[lg]}{extra}"


def choices(check: Check, lang: str, learner: str | None) -> list[tuple[str, int]]:
    """The choices in this learner's order; each carries its index in the file."""
    lg = _lg(lang)
    return [(check.choices[j].text[lg], j) for j in check.order(learner or "")]


def check_views(ui: LessonsParts, les: Lesson, lang: str, passed: list[str] | None, learner: str | None,
                visible: bool = True) -> dict:
    ok = set(passed or [])
    out: dict[Any, Any] = {ui.checks_box: gr.update(visible=visible),
                           ui.checks_head: f"### {tr(lang, 'checks')}"}
    for i, slot in enumerate(ui.slots):
        if i >= len(les.checks):
            out.update({slot.box: gr.update(visible=False), slot.question: "", slot.answer: gr.update(choices=[],
                        value=None), slot.check: gr.update(), slot.feedback: ""})
            continue
        check = les.checks[i]
        done = check.id in ok
        out.update({slot.box: gr.update(visible=True), slot.question: question_markdown(check, lang, i, len(les.checks)),
                    slot.answer: gr.update(choices=choices(check, lang, learner), value=check.answer if done else None),
                    slot.check: gr.update(value=tr(lang, "check")),
                    slot.feedback: feedback(check, check.answer, lang) if done else ""})
    return out


def feedback(check: Check, choice: int, lang: str) -> str:
    """What the learner reads after checking ``choice``: right or not, and why for that very choice."""
    c = check.choices[int(choice)]
    return (tr(lang, "right") if c.right else tr(lang, "wrong")) + c.why[_lg(lang)]


def answer(les: Lesson, i: int, choice: Any, lang: str, passed: list[str] | None) -> tuple[str, list[str]]:
    """The feedback and the new progress after checking ``choice`` on check ``i`` of ``les``."""
    passed = list(passed or [])
    if choice is None or choice == "":
        return tr(lang, "choose"), passed
    check = les.checks[i]
    choice = int(choice)
    if not 0 <= choice < len(check.choices):
        return tr(lang, "choose"), passed
    if check.choices[choice].right and check.id not in passed:
        passed = sorted(set(passed) | {check.id})
    return feedback(check, choice, lang), passed
