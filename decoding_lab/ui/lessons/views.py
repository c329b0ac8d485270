"""What the Lessons tab shows for one lesson, one screen and one language: the picker (✓ for a lesson
whose checks are all passed), the screen's text and its experiment, the pointers (only those that can no longer give a
prediction away: ``Lesson.pointers``) and the checks.
Teacher mode hides everything but the screen, its experiment and the pager. Lesson content is
data (``lessons/*.toml``, read by ``decoding_lab.lessons``); this module only lays it out."""

from __future__ import annotations

import html
import re
from typing import Any

import gradio as gr

from decoding_lab.lesson_runs import Experiment
from decoding_lab.lessons import Lesson
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.lessons import checks as C
from decoding_lab.ui.lessons.figures import experiment_figure, shown
from decoding_lab.ui.lessons.glossary_view import glossary_markdown
from decoding_lab.ui.lessons.calibration_view import calibration_views, confidence_choices
from decoding_lab.ui.lessons.lab import lab_views, outputs as lab_outputs
from decoding_lab.ui.lessons.parts import LessonsParts
from decoding_lab.ui.lessons.strings import tr


def lesson_lang(lang: str) -> str:
    """The lesson files' language key for the page's language."""
    return "zh" if norm_lang(lang) == "zh" else "en"


def picker_choices(lessons: list[Lesson], lang: str, passed: list[str] | None) -> list[tuple[str, int]]:
    ok = set(passed or [])
    return [(("✓ " if all(c.id in ok for c in les.checks) else "") + f"{les.number}. {les.title[lesson_lang(lang)]}",
             les.number) for les in lessons]


def screen_markdown(les: Lesson, lang: str, i: int) -> tuple[str, str]:
    """The title and screen ``i``'s text, and the "Screen i of n" counter."""
    lg = lesson_lang(lang)
    screens = les.screens(lg)
    i = clamp_screen(les, i)
    text = screens[i]
    if lg == "zh":   # Markdown shows a line break as a space; after a full-width mark Chinese wants none
        text = re.sub(r"(?<=[，。；：、）”！？])\n(?!\n)", "", text)
    return f"## {les.number}. {les.title[lg]}\n\n{text}", tr(lang, "screen", i=i + 1, n=len(screens))


def clamp_screen(les: Lesson, i: Any) -> int:
    try:
        i = int(i or 0)
    except (TypeError, ValueError):
        i = 0
    return max(0, min(i, len(les.screens("en")) - 1))


def ran_in(les: Lesson, runs: dict | None) -> set[str]:
    """The ids of ``les``'s experiments this learner has run (``runs`` is keyed "lesson/experiment")."""
    return {key.partition("/")[2] for key in (runs or {}) if key.partition("/")[0] == str(les.number)}


def look_markdown(les: Lesson, lang: str, screen: int = 0, runs: dict | None = None) -> str:
    """"What to look at" on ``screen``: the pointers that can no longer give a prediction away, and a
    line for each screen whose experiment still holds some back (empty when there is neither)."""
    lg = lesson_lang(lang)
    shown, waiting = les.pointers(screen, ran_in(les, runs))
    if not shown and not waiting:
        return ""
    lines = [f"- {item[lg]}" for item in shown]
    lines += [f"- *{tr(lang, 'look_wait_here') if s == screen + 1 else tr(lang, 'look_wait', s=s)}*"
              for s in waiting]
    return f"**{tr(lang, 'look')}**\n\n" + "\n".join(lines)


def look_views(ui: LessonsParts, les: Lesson, lang: str, screen: int, runs: dict | None, teacher: bool) -> dict:
    """The pointers' pane: hidden in teacher mode and when the screen has nothing to point at."""
    text = look_markdown(les, lang, screen, runs)
    return {ui.look: gr.update(value=text, visible=bool(text) and not teacher)}


def progress_markdown(lang: str, passed: list[str] | None, total: int) -> str:
    return tr(lang, "progress", done=len(set(passed or [])), total=total)


def loaded_message(lang: str, lesson: Lesson, tab_id: str) -> str:
    """The note under "Load this experiment" once the lesson's tab holds its preset."""
    return tr(lang, "loaded", title=lesson.title.get(lesson_lang(lang), lesson.title["en"]), tab=tr(lang, tab_id))


