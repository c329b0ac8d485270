"""Guided lessons: text (English and Chinese), experiments to predict and run, pointers and checks.

Lessons are data files in ``lessons/NN_slug.toml`` (read with the standard library's
``tomllib``). A lesson's text is Markdown; ``---`` on its own line separates its screens,
one idea each; the tab shows one screen at a time (large type in teacher mode).

* ``[[experiments]]`` belong to a screen: the learner predicts first, then runs the experiment
  on the live model and sees the guess beside the result (``decoding_lab.lesson_runs``).
* ``[[look_at]]`` pointers ("What to look at") say where to look in the app. A pointer belongs to
  a ``screen`` and shows from there on, but never before the learner could have predicted what it
  points at: a screen whose experiment has not been run shows none, and a pointer that belongs to
  a screen with an experiment waits for that experiment's run (:meth:`Lesson.pointers`).
* ``[[checks]]`` are short questions with feedback for every choice; one at least is a
  *transfer* question, which the text does not answer word for word.
* ``claims`` name the quantitative statements a lesson makes; each one is checked by a test on
  the live model or the shipped files (``tests/test_lessons_claims.py``). Every number in the
  text (either language) must be in one of the lesson's claims, an experiment's tested result
  or settings, or the lesson's ``inputs``: numbers the lesson sets, defines or cites rather than
  measures, each with its reason; ``tests/test_lessons.py`` fails on any other
  (:func:`numbers_in` says what counts as a number).

Schema (every text field has ``en`` and ``zh``)::

    number = 3
    slug = "temperature"
    title = {en = "...", zh = "..."}
    text = {en = "...", zh = "..."}
    [inputs]                     # numbers set, defined or cited, not measured: number = reason
    "0.7" = "the temperature the lesson sets"
    [preset]                     # what "Load this experiment" sets up in another tab
    tab = "explorer"             # explorer | compare | beam | grammar | multisample | determinism
    prompt = "..."
    settings = {temperature = 0.7}
    [[look_at]]                  # pointers tied to controls on screen
    control = "temperature"
    screen = 3                   # the screen it belongs to (optional, 1 by default): see Lesson.pointers
    en = "..."
    zh = "..."
    [[experiments]]              # see decoding_lab.lesson_runs for the fields
    screen = 2
    ...
    [[checks]]
    question = {en = "...", zh = "..."}
    transfer = true
    [[checks.choices]]
    right = true
    en = "..."
    zh = "..."
    why = {en = "...", zh = "..."}
    [[claims]]
    id = "entropy-rises-with-T"
    en = "..."
"""

from __future__ import annotations

import random
import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decoding_lab.errors import UserError
from decoding_lab.lesson_runs import Experiment, parse_experiment
from decoding_lab.settings import SamplingSettings

LESSON_DIR = Path(__file__).resolve().parent.parent / "lessons"
LANGS = ("en", "zh")
TABS = ("explorer", "compare", "beam", "grammar", "multisample", "determinism")
MAX_CHECKS = 3   # the tab has this many question slots


