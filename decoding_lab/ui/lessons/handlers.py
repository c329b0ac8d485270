"""The Lessons tab's own events: open a lesson, page through its screens (buttons or keys), switch
teacher mode, run a screen's experiment once a prediction is made, check an answer (progress kept in
the browser), and restore progress when the page loads. Loading a lesson's preset into another tab
is the page's (it calls that tab's ``fill``)."""

from __future__ import annotations

import functools
import secrets
from typing import Any, Callable

import gradio as gr

from decoding_lab import learner_calibration as LC
from decoding_lab import lesson_runs
from decoding_lab.errors import SettingsError
from decoding_lab.lessons import Lesson
from decoding_lab.ui.common.errors import guarded, warn
from decoding_lab.ui.common.sessions import SessionJobs
from decoding_lab.ui.common.tab import inputs_of, named
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.lessons import checks as C
from decoding_lab.ui.lessons.keys import PAGING_JS
from decoding_lab.ui.lessons.calibration_view import calibration_views
from decoding_lab.ui.lessons.lab import drawn as lab_drawn, outputs as lab_outputs
from decoding_lab.ui.lessons.parts import LessonSlot, LessonsParts
from decoding_lab.ui.lessons.strings import tr
from decoding_lab.ui.lessons.views import clamp_screen, experiment_views, lesson_lang, look_views, outputs, views
from decoding_lab.ui.common.scripts import script

#: Writes "lesson=3&screen=1" into the address bar when the Lessons tab is the one on show.
LINK_JS = script("lesson_link")


def lesson_of(ui: LessonsParts, lang: str, number: Any) -> Lesson:
    """The lesson numbered ``number`` (raises ``SettingsError`` for a number no lesson has)."""
    try:
        return ui.lessons[int(number)]
    except (KeyError, TypeError, ValueError):
        raise SettingsError(tr(lang, "no_lesson", number=number)) from None


def relabel(ui: LessonsParts, lang: str, number: Any, screen: Any, done: list[str] | None, learner: str | None,
            runs: dict | None, teacher: bool, calib: Any = None) -> dict:
    """The lesson on screen in ``lang``, with this browser's progress and calibration."""
    return views(ui, lang, number, screen, done, learner, runs, teacher, LC.clean(calib))


def state_inputs(ui: LessonsParts) -> list[Any]:
    """What ``relabel`` reads after the language: lesson, screen, progress, learner, runs, teacher mode,
    calibration records."""
    # the browser's copy of the calibration: a language switch on page load may run before the
    # session's own copy has been filled
    return [ui.current, ui.screen, ui.done, ui.learner, ui.runs, ui.teacher, ui.calib]


def neighbour_screen(ui: LessonsParts, les: Lesson, screen: int) -> tuple[Lesson, int]:
    """Where paging to ``screen`` of ``les`` lands: past the last screen, the next lesson's first;
    before the first, the previous lesson's last (so a teacher paging with the arrow keys goes on
    into the next lesson); at either end of the course it stays."""
    last = len(les.screens("en")) - 1
    at = ui.order.index(les.number)
    if screen > last and at + 1 < len(ui.order):
        return ui.lessons[ui.order[at + 1]], 0
    if screen < 0 and at > 0:
        before = ui.lessons[ui.order[at - 1]]
        return before, len(before.screens("en")) - 1
    return les, clamp_screen(les, screen)


def run_experiment(les: Lesson, screen: int, guess: Any, lang: str, runs: dict | None,
                   confidence: Any = None) -> tuple[dict | None, str]:
    """Run the screen's experiment for a learner who has predicted ``guess`` (and maybe said how sure
    they are); returns the new runs and a message (empty when it ran). A failed run shows the tested
    values, marked as such."""
    exp = les.experiment_on(screen)
    if exp is None:
        return None, ""
    if guess is None or guess == "":
        return None, tr(lang, "guess_first")
    run: dict[str, Any] = {"guess": guess, "confidence": LC.confidence_of(confidence)}
    try:
        result = lesson_runs.run(exp)
        run.update(values=result.values, top=result.top, tops=result.tops, curves=result.curves,
                   texts=result.texts, seconds=result.seconds)
        if result.lab_step is not None:   # the step the lab re-runs (this session's state, never the browser's)
            run["lab_step"] = result.lab_step
    except Exception as e:  # noqa: BLE001 - any failure falls back to the tested values, said so on screen
        run.update(values=dict(exp.expect), top=[], tops={}, seconds=0.0, error=str(e).splitlines()[0][:200])
    return {**(runs or {}), f"{les.number}/{exp.id}": run}, ""


