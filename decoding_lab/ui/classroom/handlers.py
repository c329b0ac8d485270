"""The class room's events.

The teacher (teacher mode): "Open a class" makes a room and shows its code, QR code and link;
from then on every screen the teacher pages to is pushed to the room, and its first question is
asked (another can be picked); "Second round" opens a new vote; "Reveal" runs the screen's
experiment once (a model event, in the model queue) or shows a check's answer; "Download" writes
the counts as CSV; "Close" forgets the room.

A student: "Join" (or a join link, ``?room=CODE``) puts the tab in the room; "Send" records an
answer to the question the panel shows; "Leave" takes the tab out.

**Following without polling the server.** Each joined tab, and the teacher's, runs one *async*
generator event (``follow``) for as long as it is in the room: it reads the room's version in
this process every ``POLL_S`` seconds (a dictionary lookup, no request) and sends an update only
when something changed. A class of 40 is 41 open event streams, not 40 requests every second or
two, and it holds no worker thread (async generators run on gradio's event loop), no queue place
and no model slot (``concurrency_limit=None``, outside the model queue).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import gradio as gr

from decoding_lab import lesson_runs
from decoding_lab.classroom import RoomError, RoomHall, parse_code, questions_on, to_csv
from decoding_lab.classroom.questions import right_after_run
from decoding_lab.errors import UserError
from decoding_lab.ui.classroom import views as CV
from decoding_lab.ui.classroom.languages import SessionLanguages
from decoding_lab.ui.classroom.parts import ClassParts, StudentPanel, TeacherPanel
from decoding_lab.ui.classroom.strings import tr
from decoding_lab.ui.common.errors import localised, plain
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.export import write_text
from decoding_lab.ui.common.sessions import SessionJobs, client_of
from decoding_lab.ui.lessons.parts import LessonsParts
from decoding_lab.ui.lessons.views import clamp_screen, outputs as lesson_outputs, views as lesson_views

#: How often a follower reads its room's version (in this process; no request is made).
POLL_S = 0.5
#: The page's address as the teacher's browser sees it, passed as the "base" input of "Open".
BASE_JS = "(...args) => { args[1] = window.location.origin + window.location.pathname; return args; }"


def refusal(e: BaseException, lang: str) -> str:
    """A room's refusal as one escaped line, in the visitor's language."""
    return f"⚠ {plain(localised(e, lang))}"


def _session(request: Any) -> str | None:
    """The gradio session of a request (None for a call that has none)."""
    return getattr(request, "session_hash", None) or None


def note_language(langs: SessionLanguages):
    """The handler that notes a page's language in ``langs`` (chained after the language switch's
    redraw of the lesson, so a follower's redraw in the new language comes after it)."""
    def note(lang: str, request: gr.Request) -> None:
        langs.set(_session(request), str(lang))
    return note


def _unique(components: list[Any]) -> list[Any]:
    seen: set[int] = set()
    return [c for c in components if not (id(c) in seen or seen.add(id(c)))]


def kept(value: Any, keys: tuple[str, ...]) -> dict[str, str]:
    """What the browser kept for a class, as the browser (or an API caller) sent it: a dict of
    short strings under ``keys``, or nothing.

    >>> kept({"code": "K7M29QXP", "id": "ab", "x": 1}, ("code", "id")), kept(["x"], ("code",))
    ({'code': 'K7M29QXP', 'id': 'ab'}, {})
    >>> kept({"code": 5, "id": "ab"}, ("code", "id"))
    {}
    """
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and len(value[k]) <= 400 for k in keys):
        return {}
    return {k: value[k] for k in keys}


TEACHER_KEYS = ("code", "secret", "link")
MEMBER_KEYS = ("code", "id")


def teacher_outputs(tp: TeacherPanel) -> list[Any]:
    return [tp.open, tp.join_box, tp.info, tp.count, tp.who_box, tp.who, tp.asked, tp.plot, tp.result, tp.figure,
            tp.buttons, tp.next_round, tp.reveal, tp.csv, tp.close]


def student_outputs(sp: StudentPanel) -> list[Any]:
    return [sp.box, sp.head, sp.question, sp.choice, sp.number, sp.confidence, sp.send, sp.status, sp.leave,
            sp.join_box]


