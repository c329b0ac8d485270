"""Lessons: read a lesson screen by screen (English or Chinese), predict and then run each screen's
experiment on the live model, answer its checks, and track the checks passed. Teacher mode shows
one idea per screen in large type for projecting in class, paged with the keyboard.

``build(ctx)`` lays out and wires the tab's own events (and, through ``ctx.page``, the progress
restore on page load, ``lesson_restore_progress``). The page wires "Load this experiment"
(``parts.load``): it reads the lesson number from ``parts.current``, calls the named tab's ``fill``
and writes ``parts.loaded_message(lang, lesson, tab_id)`` into ``parts.loaded``.

A broken lesson file must not take the app down: the tab then shows a note instead, and its
``parts`` is a ``LessonsUnavailable`` (the note alone), so there is nothing to load."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab import limits
from decoding_lab.classroom import RoomError, RoomHall, RoomLimits
from decoding_lab.lessons import LessonError, load_lessons
from decoding_lab.ui.classroom import handlers as room_handlers
from decoding_lab.ui.classroom import views as room_views
from decoding_lab.ui.classroom.languages import SessionLanguages
from decoding_lab.ui.common.errors import plain
from decoding_lab.ui.common.tab import TabContext, TabUI
from decoding_lab.ui.lessons import handlers, layout
from decoding_lab.ui.lessons.parts import LessonsUnavailable
from decoding_lab.ui.lessons.strings import tr
from decoding_lab.ui.lessons.views import loaded_message, outputs

__all__ = ["build", "loaded_message"]


def build(ctx: TabContext) -> TabUI:
    try:
        lessons = load_lessons()
        if not lessons:
            raise LessonError("no lesson files in lessons/")
    except LessonError as e:
        note = gr.Markdown(f"*{tr(ctx.lang, 'unavailable', error=plain(e))}*", elem_id="lessons-unavailable")
        return TabUI(name="lessons", parts=LessonsUnavailable(note=note))
    hall = RoomHall(RoomLimits.from_limits(limits.current()))   # this page's classes, shared by its visitors
    ui = layout.build(ctx.lang, lessons, hall)
    events = handlers.wire(ui, ctx.lang_state, ctx.page, ctx.jobs)
    langs = SessionLanguages()   # the language each page shows, for the class's followers
    events.update(room_handlers.wire(ui, ui.room, ctx.lang_state, ctx.jobs, events, langs))
    room_words = room_views.label_outputs(ui.room.teacher, ui.room.student)

    def relabel(lang: str, *states: Any) -> dict:
        number, screen, *lesson_states, member = states
        at = _room_screen(hall, member)
        if at is not None:   # a student in a class: the teacher's screen, whatever this session last drew
            number, screen = at
        out = {**handlers.relabel(ui, lang, number, screen, *lesson_states),
               **room_views.labels(ui.room.teacher, ui.room.student, lang)}
        if member:   # in a class the room asks the screen's question: the lone Run and the checks stay hidden
            out.update({ui.exp: gr.update(visible=False), ui.checks_box: gr.update(visible=False)})
        return out

    def relabelled(redrawn: Any) -> None:
        # then the class's followers draw in the new language, after the lesson's redraw
        redrawn.then(room_handlers.note_language(langs), [ctx.lang_state], None, queue=False,
                     api_visibility="private", show_progress="hidden")

    return TabUI(
        name="lessons",
        states=[*handlers.state_inputs(ui), ui.room.student.member],
        views=[*outputs(ui), *room_words],
        relabel=relabel,
        relabel_private=True,    # its progress lives in a gr.BrowserState, kept out of set_language's API
        relabelled=relabelled,
        fill=None,
        events=events,
        parts=ui,
    )


def _room_screen(hall: RoomHall, member: Any) -> tuple[int, int] | None:
    """(lesson, screen) the class of ``member`` (a student's {"code", "id"}) is on, or None when
    this page is in no open class or the teacher has pushed no screen yet."""
    code = member.get("code") if isinstance(member, dict) else None
    if not code:
        return None
    try:
        view = hall.view(code)
    except RoomError:
        return None
    if view.lesson is None or member.get("id") not in view.students:
        return None
    return int(view.lesson), int(view.screen)

