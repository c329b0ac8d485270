"""The Lessons tab's components: the lesson picker and progress, the reading view or teacher mode
(one idea per screen, large type, for projecting in class), the pointers, "Load this experiment"
and the question. Progress lives in the visitor's browser (``gr.BrowserState``), so it survives a
reload and is never shared between visitors."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from decoding_lab.lessons import Lesson
from decoding_lab.ui.lessons import views as V
from decoding_lab.ui.lessons.strings import tr

PROGRESS_KEY = "decoding-lab-lessons-done"


def build(lang: str, lessons: list[Lesson]) -> SimpleNamespace:
    """The tab showing the first of ``lessons`` (at least one)."""
    first = lessons[0]
    ui = SimpleNamespace(lessons={les.number: les for les in lessons}, order=[les.number for les in lessons])
    ui.current = gr.State(first.number)      # the lesson on screen: what "Load this experiment" loads
    ui.screen = gr.State(0)                  # the teacher-mode screen
    ui.done = gr.BrowserState([], storage_key=PROGRESS_KEY)
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            ui.picker = gr.Radio(V.picker_choices(lessons, lang, []), value=first.number, label=tr(lang, "pick"),
                                 elem_id="lesson-picker")
            ui.progress = gr.Markdown(V.progress_markdown(lang, [], len(lessons)), elem_id="lesson-progress")
            ui.teacher = gr.Checkbox(False, label=tr(lang, "teacher"), elem_id="teacher-mode")
        with gr.Column(scale=3):
            with gr.Column(visible=True, elem_id="lesson-reading") as ui.reading:
                ui.text = gr.Markdown(V.lesson_markdown(first, lang), elem_id="lesson-text", latex_delimiters=[])
            with gr.Column(visible=False, elem_id="teacher-view") as ui.teacher_view:
                screen, counter = V.teacher_screen(first, lang, 0)
                ui.teacher_text = gr.Markdown(screen, elem_id="teacher-text", latex_delimiters=[])
                with gr.Row():
                    ui.prev = gr.Button(tr(lang, "prev"), elem_id="teacher-prev")
                    ui.counter = gr.Markdown(counter, elem_id="teacher-counter")
                    ui.next = gr.Button(tr(lang, "next"), elem_id="teacher-next")
            ui.look = gr.Markdown(V.look_markdown(first, lang), elem_id="lesson-look")
            ui.load = gr.Button(tr(lang, "load"), variant="primary", elem_id="lesson-load")
            ui.loaded = gr.Markdown("", elem_id="lesson-loaded")
            with gr.Group():
                ui.question = gr.Markdown(V.question_markdown(first, lang), elem_id="lesson-question")
                ui.answer = gr.Radio(V.quiz_choices(first, lang), value=None, show_label=False, elem_id="lesson-quiz")
                ui.check = gr.Button(tr(lang, "check"), elem_id="lesson-check")
                ui.feedback = gr.Markdown("", elem_id="lesson-feedback")
    return ui
