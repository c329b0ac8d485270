"""Where the class room's components go in the Lessons tab (``lessons.layout`` calls these inside
its own columns): ``teacher_panel`` at the top of the lesson (shown in teacher mode),
``join_box`` under the lesson list, ``student_panel`` at the top of the lesson (shown once joined)."""

from __future__ import annotations

import gradio as gr

from decoding_lab.ui.classroom.parts import StudentPanel, TeacherPanel
from decoding_lab.ui.classroom.strings import tr


def confidence_choices(lang: str) -> list[tuple[str, int]]:
    return [(tr(lang, f"conf_{i}"), i) for i in (1, 2, 3)]


def teacher_panel(lang: str) -> TeacherPanel:
    room = gr.State({})
    # a copy kept in the browser (read only when the page opens): a reloaded projector gets its class back
    saved = gr.BrowserState({}, storage_key="decoding-lab-class-teacher")
    base = gr.Textbox("", visible="hidden", elem_id="class-base")   # outside the column teacher mode redraws
    with gr.Column(visible=False, elem_id="class-teacher") as box:
        open_btn = gr.Button(tr(lang, "open"), variant="primary", elem_id="class-open")
        with gr.Accordion(tr(lang, "join_box"), open=True, visible=False, elem_id="class-join-info") as join_box:
            info = gr.HTML("", elem_id="class-info")
        with gr.Row(elem_id="class-status-row"):
            count = gr.Markdown("", elem_id="class-count")
            with gr.Accordion(tr(lang, "who"), open=False, visible=False, elem_id="class-who") as who_box:
                who = gr.Markdown("", elem_id="class-who-list")
        asked = gr.Radio([], value=None, label=tr(lang, "asked"), visible=False, elem_id="class-asked")
        with gr.Row(visible=False, elem_id="class-buttons") as _buttons:
            next_round = gr.Button(tr(lang, "round"), elem_id="class-round")
            reveal = gr.Button(tr(lang, "reveal"), variant="primary", elem_id="class-reveal")
            csv = gr.Button(tr(lang, "csv"), elem_id="class-csv")
            close = gr.Button(tr(lang, "close"), variant="stop", elem_id="class-close")
        msg = gr.Markdown("", elem_id="class-msg")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=300):
                plot = gr.Plot(visible=False, show_label=False, elem_id="class-plot")
            with gr.Column(scale=1, min_width=300):
                figure = gr.Plot(visible=False, show_label=False, elem_id="class-figure")
        result = gr.Markdown("", elem_id="class-result", latex_delimiters=[])
        csv_file = gr.File(visible=False, show_label=False, elem_id="class-csv-file")
    panel = TeacherPanel(box=box, room=room, saved=saved, open=open_btn, base=base, join_box=join_box, info=info, count=count,
                         who_box=who_box, who=who, asked=asked, plot=plot, result=result, figure=figure,
                         next_round=next_round, reveal=reveal, csv=csv, csv_file=csv_file, close=close, msg=msg, buttons=_buttons)
    return panel


def join_box(lang: str) -> tuple[gr.Accordion, gr.Textbox, gr.Textbox, gr.Button, gr.Markdown]:
    with gr.Accordion(tr(lang, "join"), open=False, elem_id="class-join") as box:
        code = gr.Textbox("", label=tr(lang, "code"), placeholder=tr(lang, "code_ph"), max_length=40,
                          elem_id="class-code")
        nick = gr.Textbox("", label=tr(lang, "nick"), max_length=24, elem_id="class-nick")
        join = gr.Button(tr(lang, "join_btn"), variant="primary", elem_id="class-join-btn")
        msg = gr.Markdown("", elem_id="class-join-msg")
    return box, code, nick, join, msg


def student_panel(lang: str, join: tuple) -> StudentPanel:
    member = gr.State({})
    # a copy kept in the browser (read only when the page opens): a reloaded page keeps its place and answers
    saved = gr.BrowserState({}, storage_key="decoding-lab-class-member")
    seen = gr.State("")
    # outside the lesson list's column (which teacher mode hides and shows, redrawing its children)
    link_in = gr.Textbox("", visible="hidden", elem_id="class-link-in")
    with gr.Column(visible=False, elem_id="class-student") as box:
        head = gr.Markdown("", elem_id="class-student-head")
        question = gr.Markdown("", elem_id="class-question", latex_delimiters=[])
        choice = gr.Radio([], value=None, label=tr(lang, "your_answer"), visible=False, elem_id="class-choice")
        number = gr.Number(None, label=tr(lang, "your_answer"), visible=False, elem_id="class-number")
        confidence = gr.Radio(confidence_choices(lang), value=None, label=tr(lang, "confidence"), visible=False,
                              elem_id="class-confidence")
        send = gr.Button(tr(lang, "send"), variant="primary", visible=False, elem_id="class-send")
        status = gr.Markdown("", elem_id="class-status", latex_delimiters=[])
        refresh = gr.Button(tr(lang, "refresh"), size="sm", visible=False, elem_id="class-refresh")
        leave = gr.Button(tr(lang, "leave"), size="sm", elem_id="class-leave")
    box_, code, nick, join_btn, join_msg = join
    return StudentPanel(member=member, saved=saved, join_box=box_, code=code, nick=nick, join=join_btn, join_msg=join_msg,
                        link_in=link_in, seen=seen, box=box, head=head, question=question, choice=choice, number=number,
                        confidence=confidence, send=send, status=status, refresh=refresh, leave=leave)