# ----------------------------------------------------------------------------- the screen's experiment
def guess_choices(exp: Experiment, lg: str) -> list[tuple[str, str]]:
    if exp.predict.kind == "value":
        return [(c[lg], str(c["value"])) for c in exp.predict.choices]
    return [(v.label[lg], v.key) for v in exp.variants]


def shown_value(exp: Experiment, value: Any, lg: str) -> str:
    if exp.predict.kind == "value":   # a token or a text: name it the way the choices do
        label = next((c[lg] for c in exp.predict.choices if str(c["value"]) == str(value)), None)
        return label or shown(str(value))
    return exp.formatted({"v": value})["v"] if isinstance(value, (int, float)) else shown(str(value))


def result_markdown(exp: Experiment, run: dict[str, Any], lang: str) -> str:
    """The learner's guess beside the live result, then the screen's reveal filled from the run."""
    lg = lesson_lang(lang)
    values, guess = run["values"], run.get("guess")
    if exp.predict.kind in ("min", "max"):
        nums = {k: v for k, v in values.items() if isinstance(v, (int, float))}
        best = (min if exp.predict.kind == "min" else max)(nums, key=nums.get)
        label = dict(guess_choices(exp, lg))
        names = {v: k for k, v in label.items()}
        live = names.get(best, best)
        guess_text = names.get(str(guess), str(guess))
    else:
        live = shown_value(exp, values.get(exp.predict.of), lg)
        guess_text = shown_value(exp, guess, lg) if exp.predict.kind == "value" else str(guess)
    # a sweep experiment reads a shipped file: no live model is involved, and the words say so
    file = "_file" if exp.reads_file else ""
    head = tr(lang, "result_head" + file, guess=guess_text, live=live)
    verdict = exp.predict.verdict(guess, values)
    line = (tr(lang, "pick_right" + file) if verdict else tr(lang, "pick_wrong" + file, live=live)) \
        if verdict is not None else \
        tr(lang, "number_diff" + file, guess=guess_text, live=live)
    reveal = exp.fill(exp.reveal[lg], values)
    note = tr(lang, "fallback", error=run["error"]) if run.get("error") else \
        f"*{tr(lang, 'took', s=run.get('seconds', 0.0), model=exp.model if not exp.reads_file else exp.file)}*"
    return f"{head}\n\n{line}\n\n{reveal}\n\n{texts_block(exp, run, lang, lg)}{note}"


def texts_block(exp: Experiment, run: dict[str, Any], lang: str, lg: str) -> str:
    """A decode experiment's texts, folded: the learner reads what greedy and the sample wrote."""
    texts = run.get("texts") or {}
    if not texts:
        return ""
    parts = []
    for v in exp.variants:
        if v.key in texts:
            body = html.escape(texts[v.key]).replace("\n", "<br>")
            parts.append(f"<p><b>{html.escape(v.label.get(lg, v.key))}</b></p><blockquote>{body}</blockquote>")
    return f"<details><summary>{tr(lang, 'texts')}</summary>\n\n{''.join(parts)}\n\n</details>\n\n"


