"""The process's rooms: a teacher opens one, students join with its code, the teacher pushes a
lesson screen and asks one of its questions, students answer (a choice or a number, with an
optional confidence), the teacher opens a second round or reveals the answer, and closes.

State lives in this process's memory (a Space with several replicas would need a shared store
instead). Everything a visitor can make is bounded: rooms per process, students per room, answers
per student per question and round, rounds per question, and a room idle for ``idle_s`` is
forgotten with everything in it. Every refusal is a ``RoomError`` with one line and changes nothing.

    >>> hall = RoomHall(RoomLimits(max_rooms=1))
    >>> room = hall.open(now=0.0)
    >>> sid = hall.join(room.code, client="10.0.0.9", nickname="Ada", now=1.0)
    >>> from decoding_lab.classroom.questions import Question
    >>> q = Question("check:1.1", "choice", {"en": "Which?"}, [{"en": "a"}, {"en": "b"}], ["0", "1"], right=1)
    >>> hall.push(room.code, room.secret, lesson=1, screen=3, questions=[q], now=2.0)
    >>> hall.answer(room.code, sid, "check:1.1", 1, confidence=3, now=3.0)
    >>> hall.view(room.code, now=4.0).rounds["check:1.1"][0][sid].value
    1
    >>> hall.open(now=4.0)
    Traceback (most recent call last):
    ...
    decoding_lab.classroom.rooms.RoomError: 1 classes are open on this server, the most it holds; try again later (DECODING_LAB_MAX_ROOMS)
"""

from __future__ import annotations

import copy
import math
import secrets
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from decoding_lab.classroom.codes import WrongCodes, format_code, new_code, new_secret, parse_code
from decoding_lab.classroom.questions import Question
from decoding_lab.errors import UserError

#: The largest number an answer may be (a prediction of a count, a ratio, a probability).
MAX_NUMBER = 1e12
#: Characters of a nickname kept (the teacher alone sees it).
NICKNAME_CHARS = 24
#: Confidence a student may give: 1 guessing, 2 fairly sure, 3 sure.
CONFIDENCES = (1, 2, 3)


class RoomError(UserError):
    """A room refused a request: the message is one line for the person who asked."""


@dataclass(frozen=True)
class RoomLimits:
    """How much the rooms may hold (``decoding_lab.limits`` reads them from the environment)."""

    max_rooms: int = 20          # DECODING_LAB_MAX_ROOMS
    students: int = 100          # DECODING_LAB_ROOM_STUDENTS
    idle_s: float = 3600.0       # DECODING_LAB_ROOM_IDLE
    wrong_codes: int = 20        # DECODING_LAB_ROOM_WRONG_CODES, per client per minute
    answers: int = 10            # DECODING_LAB_ROOM_ANSWERS, per student, question and round
    rounds: int = 3              # rounds one question may have
    followers: int = 200         # DECODING_LAB_ROOM_FOLLOWERS: live views open at once, all rooms

    @classmethod
    def from_limits(cls, lim: Any) -> "RoomLimits":
        return cls(max_rooms=lim.max_rooms, students=lim.room_students, idle_s=lim.room_idle,
                   wrong_codes=lim.room_wrong_codes, answers=lim.room_answers, followers=lim.room_followers)


@dataclass
class Answer:
    """One student's answer in one round: the choice's index or the number, and how sure."""

    value: int | float
    confidence: int | None = None
    changes: int = 1


@dataclass
class Room:
    code: str
    secret: str = field(repr=False)
    touched: float
    students: dict[str, str] = field(default_factory=dict)        # id -> nickname ("" for none)
    lesson: int | None = None
    screen: int | None = None
    questions: dict[str, Question] = field(default_factory=dict)  # the pushed screen's, by key
    asked: str | None = None                                      # the question open now
    rounds: dict[str, list[dict[str, Answer]]] = field(default_factory=dict)   # key -> rounds of answers
    revealed: dict[str, dict[str, Any]] = field(default_factory=dict)         # key -> what the reveal showed
    asked_order: list[str] = field(default_factory=list)          # every question asked, in order (for CSV)
    known: dict[str, Question] = field(default_factory=dict)      # every question ever pushed
    version: int = 0           # what students follow: screen, question, round, reveal
    answers_version: int = 0   # what the projector follows: every answer
    closed: bool = False

    @property
    def shown_code(self) -> str:
        return format_code(self.code)

    def round_of(self, key: str) -> int:
        """The open round of question ``key`` (1-based; 1 before anyone answered)."""
        return max(1, len(self.rounds.get(key, [])))