def wire(ui: LessonsParts, cp: ClassParts, lang_state: Any, jobs: SessionJobs | None,
         lesson_events: dict[str, Any], langs: SessionLanguages | None = None) -> dict[str, Any]:
    """Every event of the class room; ``lesson_events``: the Lessons tab's own (paging pushes);
    ``langs``: the language each page shows now (``note_language`` writes it, after the page's
    language switch has redrawn the lesson)."""
    hall: RoomHall = cp.hall
    tp, sp = cp.teacher, cp.student
    lessons = ui.lessons
    t_outs = [*teacher_outputs(tp), ui.exp]
    events: dict[str, Any] = {}
    # the language each page shows now: a follower started before a switch draws in the new one
    langs = langs if langs is not None else SessionLanguages()

    def room_view(code: str) -> Any:
        try:
            return hall.view(code)
        except RoomError:
            return None

    def teacher_draw(lang: str, room: dict) -> dict:
        view = room_view(room["code"]) if room.get("code") else None
        out = CV.teacher_views(tp, view, lang, lessons)
        if view is not None:   # the class answers the screen's question: the teacher's lone Run waits
            out[ui.exp] = gr.update(visible=False)
        return out

    # ------------------------------------------------------------------ the teacher
    ui.teacher.change(lambda on: gr.update(visible=bool(on)), [ui.teacher], [tp.box], queue=False,
                      api_visibility="private")

    def push(room: dict, number: Any, screen: Any) -> None:
        les = lessons.get(int(number)) if str(number).isdigit() else None
        if les is None:
            return
        at = clamp_screen(les, screen)
        hall.push(room["code"], room["secret"], les.number, at, questions_on(les, at))

    def on_open(lang: str, base: str, number: Any, screen: Any, room: Any) -> dict:
        room = kept(room, TEACHER_KEYS)
        if room.get("code") and hall.versions(room["code"]) is not None:   # already open: draw it again
            return {tp.room: room, tp.msg: "", **teacher_draw(lang, room)}
        try:
            new = hall.open()
        except RoomError as e:
            return {tp.room: {}, tp.msg: refusal(e, lang), **CV.teacher_views(tp, None, lang, lessons)}
        room = {"code": new.code, "secret": new.secret, "link": CV.join_link(base, new.code)}
        push(room, number, screen)
        return {tp.room: room, tp.info: CV.join_card(new.code, room["link"], lang),
                tp.msg: tr(lang, "opened", code=new.shown_code), **teacher_draw(lang, room)}

    open_ev = tp.open.click(on_open, [lang_state, tp.base, ui.current, ui.screen, tp.room],
                            [tp.room, tp.info, tp.msg, *t_outs], js=BASE_JS, api_name="class_open")

    async def teacher_follow(lang: str, room: Any, request: gr.Request):
        """The projector's live view: redrawn whenever an answer, a join or a click changed the room,
        or the page's language."""
        session = _session(request)
        lang = langs.get(session, lang)
        room = kept(room, TEACHER_KEYS)
        code = room.get("code")
        if not code:
            return
        if not hall.follow_start():
            yield {tp.msg: tr(lang, "followers_full", n=hall.limits.followers)}
            return
        try:
            seen = None
            while True:
                now = hall.versions(code)
                if now is None:
                    yield {tp.room: {}, tp.msg: tr(lang, "closed"), **CV.teacher_views(tp, None, lang, lessons)}
                    return
                if now != seen or langs.get(session, lang) != lang:
                    seen, lang = now, langs.get(session, lang)
                    yield teacher_draw(lang, room)
                await asyncio.sleep(POLL_S)
        finally:
            hall.follow_end()

    follow_t = open_ev.then(teacher_follow, [lang_state, tp.room], [tp.room, tp.msg, *t_outs],
                            concurrency_limit=None, api_visibility="private", show_progress="hidden")
    events["class_open"], events["class_teacher_follow"] = open_ev, follow_t

    def teacher_call(fn):
        """A teacher's click: ``fn(lang, room, …)`` on an open room; a refusal is one line."""
        def call(lang: str, room: Any, *args: Any) -> dict:
            room = kept(room, TEACHER_KEYS)
            if not room.get("code"):
                return {tp.msg: ""}
            try:
                extra = fn(lang, room, *args) or {}
            except UserError as e:
                return {tp.msg: refusal(e, lang)}
            return {tp.msg: "", **teacher_draw(lang, room), **extra}
        return call

    # paging, picking a lesson or opening a link pushes the screen to the room
    def push_and_fold(lang: str, room: dict, number: Any, screen: Any) -> dict:
        push(room, number, screen)
        return {tp.join_box: gr.update(open=False)}   # the code stays in the count line for latecomers

    on_push = teacher_call(push_and_fold)
    for name in ("open", "lesson_prev", "lesson_next", "restore"):
        if name in lesson_events:
            lesson_events[name].then(on_push, [lang_state, tp.room, ui.current, ui.screen], [tp.msg, *t_outs],
                                     api_visibility="private", show_progress="hidden")

    events["class_ask"] = tp.asked.input(
        teacher_call(lambda lang, room, key: hall.ask(room["code"], room["secret"], str(key))),
        [lang_state, tp.room, tp.asked], [tp.msg, *t_outs], api_name="class_ask")
    def next_round(lang: str, room: dict) -> None:
        hall.next_round(room["code"], room["secret"])

    events["class_round"] = tp.next_round.click(
        teacher_call(next_round),
        [lang_state, tp.room], [tp.msg, *t_outs], api_name="class_round")

    def reveal(lang: str, room: dict) -> None:
        view = hall.view(room["code"])
        hall.check_teacher(room["code"], room["secret"])
        q = view.questions.get(view.asked) if view.asked else None
        if q is None:
            raise RoomError.coded("no_question")
        payload: dict[str, Any] = {}
        if q.key.startswith("predict:"):   # the experiment runs once, for the whole class
            exp = lessons[q.lesson].experiment_on(q.screen)
            try:
                result = lesson_runs.run(exp)
                payload = {"values": result.values, "top": result.top, "tops": result.tops, "curves": result.curves,
                           "texts": result.texts, "seconds": result.seconds}
            except UserError:
                raise
            except Exception as e:  # noqa: BLE001 - as in the lesson: the tested values, said so
                payload = {"values": dict(exp.expect), "top": [], "tops": {}, "seconds": 0.0,
                           "error": str(e).splitlines()[0][:200]}
        hall.reveal(room["code"], room["secret"], payload)

    def on_reveal(v: dict) -> dict:
        return teacher_call(reveal)(v["lang"], v["room"])

    events["class_reveal"] = tp.reveal.click(model_event(on_reveal, ["lang", "room"], jobs), [lang_state, tp.room],
                                             [tp.msg, *t_outs], api_name="class_reveal", concurrency_id="model")

    def on_csv(lang: str, room: Any) -> dict:
        room = kept(room, TEACHER_KEYS)
        view = room_view(room.get("code", "")) if room.get("code") else None
        if view is None:
            return {tp.csv_file: gr.update(visible=False), tp.msg: tr(lang, "closed")}
        right = {key: right_after_run(lessons[q.lesson], q, (view.revealed.get(key) or {}).get("values"))
                 if key in view.revealed else None for key, q in view.known.items()}
        path = write_text(f"class-{view.code}-{time.strftime('%Y%m%d-%H%M')}.csv", to_csv(view, right))
        return {tp.csv_file: gr.update(visible=True, value=path), tp.msg: ""}

    events["class_csv"] = tp.csv.click(on_csv, [lang_state, tp.room], [tp.csv_file, tp.msg], api_name="class_csv")

    def on_close(lang: str, room: Any) -> dict:
        room = kept(room, TEACHER_KEYS)
        if room.get("code"):
            try:
                hall.close(room["code"], room["secret"])
            except RoomError:
                pass   # already gone (idle): closed either way
        return {tp.room: {}, tp.msg: tr(lang, "closed"), tp.csv_file: gr.update(visible=False, value=None),
                **CV.teacher_views(tp, None, lang, lessons)}

    events["class_close"] = tp.close.click(on_close, [lang_state, tp.room], [tp.room, tp.msg, tp.csv_file, *t_outs],
                                           api_name="class_close", cancels=[follow_t])

    # ------------------------------------------------------------------ a student
    s_outs = student_outputs(sp)
    # the lesson's views a student's follower redraws; never the teacher-mode box, which the page's own
    # link sets on load while a follower may be starting (a follower that ends at once would put it back)
    lesson_outs = [c for c in (ui.current, ui.screen, *lesson_outputs(ui)) if c is not ui.teacher]

    def on_join(lang: str, typed: Any, nick: Any, member: Any, request: gr.Request) -> dict:
        member = kept(member, MEMBER_KEYS)
        try:
            sid = hall.join(typed, client_of(request), nick, previous=member.get("id"))
        except RoomError as e:
            return {sp.join_msg: refusal(e, lang), sp.member: member}
        return {sp.member: {"code": parse_code(typed), "id": sid}, sp.join_msg: "", sp.join_box: gr.update(open=False)}

    async def student_follow(lang: str, member: Any, request: gr.Request):
        """This tab's view of the room: the teacher's screen and question as they change, the
        reveal beside this student's answer, and an end line when the room goes. Its inputs are
        this tab's session state only (an API caller follows the same way a browser does); the
        choices are shuffled by the student's id in the room."""
        member = kept(member, MEMBER_KEYS)
        code, sid = member.get("code"), member.get("id")
        if not code or not sid:
            return
        live = hall.follow_start()
        try:
            async for out in _student_updates(lang, code, sid, live, _session(request)):
                yield out
        finally:
            if live:
                hall.follow_end()

    async def _student_updates(lang: str, code: str, sid: str, live: bool, session: str | None):
        """The updates of one student's view; with ``live`` False (the server's live views are all
        taken) only the room as it is now, once, and a line that says to press "Update". A change
        of the page's language (``session``'s, in ``langs``) draws it all again."""
        seen, shown = None, None
        while True:
            if langs.get(session, lang) != lang:
                lang, seen, shown = langs.get(session, lang), None, None
            now = hall.versions(code)
            if now is None:
                yield {sp.member: {}, sp.seen: "", **CV.student_views(sp, None, "", lang, lessons, "")}
                return
            if seen is None or now[0] != seen:
                seen = now[0]
                room = room_view(code)
                if room is None:
                    continue
                out = {sp.seen: room.asked or "", **CV.student_views(sp, room, sid, lang, lessons, sid)}
                if room.lesson is not None and (room.lesson, room.screen) != shown:
                    shown = (room.lesson, room.screen)
                    out.update({ui.current: room.lesson, ui.screen: room.screen,
                                **lesson_views(ui, lang, room.lesson, room.screen, None, sid, None, False),
                                # the list keeps this browser's ticks (its progress is not read here)
                                ui.picker: gr.update(value=room.lesson), ui.progress: gr.update()})
                    out.pop(ui.teacher, None)
                    # in class the room asks the screen's question: the lone Run and checks wait
                    out.update({ui.exp: gr.update(visible=False), ui.checks_box: gr.update(visible=False)})
                out[sp.refresh] = gr.update(visible=not live)
                if not live:
                    out[sp.head] = f"{out.get(sp.head, '')}\n\n{tr(lang, 'followers_full', n=hall.limits.followers)}"
                yield out
                if not live:
                    return
            await asyncio.sleep(POLL_S)

    follow_inputs = [lang_state, sp.member]
    follow_outputs = [sp.member, sp.seen, sp.refresh, *s_outs, *lesson_outs]
    join_ev = sp.join.click(on_join, [lang_state, sp.code, sp.nick, sp.member],
                            [sp.member, sp.join_msg, sp.join_box], api_name="class_join")
    follow_s = join_ev.then(student_follow, follow_inputs, follow_outputs, concurrency_limit=None,
                            api_name="class_follow", api_visibility="undocumented", show_progress="hidden")
    events["class_join"], events["class_follow"] = join_ev, follow_s

    # when the live views are all taken, "Update" reads the room once (the same follower, which ends at once)
    follow_r = sp.refresh.click(student_follow, follow_inputs, follow_outputs, concurrency_limit=None,
                                api_visibility="private", show_progress="hidden")

    def on_send(lang: str, member: Any, seen: str, choice: Any, number: Any, confidence: Any) -> dict:
        member = kept(member, MEMBER_KEYS)
        if not member.get("code"):
            return {sp.status: refusal(RoomError.coded("not_member"), lang)}
        room = room_view(member["code"])
        if room is not None and not seen:   # an API caller that follows nothing answers the question open now
            seen = room.asked or ""
        q = room.questions.get(seen) if room else None
        value = choice if (q is None or q.kind == "choice") else number
        if value is None or value == "":
            return {sp.status: tr(lang, "pick_first")}
        try:
            hall.answer(member["code"], member.get("id", ""), seen, value, confidence)
        except RoomError as e:
            return {sp.status: refusal(e, lang)}
        room = room_view(member["code"])
        return {sp.status: CV.sent_line(q, room.rounds[seen][-1][member["id"]].value, room.round_of(seen), lang)}

    events["class_answer"] = sp.send.click(on_send, [lang_state, sp.member, sp.seen, sp.choice, sp.number,
                                                     sp.confidence], [sp.status], api_name="class_answer")

    # The page has opened (after the lesson's own restore, so nothing redraws the lesson after this):
    # a join link (?room=CODE, set on page load as "CODE:nonce") joins, keeping this browser's place
    # if it had one; otherwise the class this browser opened or joined comes back, if still open.
    def on_class_restore(lang: str, room: Any, member: Any, link: Any, nick: Any, request: gr.Request) -> dict:
        room, member = kept(room, TEACHER_KEYS), kept(member, MEMBER_KEYS)
        out: dict[Any, Any] = {}
        try:
            if room:
                hall.check_teacher(room["code"], room["secret"])
                out.update({tp.info: CV.join_card(room["code"], room["link"], lang), **teacher_draw(lang, room)})
        except RoomError:
            room = {}
        typed = str(link or "").rpartition(":")[0]
        if typed:
            out.update({sp.code: typed, sp.join_box: gr.update(open=True),
                        **on_join(lang, typed, nick, member, request)})
            return {tp.room: room, **out}
        view = room_view(member["code"]) if member else None
        if view is None or member["id"] not in view.students:
            member = {}
        return {tp.room: room, sp.member: member, **out}

    # the browser's copies follow the session's state (private: the API keeps its state in the session)
    tp.room.change(lambda room: kept(room, TEACHER_KEYS), [tp.room], [tp.saved], api_visibility="private",
                   queue=False)
    sp.member.change(lambda member: kept(member, MEMBER_KEYS), [sp.member], [sp.saved], api_visibility="private",
                     queue=False)

    async def restore_and_follow(lang: str, saved_room: Any, saved_member: Any, link: Any, nick: Any,
                                 request: gr.Request):
        """One event per page load: the class comes back (or the link joins), then this same event
        follows it, so no second event can start before the first has set the session's state."""
        out = on_class_restore(lang, saved_room, saved_member, link, nick, request)
        yield out
        room, member = out.get(tp.room) or {}, out.get(sp.member) or {}
        if room:
            async for update in teacher_follow(lang, room, request):
                yield update
        elif member:
            async for update in student_follow(lang, member, request):
                yield update

    if "restore" in lesson_events:
        follow_back = lesson_events["restore"].then(
            restore_and_follow, [lang_state, tp.saved, sp.saved, sp.link_in, sp.nick],
            _unique([tp.room, sp.member, tp.info, tp.msg, *t_outs, sp.code, sp.join_box, sp.join_msg, *follow_outputs]),
            concurrency_limit=None, api_visibility="private", show_progress="hidden")
        # a page in no class is done starting once this returns (browser tests wait for it; in a
        # class the event goes on following it, and the class's own view says it is back)
        follow_back.then(None, None, None, js="() => { window.dlClassReady = true; return []; }")
        restarted = [follow_back]
    else:
        restarted = []

    def on_leave(lang: str) -> dict:
        return {sp.member: {}, sp.seen: "", sp.box: gr.update(visible=False), sp.join_box: gr.update(visible=True),
                sp.join_msg: tr(lang, "left")}

    events["class_leave"] = sp.leave.click(on_leave, [lang_state], [sp.member, sp.seen, sp.box, sp.join_box,
                                                                    sp.join_msg],
                                           api_name="class_leave", cancels=[follow_s, follow_r, *restarted])
    return events
