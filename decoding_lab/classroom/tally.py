"""The room's answers summed per question and round, with no names: how many chose each choice
(and how sure they were on average), or the spread of the numbers. ``to_csv`` writes every
question asked in the room that way, for the teacher to keep.

    >>> from decoding_lab.classroom.questions import Question
    >>> from decoding_lab.classroom.rooms import Answer
    >>> q = Question("check:1.1", "choice", {"en": "Which?"}, [{"en": "a"}, {"en": "b"}], ["0", "1"], right=1)
    >>> t = tally(q, {"s1": Answer(1, 3), "s2": Answer(1, 1), "s3": Answer(0)})
    >>> t.n, t.counts, t.confidence
    (3, [1, 2], [None, 2.0])
    >>> n = Question("predict:x", "number", {"en": "How many?"})
    >>> t = tally(n, {"a": Answer(2.0), "b": Answer(10.0), "c": Answer(4.0)})
    >>> t.values, t.median, t.quartiles
    ([2.0, 4.0, 10.0], 4.0, (3.0, 7.0))
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from typing import Any

from decoding_lab.classroom.questions import Question


@dataclass(frozen=True)
class Tally:
    """One round of one question: ``counts`` per choice and each choice's mean confidence, or the
    sorted ``values`` of a number with their median and quartiles."""

    n: int
    counts: list[int] = field(default_factory=list)
    confidence: list[float | None] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    median: float | None = None
    quartiles: tuple[float, float] | None = None


def tally(q: Question, answers: dict[str, Any]) -> Tally:
    """``answers`` (student id -> ``Answer``) summed; the ids go no further than this function."""
    given = list(answers.values())
    if q.kind == "choice":
        counts = [0] * len(q.choices)
        sure: list[list[int]] = [[] for _ in q.choices]
        for a in given:
            counts[int(a.value)] += 1
            if a.confidence is not None:
                sure[int(a.value)].append(a.confidence)
        return Tally(len(given), counts, [round(statistics.fmean(s), 2) if s else None for s in sure])
    values = sorted(float(a.value) for a in given)
    if not values:
        return Tally(0)
    if len(values) == 1:
        return Tally(1, values=values, median=values[0], quartiles=(values[0], values[0]))
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return Tally(len(values), values=values, median=statistics.median(values), quartiles=(q1, q3))


def rounds_of(room: Any, key: str) -> list[Tally]:
    """Every round of question ``key`` in ``room`` (a ``rooms.Room``), tallied."""
    q = room.known[key]
    return [tally(q, answers) for answers in room.rounds.get(key, [{}])]


def to_csv(room: Any, right: dict[str, int | None] | None = None) -> str:
    """Every question the room was asked, round by round: one row per choice (how many chose it,
    their mean confidence, whether it was right) or per distinct number. No student appears.
    ``right``: the right choice per question key where known (a check's, or a revealed run's)."""
    right = right or {}
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["lesson", "screen", "question", "question_text", "round", "answer", "count", "of",
                "mean_confidence", "right"])
    for key in room.asked_order:
        q = room.known[key]
        for r, t in enumerate(rounds_of(room, key), start=1):
            base = [q.lesson, q.screen + 1, key, q.text.get("en", ""), r]
            if q.kind == "choice":
                for i, count in enumerate(t.counts):
                    ok = "" if right.get(key) is None else ("yes" if right[key] == i else "no")
                    conf = "" if t.confidence[i] is None else t.confidence[i]
                    w.writerow([*base, q.label(i, "en"), count, t.n, conf, ok])
            else:
                for value in sorted(set(t.values)):
                    w.writerow([*base, f"{value:g}", t.values.count(value), t.n, "", ""])
    return out.getvalue()
