"""What the Lessons tab shows for one lesson in one language: the picker (✓ for answered lessons), the
text, one teacher-mode screen, the pointers and the question. Lesson content is data
(``lessons/*.toml``, read by ``decoding_lab.lessons``); this module only lays it out as Markdown."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from decoding_lab.lessons import Lesson
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.lessons.strings import tr


def lesson_lang(lang: str) -> str:
    """The lesson files' language key for the page's language."""
    return "zh" if norm_lang(lang) == "zh" else "en"


def picker_choices(lessons: list[Lesson], lang: str, done: list[int] | None) -> list[tuple[str, int]]:
    done_set = set(done or [])
    return [(("✓ " if les.number in done_set else "") + f"{les.number}. {les.title[lesson_lang(lang)]}", les.number)
            for les in lessons]


def lesson_markdown(les: Lesson, lang: str) -> str:
    lg = lesson_lang(lang)
    return f"## {les.number}. {les.title[lg]}\n\n" + "\n\n".join(les.screens(lg))


def look_markdown(les: Lesson, lang: str) -> str:
    lg = lesson_lang(lang)
    return f"**{tr(lang, 'look')}**\n\n" + "\n".join(f"- {item[lg]}" for item in les.look_at)


def teacher_screen(les: Lesson, lang: str, i: int) -> tuple[str, str]:
    screens = les.screens(lesson_lang(lang))
    i = max(0, min(i, len(screens) - 1))
    return f"### {les.title[lesson_lang(lang)]}\n\n{screens[i]}", tr(lang, "screen", i=i + 1, n=len(screens))


def question_markdown(les: Lesson, lang: str) -> str:
    return f"**{tr(lang, 'quiz')}** " + les.quiz["question"][lesson_lang(lang)]


def quiz_choices(les: Lesson, lang: str) -> list[tuple[str, int]]:
    return [(c, i) for i, c in enumerate(les.quiz["choices"][lesson_lang(lang)])]


def progress_markdown(lang: str, done: list[int] | None, total: int) -> str:
    return tr(lang, "progress", done=len(set(done or [])), total=total)


def loaded_message(lang: str, lesson: Lesson, tab_id: str) -> str:
    """The note under "Load this experiment" once the lesson's tab holds its preset."""
    return tr(lang, "loaded", title=lesson.title.get(lesson_lang(lang), lesson.title["en"]), tab=tr(lang, tab_id))


def outputs(ui: SimpleNamespace) -> list[Any]:
    """Every component ``views`` writes, in the order of the tab's events' outputs."""
    return [ui.picker, ui.progress, ui.teacher, ui.text, ui.teacher_text, ui.counter, ui.prev, ui.next, ui.look,
            ui.load, ui.question, ui.answer, ui.check, ui.feedback, ui.loaded]


def views(ui: SimpleNamespace, lang: str, number: Any, screen: int, done: list[int] | None) -> dict:
    """Everything the tab shows for one lesson, in one language (an unknown number shows the first)."""
    les = ui.lessons.get(_number(number), ui.lessons[ui.order[0]])
    text, counter = teacher_screen(les, lang, screen)
    return {
        ui.picker: gr.update(choices=picker_choices(list(ui.lessons.values()), lang, done), value=les.number,
                             label=tr(lang, "pick")),
        ui.progress: progress_markdown(lang, done, len(ui.lessons)),
        ui.teacher: gr.update(label=tr(lang, "teacher")),
        ui.text: lesson_markdown(les, lang), ui.teacher_text: text, ui.counter: counter,
        ui.prev: gr.update(value=tr(lang, "prev")), ui.next: gr.update(value=tr(lang, "next")),
        ui.look: look_markdown(les, lang), ui.load: gr.update(value=tr(lang, "load")),
        ui.question: question_markdown(les, lang),
        ui.answer: gr.update(choices=quiz_choices(les, lang), value=None), ui.check: gr.update(value=tr(lang, "check")),
        ui.feedback: "", ui.loaded: "",
    }


def _number(number: Any) -> int | None:
    try:
        return int(number)
    except (TypeError, ValueError):
        return None