class RoomHall:
    """Every room of this process, behind one lock (each call is a few dictionary operations)."""

    def __init__(self, limits: RoomLimits | None = None) -> None:
        self.limits = limits or RoomLimits()
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()
        self._wrong = WrongCodes(self.limits.wrong_codes)
        self._followers = 0

    # ------------------------------------------------------------------ live views
    def follow_start(self) -> bool:
        """Count one more live view (a student's panel, a projector); False at ``followers``.
        Each holds one of the web server's workers for as long as it is open, so the app
        reserves that many (``ui.page.launch_kwargs``) and refuses the one past them."""
        with self._lock:
            if self._followers >= self.limits.followers:
                return False
            self._followers += 1
            return True

    def follow_end(self) -> None:
        with self._lock:
            self._followers = max(0, self._followers - 1)

    @property
    def followers(self) -> int:
        return self._followers

    # ------------------------------------------------------------------ helpers, with the lock held
    def _sweep(self, now: float) -> None:
        gone = [c for c, r in self._rooms.items() if now - r.touched > self.limits.idle_s]
        for code in gone:
            self._rooms.pop(code).closed = True

    def _room(self, code: str, now: float) -> Room:
        self._sweep(now)
        room = self._rooms.get(code)
        if room is None:
            raise RoomError.coded("no_room", room=format_code(code), minutes=f"{self.limits.idle_s / 60:g}")
        return room

    def _teacher(self, code: str, secret: str, now: float) -> Room:
        room = self._room(code, now)
        if not isinstance(secret, str) or not secrets.compare_digest(room.secret, secret):
            raise RoomError.coded("not_teacher")
        room.touched = now
        return room

    # ------------------------------------------------------------------ the teacher
    def open(self, now: float | None = None) -> Room:
        """A new room with a fresh code and teacher's secret."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._sweep(now)
            if len(self._rooms) >= self.limits.max_rooms:
                raise RoomError.coded("rooms_full", n=self.limits.max_rooms, setting="DECODING_LAB_MAX_ROOMS")
            code = new_code()
            while code in self._rooms:
                code = new_code()
            room = Room(code=code, secret=new_secret(), touched=now)
            self._rooms[code] = room
            return room

    def push(self, code: str, secret: str, lesson: int, screen: int, questions: list[Question],
             now: float | None = None) -> None:
        """Show ``lesson``'s ``screen`` to the room and ask its first question (if it has one).
        Answers already given to these questions are kept (a teacher going back finds them)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            room = self._teacher(code, secret, now)
            if (room.lesson, room.screen) == (lesson, screen) and list(room.questions) == [q.key for q in questions]:
                return
            room.lesson, room.screen = lesson, screen
            room.questions = {q.key: q for q in questions}
            room.known.update(room.questions)
            room.asked = questions[0].key if questions else None
            if room.asked and room.asked not in room.asked_order:
                room.asked_order.append(room.asked)
            room.version += 1

    def ask(self, code: str, secret: str, key: str, now: float | None = None) -> None:
        """Open question ``key`` of the pushed screen (the students' panel shows it)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            room = self._teacher(code, secret, now)
            if key not in room.questions:
                raise RoomError.coded("no_question")
            if room.asked != key:
                room.asked = key
                if key not in room.asked_order:
                    room.asked_order.append(key)
                room.version += 1

    def next_round(self, code: str, secret: str, now: float | None = None) -> int:
        """Open another round of the asked question (after discussion); returns its number."""
        now = time.monotonic() if now is None else now
        with self._lock:
            room = self._teacher(code, secret, now)
            key = room.asked
            if key is None:
                raise RoomError.coded("no_question")
            rounds = room.rounds.setdefault(key, [{}])
            if len(rounds) >= self.limits.rounds:
                raise RoomError.coded("max_rounds", n=self.limits.rounds)
            rounds.append({})
            room.revealed.pop(key, None)   # a new vote hides the last reveal until the next
            room.version += 1
            room.answers_version += 1
            return len(rounds)

    def reveal(self, code: str, secret: str, payload: dict[str, Any], now: float | None = None) -> None:
        """Show the asked question's answer (``payload``: the run's values, the right choice …)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            room = self._teacher(code, secret, now)
            if room.asked is None:
                raise RoomError.coded("no_question")
            room.revealed[room.asked] = dict(payload)
            room.version += 1

    def close(self, code: str, secret: str, now: float | None = None) -> None:
        """End the room: it and every answer in it are forgotten."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._teacher(code, secret, now)
            self._rooms.pop(code).closed = True

    def check_teacher(self, code: str, secret: str, now: float | None = None) -> None:
        """Raises unless ``secret`` is the teacher's of the open room ``code``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._teacher(code, secret, now)

    # ------------------------------------------------------------------ students
    def join(self, typed: Any, client: str, nickname: Any = "", previous: str | None = None,
             now: float | None = None) -> str:
        """The student id of someone who typed ``typed``: ``previous`` again when it is still in
        that room (a reloaded page keeps its answers), else a new one. Wrong codes are counted per
        ``client`` and refused past the limit."""
        now = time.monotonic() if now is None else now
        code = parse_code(typed)
        if code is None:
            raise RoomError.coded("room_code")
        if not self._wrong.allow(client, now):
            raise RoomError.coded("wrong_codes", n=self.limits.wrong_codes, setting="DECODING_LAB_ROOM_WRONG_CODES")
        with self._lock:
            try:
                room = self._room(code, now)
            except RoomError:
                self._wrong.count(client, now)
                raise
            if isinstance(previous, str) and previous in room.students:
                return previous
            if len(room.students) >= self.limits.students:
                raise RoomError.coded("room_full", n=self.limits.students, setting="DECODING_LAB_ROOM_STUDENTS")
            sid = secrets.token_hex(8)
            room.students[sid] = clean_nickname(nickname)
            room.touched = now
            room.answers_version += 1
            return sid

    def answer(self, code: str, student: str, key: str, value: Any, confidence: Any = None,
               now: float | None = None) -> None:
        """Record ``student``'s answer to the asked question ``key`` in its open round (a later
        answer in the same round replaces the earlier one, up to ``answers`` times)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            room = self._room(code, now)
            if student not in room.students:
                raise RoomError.coded("not_member")
            if key != room.asked or key not in room.questions:
                raise RoomError.coded("no_question")
            q = room.questions[key]
            value = checked_value(q, value)
            conf = checked_confidence(confidence)
            rounds = room.rounds.setdefault(key, [{}])
            current = rounds[-1]
            before = current.get(student)
            if before is not None and before.changes >= self.limits.answers:
                raise RoomError.coded("answer_limit", n=self.limits.answers, setting="DECODING_LAB_ROOM_ANSWERS")
            current[student] = Answer(value, conf, (before.changes + 1) if before else 1)
            room.touched = now
            room.answers_version += 1

    # ------------------------------------------------------------------ reading
    def view(self, code: str, now: float | None = None) -> Room:
        """A copy of room ``code`` to draw from (raises ``RoomError`` when it is gone)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return copy.deepcopy(self._room(code, now))

    def versions(self, code: str, now: float | None = None) -> tuple[int, int] | None:
        """The room's (version, answers_version), or None when it is gone: what a follower polls."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._sweep(now)
            room = self._rooms.get(code)
            return None if room is None else (room.version, room.answers_version)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rooms)


# ---------------------------------------------------------------------- checking what students send
def clean_nickname(text: Any) -> str:
    """A nickname as the teacher will see it: printable characters only, at most 24.

    >>> clean_nickname("  Ada\\u202e<b>  "), clean_nickname(None), clean_nickname("x" * 40) == "x" * 24
    ('Ada<b>', '', True)
    """
    if not isinstance(text, str):
        return ""
    kept = "".join(ch for ch in text if unicodedata.category(ch)[0] not in "CZ" or ch == " ")
    return " ".join(kept.split())[:NICKNAME_CHARS]


def checked_value(q: Question, value: Any) -> int | float:
    """A choice's index in range, or a finite number within ±``MAX_NUMBER``.

    >>> q = Question("k", "choice", {}, [{"en": "a"}, {"en": "b"}], ["a", "b"])
    >>> checked_value(q, 1), checked_value(q, "0")
    (1, 0)
    >>> checked_value(q, 2)
    Traceback (most recent call last):
    ...
    decoding_lab.classroom.rooms.RoomError: the answer must be one of the question's 2 choices, got 2
    """
    if q.kind == "choice":
        try:
            i = int(value) if not isinstance(value, (bool, float)) else None
        except (TypeError, ValueError):
            i = None
        if i is None or not 0 <= i < len(q.choices):
            raise RoomError.coded("bad_choice", n=len(q.choices), got=str(value)[:20])
        return i
    try:
        x = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or abs(x) > MAX_NUMBER:
        raise RoomError.coded("bad_number", bound=f"{MAX_NUMBER:g}", got=str(value)[:20])
    return x


def checked_confidence(value: Any) -> int | None:
    """None (not given) or one of ``CONFIDENCES``."""
    if value is None or value == "":
        return None
    try:
        c = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        c = None
    if c not in CONFIDENCES:
        raise RoomError.coded("bad_confidence", got=str(value)[:20])
    return c