class LessonError(UserError, ValueError):
    """A lesson file is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Choice:
    text: dict[str, str]
    right: bool
    why: dict[str, str]      # why this choice is right, or why it is wrong


@dataclass(frozen=True)
class Check:
    """One short question. ``id`` is ``"<lesson>.<n>"``: what progress remembers."""

    id: str
    question: dict[str, str]
    choices: list[Choice]
    transfer: bool = False

    @property
    def answer(self) -> int:
        """The index of the right choice in the file's order."""
        return next(i for i, c in enumerate(self.choices) if c.right)

    def order(self, learner: str) -> list[int]:
        """The choices' order for one learner: a shuffle seeded by the learner and the check, so it
        is stable across reloads for that learner and differs between learners.

        >>> c = Check("1.1", {}, [Choice({}, i == 0, {}) for i in range(3)])
        >>> sorted(c.order("abc")) == [0, 1, 2] and c.order("abc") == c.order("abc")
        True
        """
        idx = list(range(len(self.choices)))
        random.Random(f"{learner}/{self.id}").shuffle(idx)
        return idx


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: dict[str, str]
    text: dict[str, str]
    preset: dict[str, Any]
    look_at: list[dict[str, Any]]     # control, en, zh, and screen (1-based, 1 if the file names none)
    checks: list[Check]
    experiments: list[Experiment] = field(default_factory=list)
    claims: list[dict[str, str]] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)   # number -> why it needs no claim
    #: the 1-based screen that shows the learner's own calibration (0: none); lesson 11's
    calibration_screen: int = 0

    def screens(self, lang: str) -> list[str]:
        """The text split into screens (one idea each)."""
        return [s.strip() for s in self.text[lang].split("\n---\n") if s.strip()]

    def settings(self) -> SamplingSettings:
        return SamplingSettings.from_json(self.preset.get("settings", {}))

    def experiment_on(self, screen: int) -> Experiment | None:
        """The experiment of screen ``screen`` (0-based), if it has one."""
        return next((e for e in self.experiments if e.screen == screen + 1), None)

    def pointers(self, screen: int, ran: Collection[str] = ()) -> tuple[list[dict[str, Any]], list[int]]:
        """The pointers shown on screen ``screen`` (0-based) once the experiments whose ids are in
        ``ran`` have been run, and the (1-based) screens whose experiment still holds pointers back.

        A pointer shows on its own screen and every later one, unless it could still give a
        prediction away: on a screen whose experiment has not been run, none shows (the learner has
        yet to predict); a pointer that belongs to a screen with an experiment waits for that run.
        """
        here = self.experiment_on(screen)
        shown, waiting = [], set()
        for item in self.look_at:
            at = item["screen"]
            if at > screen + 1:
                continue
            own = self.experiment_on(at - 1)
            if own is not None and own.id not in ran:
                waiting.add(at)
            elif here is not None and here.id not in ran:
                waiting.add(screen + 1)
            else:
                shown.append(item)
        return shown, sorted(waiting)

    def check_answer(self, check: int, choice: int) -> bool:
        return 0 <= int(choice) < len(self.checks[check].choices) and self.checks[check].choices[int(choice)].right


def _bilingual(data: dict, key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict) or any(lang not in value or not value[lang] for lang in LANGS):
        raise LessonError(f"{where}: '{key}' needs both 'en' and 'zh'")
    return value


def _parse_check(number: int, i: int, data: dict, where: str) -> Check:
    where = f"{where} check {i + 1}"
    choices = []
    for j, c in enumerate(data.get("choices", [])):
        if not all(c.get(lang) for lang in LANGS):
            raise LessonError(f"{where} choice {j + 1}: needs en and zh")
        choices.append(Choice({lang: c[lang] for lang in LANGS}, bool(c.get("right", False)),
                              _bilingual(c, "why", f"{where} choice {j + 1}")))
    if len(choices) < 2 or sum(c.right for c in choices) != 1:
        raise LessonError(f"{where}: needs at least two choices and exactly one right answer")
    return Check(f"{number}.{i + 1}", _bilingual(data, "question", where), choices, bool(data.get("transfer", False)))