def experiment_views(ui: LessonsParts, les: Lesson, lang: str, screen: int, runs: dict | None,
                     teacher: bool) -> dict:
    """The experiment block of ``screen``: hidden when the screen has none; with its run if there is one."""
    exp = les.experiment_on(screen)
    if exp is None:
        return {ui.exp: gr.update(visible=False), ui.exp_q: "", ui.guess: gr.update(visible=False, value=None),
                ui.guess_number: gr.update(visible=False, value=None), ui.exp_out: "",
                ui.exp_plot: gr.update(visible=False, value=None), ui.run: gr.update(value=tr(lang, "run")),
                ui.confidence: gr.update(visible=False, value=None),
                **lab_views(ui.lab, les, None, None, lang, teacher)}
    lg = lesson_lang(lang)
    run = (runs or {}).get(f"{les.number}/{exp.id}")
    number = exp.predict.kind == "number"
    guess = run.get("guess") if run else None
    return {
        ui.exp: gr.update(visible=True),
        ui.exp_q: tr(lang, "predict", question=exp.predict.question[lg]),
        ui.guess: gr.update(visible=not number, choices=[] if number else guess_choices(exp, lg),
                            value=None if number else guess, label=tr(lang, "your_guess")),
        ui.guess_number: gr.update(visible=number, value=guess if number else None, label=tr(lang, "your_guess")),
        # how sure: optional; a number counts as right within a quarter of the result (the label says so)
        ui.confidence: gr.update(visible=True, value=run.get("confidence") if run else None,
                                 label=tr(lang, "confidence_number" if number else "confidence")),
        ui.run: gr.update(value=tr(lang, "run_file" if exp.reads_file else "run")),
        ui.exp_out: result_markdown(exp, run, lang) if run else "",
        ui.exp_plot: gr.update(visible=bool(run), value=experiment_figure(exp, run, lang, lg, teacher) if run else None),
        **lab_views(ui.lab, les, exp, run, lang, teacher),
    }


# ----------------------------------------------------------------------------- everything at once
def outputs(ui: LessonsParts) -> list[Any]:
    """Every component ``views`` writes, in the order of the tab's events' outputs."""
    return [ui.picker, ui.progress, ui.glossary_box, ui.glossary, ui.side, ui.teacher, ui.text, ui.counter, ui.prev, ui.next, ui.look, ui.load,
            ui.loaded, ui.exp, ui.exp_q, ui.guess, ui.guess_number, ui.run, ui.exp_out, ui.exp_plot, ui.link,
            ui.confidence, ui.calib_line, ui.calib_box, ui.calib_text, ui.calib_plot,
            *lab_outputs(ui.lab), *C.outputs(ui)]


def views(ui: LessonsParts, lang: str, number: Any, screen: Any, passed: list[str] | None,
          learner: str | None = "", runs: dict | None = None, teacher: bool = False, calib: Any = None) -> dict:
    """Everything the tab shows for one lesson and screen, in one language (an unknown number shows
    the first lesson). In teacher mode the list, progress, pointers and set-up button hide; the
    checks show on the lesson's last screen in both modes."""
    les = ui.lessons.get(_number(number), ui.lessons[ui.order[0]])
    screen = clamp_screen(les, screen)
    text, counter = screen_markdown(les, lang, screen)
    last = len(les.screens(lesson_lang(lang))) - 1
    teacher = bool(teacher)
    return {
        ui.picker: gr.update(choices=picker_choices(list(ui.lessons.values()), lang, passed), value=les.number,
                             label=tr(lang, "pick")),
        ui.progress: progress_markdown(lang, passed, ui.total_checks),
        ui.glossary_box: gr.update(label=tr(lang, "glossary")),
        ui.glossary: glossary_markdown(lang),
        ui.side: gr.update(visible=not teacher),
        ui.teacher: gr.update(label=tr(lang, "teacher")),
        ui.text: text, ui.counter: counter,
        # at a lesson's ends the pager goes on into the next (or previous) lesson, and says so
        ui.prev: gr.update(value=tr(lang, "prev_lesson" if screen == 0 and les.number != ui.order[0] else "prev")),
        ui.next: gr.update(value=tr(lang, "next_lesson" if screen == last and les.number != ui.order[-1] else "next")),
        **look_views(ui, les, lang, screen, runs, teacher),
        ui.load: gr.update(value=tr(lang, "load"), visible=not teacher),
        ui.loaded: gr.update(value="", visible=not teacher),
        ui.link: f"lesson={les.number}&screen={screen}",     # the page writes it into the address bar
        **experiment_views(ui, les, lang, screen, runs, teacher),
        # the checks come after the lesson's last screen has been read, not beside its first
        # (in teacher mode too, in large type: the class answers one aloud, the teacher clicks it)
        **C.check_views(ui, les, lang, passed, learner, visible=screen == last),
        # the learner's calibration, when the caller has their records (a class's follower has not)
        **(calibration_views(ui, les, lang, screen, calib, teacher) if calib is not None else {}),
    }


def _number(number: Any) -> int | None:
    try:
        return int(number)
    except (TypeError, ValueError):
        return None
