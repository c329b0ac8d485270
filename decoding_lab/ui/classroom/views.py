"""What the class room shows: the join card (code, QR code, link), the class's answers as a
chart with one colour per round, the teacher's panel and a student's panel, each from a copy of
the room (``RoomHall.view``). Nothing here changes a room."""

from __future__ import annotations

import html
import random
from typing import Any

import gradio as gr
import plotly.graph_objects as go
import segno

from decoding_lab.classroom import format_code
from decoding_lab.classroom.questions import Question, right_after_run
from decoding_lab.classroom.tally import Tally, rounds_of
from decoding_lab.lessons import Lesson
from decoding_lab.ui.classroom.parts import StudentPanel, TeacherPanel
from decoding_lab.ui.classroom.strings import tr
from decoding_lab.ui.lessons import checks as C
from decoding_lab.ui.lessons.figures import experiment_figure
from decoding_lab.ui.lessons.views import lesson_lang, result_markdown, shown_value

ROUND_COLOURS = ("#2563eb", "#f97316", "#16a34a")
#: A choice's label on the chart is cut to this many characters (the full text is on the screen).
LABEL_CHARS = 38


def join_link(base: Any, code: str) -> str:
    """The link a student opens: the page's address (as the teacher's browser saw it) with
    ``?room=CODE``. An address that is not a plain http(s) one is left out (the code alone works).

    >>> join_link("https://x.hf.space/", "K7M29QXP"), join_link("javascript:alert(1)", "K7M29QXP")
    ('https://x.hf.space/?room=K7M2-9QXP', '?room=K7M2-9QXP')
    """
    b = base if isinstance(base, str) and base.startswith(("http://", "https://")) and len(base) < 300 else ""
    b = b.split("?")[0].split("#")[0]
    return f"{b}?room={format_code(code)}"


def join_card(code: str, link: str, lang: str) -> str:
    """The code in projection-size type, the QR code of the link (``segno``, an SVG) and the link."""
    qr = segno.make(link, error="m").svg_data_uri(scale=6, border=2)
    shown = html.escape(link)
    return (f'<div class="class-card"><img class="class-qr" alt="QR code: {shown}" src="{qr}">'
            f'<div><p class="class-join-at">{tr(lang, "join_at", link=shown).replace("**", "")}</p>'
            f'<p class="class-code" id="class-code-shown">{html.escape(format_code(code))}</p></div></div>')


def choice_label(q: Question, i: int, lg: str) -> str:
    text = q.label(i, lg)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def student_order(q: Question, learner: str) -> list[int]:
    """A choice question's order for one student (a seeded shuffle, as the lesson's own checks)."""
    idx = list(range(len(q.choices)))
    random.Random(f"{learner}/{q.key}").shuffle(idx)
    return idx


