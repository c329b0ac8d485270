"""The class room's components (built into the Lessons tab by ``layout``): the teacher's panel,
shown in teacher mode above the lesson; a student's "Join a class" box beside the lesson list;
and a student's answer panel above the lesson once joined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr


@dataclass(slots=True)
class TeacherPanel:
    box: gr.Column                 # visible in teacher mode
    room: gr.State                 # {"code", "secret", "link"} of the class this tab opened ({} for none)
    saved: gr.BrowserState         # its copy in the browser, read when the page opens (a reload keeps the class)
    open: gr.Button
    base: gr.Textbox               # hidden: the page's own address, for the join link
    join_box: gr.Accordion
    info: gr.HTML                  # the code in large type, the QR code and the link
    count: gr.Markdown
    who_box: gr.Accordion
    who: gr.Markdown
    asked: gr.Radio                # which of the screen's questions the class answers
    plot: gr.Plot                  # the class's answers, round beside round
    result: gr.Markdown            # after the reveal
    figure: gr.Plot                # the reveal's run, drawn as the lesson draws it
    next_round: gr.Button
    reveal: gr.Button
    csv: gr.Button
    csv_file: gr.File              # the CSV, offered for download
    close: gr.Button
    msg: gr.Markdown               # a refusal, one line
    buttons: gr.Row                # round, reveal, CSV, close: shown while a class is open


@dataclass(slots=True)
class StudentPanel:
    member: gr.State               # {"code", "id"} of the class this tab joined ({} for none)
    saved: gr.BrowserState         # its copy in the browser, read when the page opens (a reload keeps the place)
    join_box: gr.Accordion         # beside the lesson list
    code: gr.Textbox
    nick: gr.Textbox
    join: gr.Button
    join_msg: gr.Markdown
    link_in: gr.Textbox            # hidden: a join link's code, set on page load
    seen: gr.State                 # the question key the panel shows (what an answer is for)
    box: gr.Column                 # above the lesson, once joined
    head: gr.Markdown
    question: gr.Markdown
    choice: gr.Radio
    number: gr.Number
    confidence: gr.Radio
    send: gr.Button
    status: gr.Markdown
    refresh: gr.Button             # "Update": shown when the server's live views are all taken
    leave: gr.Button


@dataclass(slots=True)
class ClassParts:
    teacher: TeacherPanel
    student: StudentPanel
    hall: Any                      # the process's ``classroom.RoomHall`` (shared by every visitor)
