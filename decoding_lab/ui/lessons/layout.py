"""The Lessons tab's components, top to bottom: the teacher-mode switch; the lesson list and progress
beside one screen of the lesson; the screen's experiment (a prediction, a Run button, the result
beside the guess, and a picture of the run; once it has run, the lab: that picture with the controls
the screen is about); the pager; the pointers, "open the set-up" and the
checks. Progress and the learner's shuffle seed live in the visitor's browser (``gr.BrowserState``),
so they survive a reload and are never shared between visitors."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.lessons import Lesson
from decoding_lab.ui.classroom import layout as room_layout
from decoding_lab.ui.classroom.parts import ClassParts
from decoding_lab.ui.lessons import checks as C
from decoding_lab.ui.lessons import lab as lab_layout
from decoding_lab.ui.lessons import views as V
from decoding_lab.ui.lessons.glossary_view import glossary_markdown
from decoding_lab.ui.lessons.parts import LessonsParts
from decoding_lab.ui.lessons.strings import tr

PROGRESS_KEY = "decoding-lab-checks-passed"
LEARNER_KEY = "decoding-lab-learner"
CALIBRATION_KEY = "decoding-lab-calibration"


def build(lang: str, lessons: list[Lesson], hall: Any = None) -> LessonsParts:
    """The tab showing the first screen of the first of ``lessons`` (at least one); ``hall``: the
    process's class rooms (``classroom.RoomHall``), shared by every visitor."""
    first = lessons[0]
    total_checks = sum(len(les.checks) for les in lessons)
    current = gr.State(first.number)      # the lesson on screen: what "Load this experiment" loads
    screen = gr.State(0)                  # its screen
    runs = gr.State({})                   # "lesson/experiment" -> the learner's run (guess and values)
    # What the browser keeps. A component inside a tab mounts when the tab is first shown, and a
    # gr.BrowserState reads its storage only once mounted, so these are built unrendered and the page
    # places them outside the tabs (``page_states``): the page's load events then see them filled.
    done = gr.BrowserState([], storage_key=PROGRESS_KEY, render=False)      # ids of the checks passed
    learner = gr.BrowserState("", storage_key=LEARNER_KEY, render=False)    # seeds the order of the choices
    calib = gr.BrowserState([], storage_key=CALIBRATION_KEY, render=False)  # confidence and outcome of each prediction
    calib_now = gr.State([])              # the same records for this session's events (read from the browser once)
    teacher = gr.Checkbox(False, label=tr(lang, "teacher"), elem_id="teacher-mode")
    link = gr.Textbox("", visible="hidden", elem_id="lesson-link")        # "lesson=3&screen=1", for the address bar
    link_in = gr.Textbox("", visible="hidden", elem_id="lesson-link-in")  # a shared link's lesson, set on page load
    with gr.Row(elem_id="lesson-row"):
        with gr.Column(scale=1, min_width=260, elem_id="lesson-side") as side:
            picker = gr.Radio(V.picker_choices(lessons, lang, []), value=first.number, label=tr(lang, "pick"),
                              elem_id="lesson-picker")
            progress = gr.Markdown(V.progress_markdown(lang, [], total_checks), elem_id="lesson-progress")
            calib_line = gr.Markdown(tr(lang, "calib_none"), elem_id="lesson-calib-line")
            join = room_layout.join_box(lang)
            with gr.Accordion(tr(lang, "glossary"), open=False, elem_id="lesson-glossary") as glossary_box:
                glossary = gr.Markdown(glossary_markdown(lang), elem_id="lesson-glossary-text")
        with gr.Column(scale=3, elem_id="lesson-main"):
            student_panel = room_layout.student_panel(lang, join)   # a student's question, above the screen
            first_text, first_counter = V.screen_markdown(first, lang, 0)
            text = gr.Markdown(first_text, elem_id="lesson-text", latex_delimiters=[])
            teacher_panel = room_layout.teacher_panel(lang)           # the class's answers, under the screen
            with gr.Row(visible=False, elem_id="lesson-exp", equal_height=False) as exp:
                with gr.Column(scale=1, min_width=320):   # predict, run, and the guess beside the result
                    exp_q = gr.Markdown("", elem_id="lesson-predict")
                    guess = gr.Radio([], value=None, label=tr(lang, "your_guess"), elem_id="lesson-guess")
                    guess_number = gr.Number(None, label=tr(lang, "your_guess"), visible=False,
                                             elem_id="lesson-guess-number")
                    confidence = gr.Radio(V.confidence_choices(), value=None, label=tr(lang, "confidence"),
                                          elem_id="lesson-confidence")
                    run = gr.Button(tr(lang, "run"), variant="primary", elem_id="lesson-run")
                    exp_out = gr.Markdown("", elem_id="lesson-result", latex_delimiters=[])
                with gr.Column(scale=1, min_width=320):   # the picture of the learner's run
                    exp_plot = gr.Plot(visible=False, show_label=False, elem_id="lesson-plot")
            lab = lab_layout.build(lang)                  # after a run: the picture with its controls
            with gr.Group(visible=False, elem_id="lesson-calib") as calib_box:   # the learner's own calibration
                calib_text = gr.Markdown(tr(lang, "calib_head"), elem_id="lesson-calib-text")
                calib_plot = gr.Plot(show_label=False, elem_id="lesson-calib-plot")
            with gr.Row(elem_id="teacher-pager"):
                prev_btn = gr.Button(tr(lang, "prev"), elem_id="teacher-prev")
                counter = gr.Markdown(first_counter, elem_id="teacher-counter")
                next_btn = gr.Button(tr(lang, "next"), elem_id="teacher-next")
            first_look = V.look_markdown(first, lang)
            look = gr.Markdown(first_look, visible=bool(first_look), elem_id="lesson-look")
            load = gr.Button(tr(lang, "load"), elem_id="lesson-load")
            loaded = gr.Markdown("", elem_id="lesson-loaded")
            checks_box, checks_head, slots = C.build_slots()
    return LessonsParts(lessons={les.number: les for les in lessons}, order=[les.number for les in lessons],
                        total_checks=total_checks, current=current, screen=screen, runs=runs, done=done,
                        learner=learner, teacher=teacher, link=link, link_in=link_in, side=side, picker=picker,
                        progress=progress, glossary_box=glossary_box, glossary=glossary, text=text, exp=exp,
                        exp_q=exp_q, guess=guess, guess_number=guess_number, run=run, exp_out=exp_out,
                        exp_plot=exp_plot, prev=prev_btn, counter=counter, next=next_btn, look=look, load=load,
                        loaded=loaded, checks_box=checks_box, checks_head=checks_head, slots=slots,
                        loaded_message=V.loaded_message, lab=lab, confidence=confidence, calib=calib, calib_now=calib_now, page_states=[done, learner, calib],
                        calib_line=calib_line, calib_box=calib_box, calib_text=calib_text, calib_plot=calib_plot,
                        room=ClassParts(teacher=teacher_panel, student=student_panel, hall=hall))
