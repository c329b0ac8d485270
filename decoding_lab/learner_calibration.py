"""The learner's own calibration: how sure they said they were before each experiment, against
whether their prediction came out right.

A lesson may be told a confidence with each prediction (one of ``CONFIDENCES``). Once the run has
shown the result, the pair (confidence, right) is kept, one per experiment (the first attempt:
a second run after seeing the answer would say nothing about calibration). From those pairs:

* the **Brier score**, the mean of (confidence − outcome)², 0 for a perfect forecaster; saying 50%
  every time scores 0.25 whatever happens;
* the **calibration picture**: for each confidence level, the share of those predictions that
  came out right (a calibrated learner's "70%" is right about seven times in ten).

Lesson 11 fits a line from a sample's log-probability to its chance of passing and finds the
model's confidence tells little; the same picture, drawn for the learner's own guesses, is the
lesson turned on them. A number prediction counts as right when it lies within ``NUMBER_SLACK``
of the result (the words beside the confidence say so). The records live in the learner's browser,
like their progress; ``clean`` keeps only well-formed ones, whatever the browser sends.
"""

from __future__ import annotations

import math
from typing import Any

#: The confidences a learner may state (as probabilities that the prediction is right).
CONFIDENCES = (0.33, 0.5, 0.7, 0.9)
#: A number prediction is right within this relative distance of the result.
NUMBER_SLACK = 0.25
#: Records kept at most (the course has 19 experiments; a long-lived browser stays small).
MAX_RECORDS = 200


def number_right(guess: Any, value: Any) -> bool | None:
    """Whether a typed number lies within ``NUMBER_SLACK`` of the result (None if either is not a number).

    >>> number_right(450, 500), number_right(300, 500), number_right("x", 500)
    (True, False, None)
    >>> number_right(0.0, 0.0)
    True
    """
    try:
        g, v = float(guess), float(value)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(g) and math.isfinite(v)):
        return None
    return abs(g - v) <= NUMBER_SLACK * abs(v)


def confidence_of(value: Any) -> float | None:
    """A stated confidence, or None when none (or no valid one) was given.

    >>> confidence_of("0.7"), confidence_of(None), confidence_of(0.8)
    (0.7, None, None)
    """
    try:
        c = float(value)
    except (TypeError, ValueError):
        return None
    return next((x for x in CONFIDENCES if abs(x - c) < 1e-9), None)


def record(records: list[dict[str, Any]] | None, key: str, confidence: Any, right: bool | None) -> list[dict[str, Any]]:
    """``records`` with this experiment's first attempt added (unchanged if it is already there, or
    if the confidence or the outcome is missing).

    >>> r = record([], "5/hot-kept", 0.7, True)
    >>> r
    [{'k': '5/hot-kept', 'c': 0.7, 'ok': True}]
    >>> record(r, "5/hot-kept", 0.9, False) == r      # the first attempt stands
    True
    """
    out = clean(records)
    c = confidence_of(confidence)
    if c is None or right is None or any(x["k"] == key for x in out):
        return out
    return (out + [{"k": str(key)[:64], "c": c, "ok": bool(right)}])[-MAX_RECORDS:]


def clean(records: Any) -> list[dict[str, Any]]:
    """The well-formed records of what the browser sent (anything else dropped).

    >>> clean([{"k": "1/a", "c": 0.5, "ok": False}, {"k": "x", "c": 2, "ok": True}, "junk"])
    [{'k': '1/a', 'c': 0.5, 'ok': False}]
    >>> clean("not a list")
    []
    """
    if not isinstance(records, list):
        return []
    out = []
    for x in records[-MAX_RECORDS:]:
        if isinstance(x, dict) and isinstance(x.get("k"), str) and len(x["k"]) <= 64 \
                and confidence_of(x.get("c")) is not None and isinstance(x.get("ok"), bool):
            out.append({"k": x["k"], "c": confidence_of(x["c"]), "ok": x["ok"]})
    return out


def brier(records: list[dict[str, Any]]) -> float | None:
    """Mean squared distance between stated confidence and outcome (None with no records).

    >>> brier([{"k": "a", "c": 0.9, "ok": True}, {"k": "b", "c": 0.5, "ok": False}])
    0.13
    """
    if not records:
        return None
    return round(sum((r["c"] - (1.0 if r["ok"] else 0.0)) ** 2 for r in records) / len(records), 10)


def by_confidence(records: list[dict[str, Any]]) -> list[tuple[float, int, float]]:
    """(confidence, how many, share right) for each level the learner used, lowest first.

    >>> by_confidence([{"k": "a", "c": 0.9, "ok": True}, {"k": "b", "c": 0.9, "ok": False},
    ...                {"k": "c", "c": 0.5, "ok": True}])
    [(0.5, 1, 1.0), (0.9, 2, 0.5)]
    """
    out = []
    for c in CONFIDENCES:
        hits = [r["ok"] for r in records if r["c"] == c]
        if hits:
            out.append((c, len(hits), sum(hits) / len(hits)))
    return out


__all__ = ["CONFIDENCES", "NUMBER_SLACK", "number_right", "confidence_of", "record", "clean", "brier", "by_confidence"]
