"""Guided lessons: text (English and Chinese), a preset, pointers and a question.

Lessons are data files in ``lessons/NN_slug.toml`` (read with the standard library's
``tomllib``). A lesson's text is Markdown; ``---`` on its own line separates the
screens that teacher mode shows one at a time. ``claims`` name the quantitative
statements a lesson makes about a live model; each one is checked by a test on that
model (``tests/test_lessons_claims.py``), and the test suite fails if a claim has no check.

Schema (every text field has ``en`` and ``zh``)::

    number = 3
    slug = "temperature"
    title = {en = "...", zh = "..."}
    text = {en = "...", zh = "..."}
    [preset]            # what one click loads
    tab = "explorer"    # explorer | compare | beam | grammar | multisample
    model = "smollm2-135m-instruct"
    prompt = "..."
    chat = true
    steps = 6           # explorer: steps to run after loading
    settings = {temperature = 0.7}
    [[look_at]]         # pointers tied to controls on screen
    control = "temperature"
    en = "..."
    zh = "..."
    [quiz]
    question = {en = "...", zh = "..."}
    choices = {en = ["...", "..."], zh = ["...", "..."]}
    answer = 1          # index into choices
    explain = {en = "...", zh = "..."}
    [[claims]]
    id = "entropy-rises-with-T"
    en = "..."
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decoding_lab.errors import UserError
from decoding_lab.settings import SamplingSettings

LESSON_DIR = Path(__file__).resolve().parent.parent / "lessons"
LANGS = ("en", "zh")
TABS = ("explorer", "compare", "beam", "grammar", "multisample", "determinism")


class LessonError(UserError, ValueError):
    """A lesson file is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: dict[str, str]
    text: dict[str, str]
    preset: dict[str, Any]
    look_at: list[dict[str, str]]
    quiz: dict[str, Any]
    claims: list[dict[str, str]] = field(default_factory=list)

    def screens(self, lang: str) -> list[str]:
        """The text split into teacher-mode screens (one idea each)."""
        return [s.strip() for s in self.text[lang].split("\n---\n") if s.strip()]

    def settings(self) -> SamplingSettings:
        return SamplingSettings.from_json(self.preset.get("settings", {}))

    def check_answer(self, choice: int) -> bool:
        return int(choice) == int(self.quiz["answer"])


def _bilingual(data: dict, key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict) or any(lang not in value or not value[lang] for lang in LANGS):
        raise LessonError(f"{where}: '{key}' needs both 'en' and 'zh'")
    return value


def parse_lesson(data: dict, where: str = "lesson") -> Lesson:
    for key in ("number", "slug", "preset", "quiz"):
        if key not in data:
            raise LessonError(f"{where}: missing '{key}'")
    preset = dict(data["preset"])
    if preset.get("tab", "explorer") not in TABS:
        raise LessonError(f"{where}: preset.tab must be one of {', '.join(TABS)}")
    try:
        SamplingSettings.from_json(preset.get("settings", {}))
    except ValueError as e:
        raise LessonError(f"{where}: preset.settings: {e}") from None
    quiz = dict(data["quiz"])
    _bilingual(quiz, "question", f"{where} quiz")
    choices = _bilingual(quiz, "choices", f"{where} quiz")
    _bilingual(quiz, "explain", f"{where} quiz")
    if len(choices["en"]) != len(choices["zh"]) or not 0 <= int(quiz.get("answer", -1)) < len(choices["en"]):
        raise LessonError(f"{where}: quiz choices differ between languages or the answer index is out of range")
    look_at = list(data.get("look_at", []))
    for item in look_at:
        if not all(k in item for k in ("control", *LANGS)):
            raise LessonError(f"{where}: every look_at needs control, en and zh")
    return Lesson(number=int(data["number"]), slug=str(data["slug"]), title=_bilingual(data, "title", where),
                  text=_bilingual(data, "text", where), preset=preset, look_at=look_at, quiz=quiz,
                  claims=list(data.get("claims", [])))


def load_lessons(folder: Path | None = None) -> list[Lesson]:
    folder = folder or LESSON_DIR
    lessons = []
    for path in sorted(folder.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise LessonError(f"{path.name}: {e}") from None
        lessons.append(parse_lesson(data, path.name))
    numbers = [lesson.number for lesson in lessons]
    if len(set(numbers)) != len(numbers):
        raise LessonError("two lessons share a number")
    return sorted(lessons, key=lambda lesson: lesson.number)