def number(value: Any, name: str) -> float:
    """A control's value as a finite number, or a one-line refusal naming the control.

    >>> number("0.7", "T"), number(None, "T")
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: T must be a number, got None
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be a number, got {value!r:.40}") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise SettingsError(f"{name} must be a finite number, got {value!r:.40}")
    return x


def wire_lab(ui: LessonsParts, common: dict[str, Any]) -> dict[str, Any]:
    """The lab's controls: a slider answers when released, the order when picked; each redraws the
    lab from the session's run of the screen's experiment (no model call)."""
    lab = ui.lab

    @guarded
    def on_lab(v: dict[str, Any]) -> dict:
        lang, les = v["lang"], lesson_of(ui, v["lang"], v["number"])
        exp = les.experiment_on(clamp_screen(les, v["screen"]))
        run = (v["runs"] or {}).get(f"{les.number}/{exp.id}") if exp is not None else None
        if exp is None or not exp.lab or not run:    # nothing to redraw: the lab is hidden anyway
            return {lab.plot: gr.update(), lab.bars: gr.update(), lab.stats: gr.update()}
        return lab_drawn(lab, exp, run, lang, bool(v["teacher"]), number(v["lab_t"], "T"),
                         number(v["lab_x"], "top-p" if exp.lab == "cuts" else "k"), str(v["lab_order"]))

    inputs, names = inputs_of({**common, "lab_t": lab.t, "lab_x": lab.x, "lab_order": lab.pick})
    outs = [lab.plot, lab.bars, lab.stats]
    fn = named(kept_shape(on_lab), names)
    return {"lab_t": lab.t.release(fn, inputs, outs, api_name="lesson_lab", trigger_mode="always_last"),
            "lab_x": lab.x.release(fn, inputs, outs, api_visibility="private", trigger_mode="always_last"),
            "lab_order": lab.pick.input(fn, inputs, outs, api_visibility="private", trigger_mode="always_last")}


def _text(value: Any, limit: int = 64) -> bool:
    if not isinstance(value, str) or len(value) > limit:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:     # a lone surrogate could not be sent back to the page
        return False
    return True


def clean_state(v: dict[str, Any]) -> dict[str, Any]:
    """What the browser keeps for the lessons (the checks passed, the learner's shuffle seed, past
    runs) arrives as the browser, or an API caller, sent it: keep what has the right shape, and
    start afresh from what has not (a number for the progress raised TypeError behind a bare
    'Error').

    >>> clean_state({"done": 3.5, "learner": ["x"], "runs": "no"})
    {'done': [], 'learner': '', 'runs': {}}
    >>> clean_state({"done": ["1.1", 7, "a\\udcff"], "learner": "ab12"})
    {'done': ['1.1'], 'learner': 'ab12'}
    """
    out = dict(v)
    if "done" in out:
        done = out["done"]
        out["done"] = [d for d in done if _text(d)][:1000] if isinstance(done, list) else []
    if "learner" in out:
        out["learner"] = out["learner"] if _text(out["learner"]) else ""
    if "runs" in out and not isinstance(out["runs"], dict):
        out["runs"] = {}
    for key in ("calib", "calib_saved"):
        if key in out:
            out[key] = LC.clean(out[key])
    return out


def kept_shape(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """``fn`` given the browser's state through ``clean_state``."""
    @functools.wraps(fn)
    def call(v: dict[str, Any]) -> Any:
        return fn(clean_state(v))
    return call


