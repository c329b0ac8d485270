"""What one lesson screen asks a room: its experiment's prediction (before the run), and on the
lesson's last screen each of its checks. A question names its kind and its choices in both
languages; the room keeps only choice indices and numbers.

    >>> from decoding_lab.lessons import load_lessons
    >>> les = {l.number: l for l in load_lessons()}[1]
    >>> [(q.key, q.kind) for q in questions_on(les, 0)]
    []
    >>> qs = questions_on(les, len(les.screens("en")) - 1)
    >>> all(q.kind == "choice" and q.right is not None for q in qs if q.key.startswith("check"))
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decoding_lab.lessons import Lesson


@dataclass(frozen=True)
class Question:
    """One question of a screen. ``key`` is unique in its lesson: "predict:<experiment id>" or
    "check:<check id>". ``choices`` holds each choice's text per language (empty for a number);
    ``values`` the value each choice stands for in the experiment (a variant's key, a token);
    ``right`` the index of the right choice when it is known before any run (a check's)."""

    key: str
    kind: str                                   # "choice" or "number"
    text: dict[str, str]
    choices: list[dict[str, str]] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    right: int | None = None
    lesson: int = 0
    screen: int = 0

    def label(self, i: int, lang: str) -> str:
        """Choice ``i``'s text in ``lang`` (English when the language has none)."""
        c = self.choices[i]
        return c.get(lang) or c.get("en", str(i))


def prediction_of(les: Lesson, screen: int) -> Question | None:
    """The prediction screen ``screen`` (0-based) asks before its experiment runs, if it has one."""
    exp = les.experiment_on(screen)
    if exp is None:
        return None
    p = exp.predict
    key = f"predict:{exp.id}"
    if p.kind == "number":
        return Question(key, "number", dict(p.question), lesson=les.number, screen=screen)
    if p.kind == "value":   # choose the value the model will give
        choices = [{"en": str(c.get("en", c["value"])), "zh": str(c.get("zh", c.get("en", c["value"])))}
                   for c in p.choices]
        values = [str(c["value"]) for c in p.choices]
    else:                   # "min"/"max": choose the variant that comes out lowest / highest
        choices = [{"en": v.label.get("en", v.key), "zh": v.label.get("zh", v.label.get("en", v.key))}
                   for v in exp.variants]
        values = [v.key for v in exp.variants]
    return Question(key, "choice", dict(p.question), choices, values, lesson=les.number, screen=screen)


def questions_on(les: Lesson, screen: int) -> list[Question]:
    """Every question screen ``screen`` asks: the prediction first, then (on the last screen) the checks."""
    out: list[Question] = []
    pred = prediction_of(les, screen)
    if pred is not None:
        out.append(pred)
    if screen == len(les.screens("en")) - 1:
        for check in les.checks:
            out.append(Question(f"check:{check.id}", "choice", dict(check.question),
                                [dict(c.text) for c in check.choices], [str(i) for i in range(len(check.choices))],
                                right=check.answer, lesson=les.number, screen=screen))
    return out


def right_after_run(les: Lesson, q: Question, values: dict[str, Any] | None) -> int | None:
    """The index of the right choice: a check's known answer, or, once the experiment has run
    (``values``: what it measured), the choice the experiment's own verdict marks right. None for
    a number (read beside the result, not marked) or before the run."""
    if q.right is not None:
        return q.right
    if q.kind != "choice" or not values or not q.key.startswith("predict:"):
        return None
    exp = les.experiment_on(q.screen)
    if exp is None:
        return None
    return next((i for i, v in enumerate(q.values) if exp.predict.verdict(v, values)), None)