def answers_figure(q: Question, tallies: list[Tally], lang: str, right: int | None = None,
                   live: float | None = None) -> go.Figure:
    """The class's answers: bars per choice (one colour per round, side by side; the right
    choice's label marked once revealed), or each round's numbers as points with their median."""
    lg = lesson_lang(lang)
    fig = go.Figure()
    if q.kind == "choice":
        labels = [("✔ " if right == i else "") + choice_label(q, i, lg) for i in range(len(q.choices))]
        for r, t in enumerate(tallies, start=1):
            fig.add_bar(x=labels, y=t.counts, name=tr(lang, "round_label", r=r), text=t.counts,
                        textposition="outside", marker_color=ROUND_COLOURS[(r - 1) % len(ROUND_COLOURS)])
        fig.update_layout(barmode="group", yaxis_title=tr(lang, "count"))
        top = max([max(t.counts, default=0) for t in tallies] + [1])
        fig.update_yaxes(range=[0, top * 1.25 + 0.5], dtick=max(1, round(top / 5)))
    else:
        for r, t in enumerate(tallies, start=1):
            name = tr(lang, "round_label", r=r)
            if t.n and t.quartiles is not None:
                name += " · " + tr(lang, "median", m=f"{t.median:.3g}", a=f"{t.quartiles[0]:.3g}",
                                   b=f"{t.quartiles[1]:.3g}")
            fig.add_box(x=t.values, name=name, boxpoints="all", jitter=0.4, pointpos=0, orientation="h",
                        marker_color=ROUND_COLOURS[(r - 1) % len(ROUND_COLOURS)])
        if live is not None:
            fig.add_vline(x=live, line_dash="dash", annotation_text=tr(lang, "live_line", v=f"{live:.3g}"))
        fig.update_layout(showlegend=False)
    # the projector's chart: type that reads from the back of the room
    fig.update_layout(title=dict(text=tr(lang, "plot_title"), font=dict(size=24)), height=460,
                      font=dict(size=20), margin=dict(l=60, r=20, t=70, b=60),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


def _question_text(q: Question, lang: str) -> str:
    return q.text.get(lesson_lang(lang)) or q.text.get("en", "")


def _lesson_of(lessons: dict[int, Lesson], q: Question) -> Lesson | None:
    return lessons.get(q.lesson)


def _check_of(les: Lesson | None, q: Question):
    if les is None or not q.key.startswith("check:"):
        return None
    return next((c for c in les.checks if c.id == q.key.partition(":")[2]), None)


def right_of(lessons: dict[int, Lesson], q: Question, revealed: dict[str, Any] | None) -> int | None:
    """The right choice once shown: a check's at its reveal, a prediction's from the revealed run."""
    if revealed is None:
        return None
    les = _lesson_of(lessons, q)
    return right_after_run(les, q, revealed.get("values")) if les is not None else q.right


# ---------------------------------------------------------------------------- words on the controls
def label_outputs(tp: TeacherPanel, sp: StudentPanel) -> list[Any]:
    """The components whose words ``labels`` sets (the language switch redraws them)."""
    return [tp.open, tp.join_box, tp.who_box, tp.asked, tp.next_round, tp.reveal, tp.csv, tp.close, sp.join_box,
            sp.code, sp.nick, sp.join, sp.choice, sp.number, sp.confidence, sp.send, sp.leave]


def labels(tp: TeacherPanel, sp: StudentPanel, lang: str) -> dict:
    """Every fixed word of both panels in ``lang`` (values and choices untouched)."""
    return {tp.open: gr.update(value=tr(lang, "open")), tp.join_box: gr.update(label=tr(lang, "join_box")),
            tp.who_box: gr.update(label=tr(lang, "who")), tp.asked: gr.update(label=tr(lang, "asked")),
            tp.next_round: gr.update(value=tr(lang, "round")), tp.reveal: gr.update(value=tr(lang, "reveal")),
            tp.csv: gr.update(value=tr(lang, "csv")), tp.close: gr.update(value=tr(lang, "close")),
            sp.join_box: gr.update(label=tr(lang, "join")),
            sp.code: gr.update(label=tr(lang, "code"), placeholder=tr(lang, "code_ph")),
            sp.nick: gr.update(label=tr(lang, "nick")), sp.join: gr.update(value=tr(lang, "join_btn")),
            sp.choice: gr.update(label=tr(lang, "your_answer")), sp.number: gr.update(label=tr(lang, "your_answer")),
            sp.confidence: gr.update(label=tr(lang, "confidence"),
                                     choices=[(tr(lang, f"conf_{i}"), i) for i in (1, 2, 3)]),
            sp.send: gr.update(value=tr(lang, "send")), sp.leave: gr.update(value=tr(lang, "leave"))}


# ---------------------------------------------------------------------------- the teacher
def teacher_views(tp: TeacherPanel, room: Any, lang: str, lessons: dict[int, Lesson]) -> dict:
    """The teacher's panel for an open room (``room``: a copy), or closed (``room`` None)."""
    if room is None:
        return {tp.open: gr.update(visible=True), tp.join_box: gr.update(visible=False), tp.info: "",
                tp.count: "", tp.who_box: gr.update(visible=False), tp.who: "",
                tp.asked: gr.update(visible=False, choices=[], value=None), tp.plot: gr.update(visible=False),
                tp.result: "", tp.figure: gr.update(visible=False, value=None), tp.buttons: gr.update(visible=False)}
    n = len(room.students)
    nicks = sorted({name for name in room.students.values() if name})
    qs = list(room.questions.values())
    out = {tp.open: gr.update(visible=False), tp.join_box: gr.update(visible=True, label=tr(lang, "join_box")),
           tp.count: (tr(lang, "students_one") if n == 1 else tr(lang, "students", n=n))
           + " · " + tr(lang, "code_line", code=format_code(room.code)),
           tp.who_box: gr.update(visible=True, label=tr(lang, "who")), tp.who: ", ".join(nicks) if nicks else tr(lang, "who_none"),
           tp.asked: gr.update(visible=bool(qs), label=tr(lang, "asked"), choices=[(_short(_question_text(q, lang)), q.key) for q in qs],
                               value=room.asked),
           tp.buttons: gr.update(visible=True), tp.csv: gr.update(value=tr(lang, "csv")),
           tp.close: gr.update(value=tr(lang, "close"))}
    q = room.questions.get(room.asked) if room.asked else None
    if q is None:
        out.update({tp.plot: gr.update(visible=False), tp.result: tr(lang, "no_questions"),
                    tp.figure: gr.update(visible=False, value=None),
                    tp.next_round: gr.update(interactive=False), tp.reveal: gr.update(interactive=False)})
        return out
    revealed = room.revealed.get(q.key)
    tallies = rounds_of(room, q.key)
    right = right_of(lessons, q, revealed)
    live = _live_number(lessons, q, revealed)
    out.update({tp.plot: gr.update(visible=True, value=answers_figure(q, tallies, lang, right, live)),
                tp.next_round: gr.update(interactive=len(tallies) < 3,
                                         value=tr(lang, "round_n", n=len(tallies) + 1) if len(tallies) > 1
                                         else tr(lang, "round")),
                tp.reveal: gr.update(interactive=True, value=tr(lang, "reveal_run" if q.key.startswith("predict:")
                                                                 else "reveal")),
                **_teacher_result(tp, q, tallies, revealed, right, lang, lessons)})
    return out


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.replace("**", "").split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _live_number(lessons: dict[int, Lesson], q: Question, revealed: dict[str, Any] | None) -> float | None:
    if revealed is None or q.kind != "number":
        return None
    les = _lesson_of(lessons, q)
    exp = les.experiment_on(q.screen) if les else None
    value = (revealed.get("values") or {}).get(exp.predict.of) if exp else None
    return float(value) if isinstance(value, (int, float)) else None


def _teacher_result(tp: TeacherPanel, q: Question, tallies: list[Tally], revealed: dict[str, Any] | None,
                    right: int | None, lang: str, lessons: dict[int, Lesson]) -> dict:
    heads = " · ".join(tr(lang, "answers_head", r=r, n=t.n) for r, t in enumerate(tallies, start=1))
    if revealed is None:
        return {tp.result: heads, tp.figure: gr.update(visible=False, value=None)}
    lg = lesson_lang(lang)
    last, r = tallies[-1], len(tallies)
    les = _lesson_of(lessons, q)
    check = _check_of(les, q)
    if check is not None:
        text = tr(lang, "class_right", label=q.label(right, lg), r=r, k=last.counts[right], n=last.n) + \
            "\n\n" + check.choices[right].why[lg]
        return {tp.result: f"{heads}\n\n{text}", tp.figure: gr.update(visible=False, value=None)}
    exp = les.experiment_on(q.screen) if les else None
    if exp is None:
        return {tp.result: heads, tp.figure: gr.update(visible=False, value=None)}
    values = revealed.get("values") or {}
    live = shown_value(exp, values.get(exp.predict.of), lg) if exp.predict.kind in ("value", "number") else \
        q.label(right, lg) if right is not None else ""
    if q.kind == "number":
        head = tr(lang, "class_number", live=live, m=f"{last.median:.3g}" if last.n else "–", r=r, n=last.n)
        guess: Any = last.median
    elif right is not None:
        head = tr(lang, "class_right", label=q.label(right, lg), r=r, k=last.counts[right], n=last.n)
        guess = q.values[max(range(len(last.counts)), key=last.counts.__getitem__)] if last.n else None
    else:
        head, guess = tr(lang, "class_model", live=live), None
    text = f"{heads}\n\n{head}\n\n{exp.fill(exp.reveal[lg], values)}"
    run = {**revealed, "guess": guess}
    try:
        fig = experiment_figure(exp, run, lang, lg, teacher=True)
    except Exception:  # noqa: BLE001 - a picture that cannot be drawn leaves the words
        fig = None
    return {tp.result: text, tp.figure: gr.update(visible=fig is not None, value=fig)}


# ---------------------------------------------------------------------------- a student
def student_views(sp: StudentPanel, room: Any, member: str, lang: str, lessons: dict[int, Lesson],
                  learner: str) -> dict:
    """A student's panel: the asked question and their answer, or, once revealed, the result
    beside their answer; ``room`` None: the class has ended."""
    if room is None:
        return {sp.box: gr.update(visible=True), sp.head: tr(lang, "ended"), sp.question: "",
                sp.choice: gr.update(visible=False), sp.number: gr.update(visible=False),
                sp.confidence: gr.update(visible=False), sp.send: gr.update(visible=False), sp.status: "",
                sp.leave: gr.update(visible=False), sp.join_box: gr.update(visible=True)}
    lg = lesson_lang(lang)
    head = tr(lang, "joined", code=format_code(room.code))
    out = {sp.box: gr.update(visible=True), sp.head: head, sp.leave: gr.update(visible=True),
           sp.join_box: gr.update(visible=False)}
    q = room.questions.get(room.asked) if room.asked else None
    if q is None:
        out.update({sp.question: tr(lang, "wait"), sp.choice: gr.update(visible=False, value=None),
                    sp.number: gr.update(visible=False, value=None), sp.confidence: gr.update(visible=False),
                    sp.send: gr.update(visible=False), sp.status: ""})
        return out
    rounds = room.rounds.get(q.key, [{}])
    mine = rounds[-1].get(member)
    r = len(rounds)
    revealed = room.revealed.get(q.key)
    open_ = revealed is None
    question = f"**{_question_text(q, lang)}**"
    if r > 1 and open_:
        question = tr(lang, "round_open", r=r) + "\n\n" + question
    choice = q.kind == "choice"
    out.update({
        sp.question: question,
        sp.choice: gr.update(visible=choice, interactive=open_, label=tr(lang, "your_answer"),
                             choices=[(q.label(i, lg), i) for i in student_order(q, learner)] if choice else [],
                             value=int(mine.value) if (choice and mine) else None),
        sp.number: gr.update(visible=not choice, interactive=open_, label=tr(lang, "your_answer"),
                             value=mine.value if (mine and not choice) else None),
        sp.confidence: gr.update(visible=open_, choices=[(tr(lang, f"conf_{i}"), i) for i in (1, 2, 3)],
                                 label=tr(lang, "confidence"), value=mine.confidence if mine else None),
        sp.send: gr.update(visible=open_, value=tr(lang, "send")),
        sp.status: sent_line(q, mine.value, r, lang) if (mine and open_) else "",
    })
    if not open_:
        # the student's last answer in any round, beside the result
        last = next((rd[member] for rd in reversed(rounds) if member in rd), None)
        out[sp.status] = revealed_line(q, last, revealed, lang, lessons)
    return out


def answer_text(q: Question, value: Any, lg: str) -> str:
    return q.label(int(value), lg) if q.kind == "choice" else f"{float(value):g}"


def sent_line(q: Question, value: Any, r: int, lang: str) -> str:
    return tr(lang, "sent", a=html.escape(answer_text(q, value, lesson_lang(lang))), r=r)


def revealed_line(q: Question, mine: Any, revealed: dict[str, Any], lang: str, lessons: dict[int, Lesson]) -> str:
    """After the reveal: the student's answer beside the result, with the lesson's own words."""
    lg = lesson_lang(lang)
    les = _lesson_of(lessons, q)
    check = _check_of(les, q)
    if check is not None:
        if mine is None:
            return tr(lang, "no_answer") + "\n\n" + C.feedback(check, check.answer, lang)
        return C.feedback(check, int(mine.value), lang)
    exp = les.experiment_on(q.screen) if les else None
    if exp is None:
        return ""
    guess = None if mine is None else (q.values[int(mine.value)] if q.kind == "choice" else mine.value)
    if guess is None:
        return tr(lang, "no_answer") + "\n\n" + exp.fill(exp.reveal[lg], revealed.get("values") or {})
    return result_markdown(exp, {**revealed, "guess": guess}, lang)