def wire(ui: LessonsParts, lang_state: Any, page: Any = None, jobs: SessionJobs | None = None) -> dict[str, Any]:
    """Tab-local events; with ``page`` (the ``gr.Blocks``) also the progress restore on page load."""
    outs = outputs(ui)
    events: dict[str, Any] = {}
    common = {"lang": lang_state, "number": ui.current, "screen": ui.screen, "done": ui.done,
              "learner": ui.learner, "runs": ui.runs, "teacher": ui.teacher, "calib": ui.calib_now}

    def show(v: dict[str, Any], **over: Any) -> dict:
        w = {**v, **over}
        return views(ui, w["lang"], w["number"], w["screen"], w["done"], w["learner"], w["runs"], w["teacher"],
                     w["calib"])

    @guarded
    def on_pick(v: dict[str, Any]) -> dict:
        les = lesson_of(ui, v["lang"], v["pick"])
        return {ui.current: les.number, ui.screen: 0, **show(v, number=les.number, screen=0)}

    inputs, names = inputs_of({**common, "pick": ui.picker})
    events["open"] = ui.picker.input(named(kept_shape(on_pick), names), inputs, [ui.current, ui.screen, *outs],
                                     api_name="lesson_open")

    inputs, names = inputs_of(common)
    # a visitor's click only: teacher mode set by a link as the page opens is drawn by the link's
    # restore, and a redraw started beside it could read the lesson from before it and land after it
    events["teacher"] = ui.teacher.input(named(kept_shape(show), names), inputs, outs, api_visibility="private")

    def move(delta: int):
        @guarded
        def on_move(v: dict[str, Any]) -> dict:
            les = lesson_of(ui, v["lang"], v["number"])
            les, screen = neighbour_screen(ui, les, clamp_screen(les, v["screen"]) + delta)
            return {ui.current: les.number, ui.screen: screen, **show(v, number=les.number, screen=screen)}
        return on_move

    for btn, delta, name in ((ui.prev, -1, "lesson_prev"), (ui.next, 1, "lesson_next")):
        # a key held or pressed twice quickly: run the latest press after the current one, never drop it
        events[name] = btn.click(named(kept_shape(move(delta)), names), inputs, [ui.current, ui.screen, *outs],
                                 api_name=name,
                                 trigger_mode="always_last")

    def on_run(v: dict[str, Any]) -> dict:
        lang, les = v["lang"], lesson_of(ui, v["lang"], v["number"])
        exp = les.experiment_on(clamp_screen(les, v["screen"]))
        guess = v["guess_number"] if exp is not None and exp.predict.kind == "number" else v["guess"]
        runs, msg = run_experiment(les, clamp_screen(les, v["screen"]), guess, lang, v["runs"], v["confidence"])
        if runs is None:
            return {ui.runs: v["runs"] or {}, ui.exp_out: msg}
        screen = clamp_screen(les, v["screen"])
        run = runs[f"{les.number}/{exp.id}"]
        right = LC.number_right(guess, run["values"].get(exp.predict.of)) if exp.predict.kind == "number" \
            else exp.predict.verdict(guess, run["values"])
        calib = LC.record(v["calib"], f"{les.number}/{exp.id}", run["confidence"], right)
        # the run reveals the result: the pointers that waited for it can show now
        return {ui.runs: runs, ui.calib: calib, ui.calib_now: calib, **experiment_views(ui, les, lang, screen, runs, v["teacher"]),
                **look_views(ui, les, lang, screen, runs, v["teacher"]),
                **calibration_views(ui, les, lang, screen, calib, v["teacher"])}

    run_outs = [ui.runs, ui.exp, ui.exp_q, ui.guess, ui.guess_number, ui.run, ui.exp_out, ui.exp_plot, ui.look,
                ui.confidence, ui.calib, ui.calib_now, ui.calib_line, ui.calib_box, ui.calib_text, ui.calib_plot,
                *lab_outputs(ui.lab)]
    inputs, names = inputs_of({**common, "guess": ui.guess, "guess_number": ui.guess_number,
                               "confidence": ui.confidence})
    events["run"] = ui.run.click(model_event(kept_shape(on_run), names, jobs), inputs, run_outs, api_name="lesson_run",
                                 concurrency_id="model")

    events.update(wire_lab(ui, common))

    for i, slot in enumerate(ui.slots):
        def on_check(v: dict[str, Any], i: int = i, slot: LessonSlot = slot) -> dict:
            lang, les = v["lang"], lesson_of(ui, v["lang"], v["number"])
            if i >= len(les.checks):
                return {slot.feedback: "", ui.done: v["done"] or [], ui.progress: gr.update(), ui.picker: gr.update()}
            msg, done = C.answer(les, i, v["choice"], lang, v["done"])
            full = views(ui, lang, les.number, v["screen"], done, v["learner"], v["runs"], v["teacher"])
            return {slot.feedback: msg, ui.done: done, ui.progress: full[ui.progress], ui.picker: full[ui.picker]}

        inputs, names = inputs_of({**common, "choice": slot.answer})
        events[f"check_{i}"] = slot.check.click(named(kept_shape(guarded(on_check)), names), inputs,
                                                [slot.feedback, ui.done, ui.progress, ui.picker],
                                                api_name=f"lesson_check_{i + 1}")

    if page is not None:  # progress kept in the browser comes back when the page opens; paging keys
        def on_restore(v: dict[str, Any]) -> dict:
            """Runs once the page has read its link (``link_in`` = "lesson:screen:nonce", set on
            every load): the progress kept in this browser, and the linked lesson and screen."""
            learner = v["learner"] or secrets.token_hex(6)   # a first visit: a new shuffle seed
            lesson, _, rest = str(v["link"] or "").partition(":")
            screen = rest.partition(":")[0]
            number, at = v["number"], v["screen"]
            if lesson.isdigit() and int(lesson) in ui.lessons:
                number = int(lesson)
                at = clamp_screen(ui.lessons[number], int(screen) if screen.isdigit() else 0)
                if screen.isdigit() and at != int(screen):   # a screen the lesson does not have
                    warn(tr(v["lang"], "no_screen", screen=int(screen) + 1, number=number, last=at + 1), v["lang"])
            elif lesson:
                warn(tr(v["lang"], "no_lesson", number=lesson[:12]), v["lang"])
            return {ui.learner: learner, ui.current: number, ui.screen: at,
                    **show(v, learner=learner, number=number, screen=at)}

        inputs, names = inputs_of({**common, "link": ui.link_in})
        events["restore"] = ui.link_in.change(named(kept_shape(on_restore), names), inputs,
                                              [ui.learner, ui.current, ui.screen, *outs],
                                              api_name="lesson_restore_progress")
        # the learner's calibration records come from the browser when the page has loaded them (the
        # documented moment for a gr.BrowserState: the page's load event; the link's restore can run
        # before), for this session's events; drawn for the lesson and screen on show by then
        def on_calib(v: dict[str, Any]) -> dict:
            les = lesson_of(ui, v["lang"], v["number"])
            calib = LC.clean(v["calib_saved"])
            return {ui.calib_now: calib, **calibration_views(ui, les, v["lang"], clamp_screen(les, v["screen"]), calib,
                                                             bool(v["teacher"]))}

        inputs, names = inputs_of({"lang": lang_state, "number": ui.current, "screen": ui.screen,
                                   "teacher": ui.teacher, "calib_saved": ui.calib})
        calib_outs = [ui.calib_now, ui.calib_line, ui.calib_box, ui.calib_text, ui.calib_plot]
        page.load(named(kept_shape(guarded(on_calib)), names), inputs, calib_outs, api_visibility="private")
        # the page is ready for a learner's clicks once this has drawn (browser tests wait for it)
        events["restore"].then(None, None, None, js="() => { window.dlLessonsReady = true; return []; }")
        page.load(None, None, None, js=PAGING_JS)
        # the lesson and screen on show go into the address bar while the Lessons tab is open
        ui.link.change(None, [ui.link], None, js=LINK_JS)
    return events


__all__ = ["wire", "relabel", "state_inputs", "lesson_of", "run_experiment", "lesson_lang"]
