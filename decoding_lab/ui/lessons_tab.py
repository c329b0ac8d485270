"""Lessons tab: read a lesson (English or Chinese), load its experiment in one click,
answer its question, and track progress. Teacher mode shows one idea per screen in
large type for projecting in class.

Lesson content is data (``lessons/*.toml``, read by ``decoding_lab.lessons``); this
module only lays it out. Progress lives in the visitor's browser (``gr.BrowserState``),
so it survives a reload and is never shared between visitors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from decoding_lab.lessons import Lesson, load_lessons
from decoding_lab.ui.common.i18n import norm_lang

S: dict[str, dict[str, str]] = {
    "en": {"pick": "Lessons", "teacher": "Teacher mode (large type, one idea per screen)", "prev": "◀ Previous",
           "next": "Next ▶", "load": "Load this experiment", "look": "What to look at", "quiz": "Question",
           "check": "Check my answer", "right": "✅ Right. ", "wrong": "❌ Not quite. ", "choose": "Pick an answer first.",
           "progress": "Progress: {done} of {total} lessons answered", "screen": "Screen {i} of {n}",
           "loaded": "Loaded: **{title}**. The {tab} tab now holds its model, prompt and settings.",
           "explorer": "Explorer", "compare": "Compare", "beam": "Beam search", "grammar": "Grammar",
           "multisample": "Many samples", "determinism": "Temperature 0"},
    "zh": {"pick": "课程", "teacher": "教师模式（大字号，每屏一个要点）", "prev": "◀ 上一屏", "next": "下一屏 ▶",
           "load": "载入本课实验", "look": "看哪里", "quiz": "问题", "check": "检查答案", "right": "✅ 正确。",
           "wrong": "❌ 不太对。", "choose": "请先选一个答案。", "progress": "进度：已完成 {done} / {total} 课",
           "screen": "第 {i} / {n} 屏", "loaded": "已载入：**{title}**。{tab}页已设好它的模型、提示和参数。",
           "explorer": "探索", "compare": "对比", "beam": "束搜索", "grammar": "语法约束", "multisample": "多次采样",
           "determinism": "温度 0"},
}


def s(lang: str, key: str, **kw: Any) -> str:
    return S[norm_lang(lang) if norm_lang(lang) in S else "en"][key].format(**kw)


def _lang(lang: str) -> str:
    return "zh" if norm_lang(lang).startswith("zh") else "en"


def picker_choices(lessons: list[Lesson], lang: str, done: list[int] | None) -> list[tuple[str, int]]:
    done_set = set(done or [])
    return [(("✓ " if les.number in done_set else "") + f"{les.number}. {les.title[_lang(lang)]}", les.number)
            for les in lessons]


def lesson_markdown(les: Lesson, lang: str) -> str:
    lg = _lang(lang)
    return f"## {les.number}. {les.title[lg]}\n\n" + "\n\n".join(les.screens(lg))


def look_markdown(les: Lesson, lang: str) -> str:
    lg = _lang(lang)
    return f"**{s(lang, 'look')}**\n\n" + "\n".join(f"- {item[lg]}" for item in les.look_at)


def teacher_screen(les: Lesson, lang: str, i: int) -> tuple[str, str]:
    screens = les.screens(_lang(lang))
    i = max(0, min(i, len(screens) - 1))
    return f"### {les.title[_lang(lang)]}\n\n{screens[i]}", s(lang, "screen", i=i + 1, n=len(screens))


def build(lang: str = "en") -> SimpleNamespace:
    lessons = load_lessons()
    first = lessons[0]
    ui = SimpleNamespace(lessons={les.number: les for les in lessons}, order=[les.number for les in lessons])
    ui.current = gr.State(first.number)
    ui.screen = gr.State(0)
    ui.done = gr.BrowserState([], storage_key="decoding-lab-lessons-done")
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            ui.picker = gr.Radio(picker_choices(lessons, lang, []), value=first.number, label=s(lang, "pick"),
                                 elem_id="lesson-picker")
            ui.progress = gr.Markdown(s(lang, "progress", done=0, total=len(lessons)), elem_id="lesson-progress")
            ui.teacher = gr.Checkbox(False, label=s(lang, "teacher"), elem_id="teacher-mode")
        with gr.Column(scale=3):
            with gr.Column(visible=True, elem_id="lesson-reading") as ui.reading:
                ui.text = gr.Markdown(lesson_markdown(first, lang), elem_id="lesson-text", latex_delimiters=[])
            with gr.Column(visible=False, elem_id="teacher-view") as ui.teacher_view:
                screen, counter = teacher_screen(first, lang, 0)
                ui.teacher_text = gr.Markdown(screen, elem_id="teacher-text", latex_delimiters=[])
                with gr.Row():
                    ui.prev = gr.Button(s(lang, "prev"), elem_id="teacher-prev")
                    ui.counter = gr.Markdown(counter, elem_id="teacher-counter")
                    ui.next = gr.Button(s(lang, "next"), elem_id="teacher-next")
            ui.look = gr.Markdown(look_markdown(first, lang), elem_id="lesson-look")
            ui.load = gr.Button(s(lang, "load"), variant="primary", elem_id="lesson-load")
            ui.loaded = gr.Markdown("", elem_id="lesson-loaded")
            with gr.Group():
                ui.question = gr.Markdown(f"**{s(lang, 'quiz')}** " + first.quiz["question"][_lang(lang)],
                                          elem_id="lesson-question")
                ui.answer = gr.Radio(_quiz_choices(first, lang), value=None, show_label=False, elem_id="lesson-quiz")
                ui.check = gr.Button(s(lang, "check"), elem_id="lesson-check")
                ui.feedback = gr.Markdown("", elem_id="lesson-feedback")
    return ui


def _quiz_choices(les: Lesson, lang: str) -> list[tuple[str, int]]:
    return [(c, i) for i, c in enumerate(les.quiz["choices"][_lang(lang)])]


def views(ui: SimpleNamespace, lang: str, number: int, screen: int, done: list[int] | None) -> dict:
    """Everything the tab shows for one lesson, in one language."""
    les = ui.lessons.get(int(number), ui.lessons[ui.order[0]])
    text, counter = teacher_screen(les, lang, screen)
    return {
        ui.picker: gr.update(choices=picker_choices(list(ui.lessons.values()), lang, done), value=les.number,
                             label=s(lang, "pick")),
        ui.progress: s(lang, "progress", done=len(set(done or [])), total=len(ui.lessons)),
        ui.teacher: gr.update(label=s(lang, "teacher")),
        ui.text: lesson_markdown(les, lang), ui.teacher_text: text, ui.counter: counter,
        ui.prev: gr.update(value=s(lang, "prev")), ui.next: gr.update(value=s(lang, "next")),
        ui.look: look_markdown(les, lang), ui.load: gr.update(value=s(lang, "load")),
        ui.question: f"**{s(lang, 'quiz')}** " + les.quiz["question"][_lang(lang)],
        ui.answer: gr.update(choices=_quiz_choices(les, lang), value=None), ui.check: gr.update(value=s(lang, "check")),
        ui.feedback: "", ui.loaded: "",
    }


def wire(ui: SimpleNamespace, lang_state: Any) -> dict[str, Any]:
    """Tab-local events. Loading a preset into other tabs is wired by ``build_demo``."""
    outs = [ui.picker, ui.progress, ui.teacher, ui.text, ui.teacher_text, ui.counter, ui.prev, ui.next, ui.look,
            ui.load, ui.question, ui.answer, ui.check, ui.feedback, ui.loaded]

    def on_pick(lang, number, done):
        return {ui.current: int(number), ui.screen: 0, **views(ui, lang, int(number), 0, done)}

    ui.picker.input(on_pick, [lang_state, ui.picker, ui.done], [ui.current, ui.screen, *outs], api_name="lesson_open")

    def on_teacher(on):
        return {ui.reading: gr.update(visible=not on), ui.teacher_view: gr.update(visible=bool(on))}

    ui.teacher.change(on_teacher, [ui.teacher], [ui.reading, ui.teacher_view], api_visibility="private")

    def move(delta):
        def handler(lang, number, screen):
            les = ui.lessons[int(number)]
            n = len(les.screens(_lang(lang)))
            screen = max(0, min(int(screen) + delta, n - 1))
            text, counter = teacher_screen(les, lang, screen)
            return {ui.screen: screen, ui.teacher_text: text, ui.counter: counter}
        return handler

    for btn, delta, name in ((ui.prev, -1, "lesson_prev"), (ui.next, 1, "lesson_next")):
        btn.click(move(delta), [lang_state, ui.current, ui.screen], [ui.screen, ui.teacher_text, ui.counter],
                  api_name=name)

    def on_check(lang, number, choice, done):
        les = ui.lessons[int(number)]
        if choice is None:
            return {ui.feedback: s(lang, "choose"), ui.done: done, ui.progress: gr.update(), ui.picker: gr.update()}
        right = les.check_answer(int(choice))
        done = sorted(set(done or []) | ({les.number} if right else set()))
        msg = (s(lang, "right") if right else s(lang, "wrong")) + les.quiz["explain"][_lang(lang)]
        return {ui.feedback: msg, ui.done: done,
                ui.progress: s(lang, "progress", done=len(done), total=len(ui.lessons)),
                ui.picker: gr.update(choices=picker_choices(list(ui.lessons.values()), lang, done), value=les.number)}

    ui.check.click(on_check, [lang_state, ui.current, ui.answer, ui.done],
                   [ui.feedback, ui.done, ui.progress, ui.picker], api_name="lesson_check")

    def on_restore_progress(lang, number, done):
        return views(ui, lang, number, 0, done)

    return {"outputs": outs, "rerender": lambda lang, number, done: views(ui, lang, number, 0, done),
            "restore": on_restore_progress}
