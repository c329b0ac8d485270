"""The Lessons tab's components by name (its ``TabUI``'s ``parts``), filled by ``layout.build`` and
``checks.build_slots``. Kept apart from ``layout`` so that ``views`` and ``checks``, which ``layout``
imports, can name these types too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

from decoding_lab.lessons import Lesson


@dataclass(slots=True)
class LessonSlot:
    """One question slot of the checks (``checks.build_slots``), hidden past the lesson's checks."""

    box: gr.Group
    question: gr.Markdown
    answer: gr.Radio
    check: gr.Button
    feedback: gr.Markdown


@dataclass(slots=True)
class LessonsParts:
    """Every component of the Lessons tab, in page order, with the lessons it shows."""

    lessons: dict[int, Lesson]   # by number
    order: list[int]             # the numbers, in the order of the files
    total_checks: int
    current: gr.State            # the lesson on screen: what "Load this experiment" loads
    screen: gr.State             # its screen
    runs: gr.State               # "lesson/experiment" -> the learner's run (guess and values)
    done: gr.BrowserState        # ids of the checks passed
    learner: gr.BrowserState     # seeds the order of the choices
    teacher: gr.Checkbox
    link: gr.Textbox             # hidden: "lesson=3&screen=1", for the address bar
    link_in: gr.Textbox          # hidden: a shared link's lesson, set on page load
    side: gr.Column              # the list, the progress and the glossary (hidden in teacher mode)
    picker: gr.Radio
    progress: gr.Markdown
    glossary_box: gr.Accordion
    glossary: gr.Markdown
    text: gr.Markdown
    exp: gr.Row                  # the screen's experiment (hidden when it has none)
    exp_q: gr.Markdown
    guess: gr.Radio
    guess_number: gr.Number
    run: gr.Button
    exp_out: gr.Markdown
    exp_plot: gr.Plot
    prev: gr.Button
    counter: gr.Markdown
    next: gr.Button
    look: gr.Markdown
    load: gr.Button              # "Load this experiment" (the page wires it)
    loaded: gr.Markdown
    checks_box: gr.Column
    checks_head: gr.Markdown
    slots: list[LessonSlot]
    #: ``views.loaded_message(lang, lesson, tab_id)``: the page writes it into ``loaded``
    loaded_message: Callable[[str, Lesson, str], str]
    #: the lab under a run (``decoding_lab.ui.lessons.lab.LabParts``)
    lab: Any = None
    #: the learner's own calibration: a confidence beside each prediction, the records (in the
    #: browser), a line under the progress and the picture on a lesson's calibration screen
    confidence: Any = None
    calib: Any = None            # gr.BrowserState: read when the page opens, written after each run
    calib_now: Any = None        # gr.State: the records the session's events read (no API caller sends them)
    calib_line: Any = None
    calib_box: Any = None
    calib_text: Any = None
    calib_plot: Any = None
    #: the gr.BrowserStates above, for the page to render outside the tabs (see ``layout.build``)
    page_states: Any = None
    #: the class room (``decoding_lab.ui.classroom.parts.ClassParts``): the teacher's and a student's panels
    room: Any = None


@dataclass(slots=True)
class LessonsUnavailable:
    """The tab when no lesson file could be read: a note in its place, nothing to load."""

    note: gr.Markdown