def parse_lesson(data: dict, where: str = "lesson") -> Lesson:
    for key in ("number", "slug", "preset", "checks"):
        if key not in data:
            raise LessonError(f"{where}: missing '{key}'")
    number = int(data["number"])
    preset = dict(data["preset"])
    if preset.get("tab", "explorer") not in TABS:
        raise LessonError(f"{where}: preset.tab must be one of {', '.join(TABS)}")
    try:
        SamplingSettings.from_json(preset.get("settings", {}))
    except ValueError as e:
        raise LessonError(f"{where}: preset.settings: {e}") from None
    checks = [_parse_check(number, i, c, where) for i, c in enumerate(data["checks"])]
    if not 1 <= len(checks) <= MAX_CHECKS:
        raise LessonError(f"{where}: between 1 and {MAX_CHECKS} checks")
    text = _bilingual(data, "text", where)
    n_screens = len([s for s in text["en"].split("\n---\n") if s.strip()])
    look_at = [dict(item) for item in data.get("look_at", [])]
    for item in look_at:
        if not all(k in item for k in ("control", *LANGS)):
            raise LessonError(f"{where}: every look_at needs control, en and zh")
        at = item.setdefault("screen", 1)
        if isinstance(at, bool) or not isinstance(at, int) or not 1 <= at <= n_screens:
            raise LessonError(f"{where}: look_at {item['control']!r} is on screen {at!r}, the lesson has {n_screens}")
    try:
        experiments = [parse_experiment(e) for e in data.get("experiments", [])]
    except (KeyError, TypeError, ValueError) as e:
        raise LessonError(f"{where}: experiment: {e}") from None
    for e in experiments:
        if not 1 <= e.screen <= n_screens:
            raise LessonError(f"{where}: experiment {e.id!r} is on screen {e.screen}, the lesson has {n_screens}")
    calib = data.get("calibration_screen", 0)
    if isinstance(calib, bool) or not isinstance(calib, int) or not 0 <= calib <= n_screens:
        raise LessonError(f"{where}: calibration_screen {calib!r} is not a screen of the lesson (1 … {n_screens})")
    return Lesson(number=number, slug=str(data["slug"]), title=_bilingual(data, "title", where), text=text,
                  preset=preset, look_at=look_at, checks=checks, experiments=experiments,
                  claims=list(data.get("claims", [])), inputs=_inputs(data.get("inputs", {}), where),
                  calibration_screen=calib)


def _inputs(data: Any, where: str) -> dict[str, str]:
    """``[inputs]``: each number the lesson sets or cites, with the reason it needs no test."""
    if not isinstance(data, dict) or not all(isinstance(r, str) and r.strip() for r in data.values()):
        raise LessonError(f"{where}: 'inputs' maps each number to a short reason")
    return {str(k): v for k, v in data.items()}


# A number in lesson text: digits with thousands commas, a decimal part and an exponent
# ("49,152", "0.0075", "1e-3"). Digits glued to a letter, a dot or a hyphen before them are part
# of a name ("SmolLM2", "Gemma-3", "V1", "pass@k"), not a quantity.
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.@^\-])(\d+(?:,\d{3})*(?:\.\d+)?(?:e[-−]\d+)?)(%?)(?![A-Za-z0-9_])")


def numbers_in(text: str) -> set[float]:
    """The numbers a text states, as values: signs dropped ("−20.9" and "20.9" are one claim),
    percentages as fractions ("41%" is 0.41).

    >>> sorted(numbers_in("SmolLM2 gives 0.60 vs 0.6; 49,152 tokens; p < 1e-3; 41%; pass@16; Gemma-3"))
    [0.001, 0.41, 0.6, 49152.0]
    """
    return {float(m.replace(",", "").replace("−", "-")) / (100 if pct else 1) for m, pct in _NUMBER.findall(text)}


def load_lessons(folder: Path | None = None) -> list[Lesson]:
    folder = folder or LESSON_DIR
    lessons = []
    for path in sorted(folder.glob("[0-9]*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise LessonError(f"{path.name}: {e}") from None
        lessons.append(parse_lesson(data, path.name))
    numbers = [lesson.number for lesson in lessons]
    if len(set(numbers)) != len(numbers):
        raise LessonError("two lessons share a number")
    return sorted(lessons, key=lambda lesson: lesson.number)


GLOSSARY = LESSON_DIR / "glossary.toml"


@dataclass(frozen=True)
class Term:
    en: str
    zh: str
    avoid: tuple[str, ...] = ()   # regular expressions: spellings Chinese text must not use


def load_glossary(path: Path | None = None) -> list[Term]:
    """The terms the lessons and the app share (``lessons/glossary.toml``)."""
    data = tomllib.loads((path or GLOSSARY).read_text(encoding="utf-8"))
    return [Term(t["en"], t["zh"], tuple(t.get("avoid", ()))) for t in data.get("terms", [])]
