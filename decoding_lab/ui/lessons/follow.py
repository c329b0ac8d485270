"""The lesson follows the student: after "Open this lesson's setup" the page switches to the tab
that holds the setup, so a strip above the tabs keeps the lesson in sight there: its title and
screen, the screen's "What to look at" pointers (only those that can no longer give a prediction
away, as on the lesson's own screen) and a button back to the lesson. The strip hides when the
student goes back; the page scrolls to it, so the setup is not opened half-way down a chart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from decoding_lab.lessons import Lesson
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.lessons.strings import tr
from decoding_lab.ui.lessons.views import lesson_lang, look_markdown

#: after the tab switch, bring the strip (and the top of the tab under it) into the window
SCROLL_TO_STRIP_JS = ("() => { const el = document.getElementById('lesson-follow');"
                      " if (el) el.scrollIntoView({block: 'start'}); }")


@dataclass(slots=True)
class FollowParts:
    row: gr.Row            # hidden until a lesson's setup is opened in another tab
    text: gr.Markdown
    back: gr.Button
    shown: gr.State        # (lesson number, screen) the strip is about, or None


def build(lang: str) -> FollowParts:
    """The strip, built above the page's tabs (hidden)."""
    with gr.Row(elem_id="lesson-follow", visible=False, equal_height=False) as row:
        with gr.Column(scale=5, min_width=300):   # on a phone the button wraps below the text
            text = gr.Markdown("", elem_id="lesson-follow-text")
        back = gr.Button(tr(lang, "back"), size="sm", scale=0, min_width=180, elem_id="lesson-back")
    return FollowParts(row=row, text=text, back=back, shown=gr.State(None))


def strip_markdown(lang: str, lesson: Lesson, screen: int, runs: dict | None, tab_id: str) -> str:
    """The strip's text: which lesson and screen, which tab, then that screen's pointers."""
    lg = lesson_lang(lang)
    head = tr(lang, "follow", n=lesson.number, title=lesson.title.get(lg, lesson.title["en"]),
              s=int(screen) + 1, tab=tr(lang, tab_id))
    look = look_markdown(lesson, lang, int(screen), runs)
    return head + "\n\n" + (look or tr(lang, "follow_none"))


def views(parts: FollowParts, lang: str, lessons: dict[int, Lesson], shown: Any, runs: dict | None) -> dict:
    """The strip for ``shown`` = (lesson number, screen), in ``lang``; hidden when there is none."""
    lang = norm_lang(lang)
    if not shown:
        return {parts.row: gr.update(visible=False), parts.back: gr.update(value=tr(lang, "back"))}
    number, screen = shown
    lesson = lessons[int(number)]
    tab_id = dict(lesson.preset).get("tab", "explorer")
    return {parts.row: gr.update(visible=True), parts.back: gr.update(value=tr(lang, "back")),
            parts.text: strip_markdown(lang, lesson, screen, runs, tab_id)}
