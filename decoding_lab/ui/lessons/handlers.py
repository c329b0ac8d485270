"""The Lessons tab's own events: open a lesson, page through teacher mode, check an answer (progress
kept in the browser), and restore that progress when the page loads. Loading a lesson's preset into
another tab is the page's (it calls that tab's ``fill``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from decoding_lab.errors import SettingsError
from decoding_lab.lessons import Lesson
from decoding_lab.ui.common.errors import guarded
from decoding_lab.ui.common.tab import inputs_of, named
from decoding_lab.ui.lessons.strings import tr
from decoding_lab.ui.lessons.views import lesson_lang, outputs, picker_choices, teacher_screen, views


def lesson_of(ui: SimpleNamespace, lang: str, number: Any) -> Lesson:
    """The lesson numbered ``number`` (raises ``SettingsError`` for a number no lesson has)."""
    try:
        return ui.lessons[int(number)]
    except (KeyError, TypeError, ValueError):
        raise SettingsError(tr(lang, "no_lesson", number=number)) from None


def relabel(ui: SimpleNamespace, lang: str, number: Any, done: list[int] | None) -> dict:
    """The lesson on screen in ``lang``, with this browser's progress."""
    return views(ui, lang, number, 0, done)


def wire(ui: SimpleNamespace, lang_state: Any, page: Any = None) -> dict[str, Any]:
    """Tab-local events; with ``page`` (the ``gr.Blocks``) also the progress restore on page load."""
    outs = outputs(ui)
    events: dict[str, Any] = {}

    @guarded
    def on_pick(v: dict[str, Any]) -> dict:
        les = lesson_of(ui, v["lang"], v["number"])
        return {ui.current: les.number, ui.screen: 0, **views(ui, v["lang"], les.number, 0, v["done"])}

    inputs, names = inputs_of({"lang": lang_state, "number": ui.picker, "done": ui.done})
    events["open"] = ui.picker.input(named(on_pick, names), inputs, [ui.current, ui.screen, *outs],
                                     api_name="lesson_open")

    def on_teacher(v: dict[str, Any]) -> dict:
        on = bool(v["on"])
        return {ui.reading: gr.update(visible=not on), ui.teacher_view: gr.update(visible=on)}

    ui.teacher.change(named(on_teacher, ["on"]), [ui.teacher], [ui.reading, ui.teacher_view],
                      api_visibility="private")

    def move(delta: int):
        @guarded
        def on_move(v: dict[str, Any]) -> dict:
            lang = v["lang"]
            les = lesson_of(ui, lang, v["number"])
            n = len(les.screens(lesson_lang(lang)))
            screen = max(0, min(int(v["screen"] or 0) + delta, n - 1))
            text, counter = teacher_screen(les, lang, screen)
            return {ui.screen: screen, ui.teacher_text: text, ui.counter: counter}
        return on_move

    inputs, names = inputs_of({"lang": lang_state, "number": ui.current, "screen": ui.screen})
    for btn, delta, name in ((ui.prev, -1, "lesson_prev"), (ui.next, 1, "lesson_next")):
        events[name] = btn.click(named(move(delta), names), inputs, [ui.screen, ui.teacher_text, ui.counter],
                                 api_name=name)

    @guarded
    def on_check(v: dict[str, Any]) -> dict:
        lang, done, choice = v["lang"], v["done"], v["choice"]
        les = lesson_of(ui, lang, v["number"])
        if choice is None:
            return {ui.feedback: tr(lang, "choose"), ui.done: done, ui.progress: gr.update(), ui.picker: gr.update()}
        right = les.check_answer(int(choice))
        done = sorted(set(done or []) | ({les.number} if right else set()))
        msg = (tr(lang, "right") if right else tr(lang, "wrong")) + les.quiz["explain"][lesson_lang(lang)]
        return {ui.feedback: msg, ui.done: done,
                ui.progress: tr(lang, "progress", done=len(done), total=len(ui.lessons)),
                ui.picker: gr.update(choices=picker_choices(list(ui.lessons.values()), lang, done), value=les.number)}

    inputs, names = inputs_of({"lang": lang_state, "number": ui.current, "choice": ui.answer, "done": ui.done})
    events["check"] = ui.check.click(named(on_check, names), inputs, [ui.feedback, ui.done, ui.progress, ui.picker],
                                     api_name="lesson_check")

    if page is not None:  # lesson progress kept in the browser comes back when the page opens
        def on_restore_progress(v: dict[str, Any]) -> dict:
            return views(ui, v["lang"], v["number"], 0, v["done"])

        inputs, names = inputs_of({"lang": lang_state, "number": ui.current, "done": ui.done})
        events["restore"] = page.load(named(on_restore_progress, names), inputs, outs,
                                      api_name="lesson_restore_progress")
    return events
