"""Lesson files: schema, both languages, presets that build valid settings, a check per claim."""

from __future__ import annotations

import pytest

from decoding_lab.lessons import LessonError, load_lessons, parse_lesson
from decoding_lab.settings import SamplingSettings

LESSONS = load_lessons()


def test_lessons_load_and_are_numbered():
    assert len(LESSONS) >= 1
    numbers = [lesson.number for lesson in LESSONS]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_lesson_is_complete_in_both_languages(lesson):
    for lang in ("en", "zh"):
        assert lesson.title[lang].strip()
        assert len(lesson.screens(lang)) >= 2, "teacher mode needs at least two screens"
        for check in lesson.checks:
            assert check.question[lang].strip() and all(c.text[lang].strip() and c.why[lang].strip()
                                                         for c in check.choices)
    assert len(lesson.screens("en")) == len(lesson.screens("zh")), "screens must line up across languages"
    assert isinstance(lesson.settings(), SamplingSettings)
    assert lesson.look_at, "a lesson points at something on screen"
    for i, check in enumerate(lesson.checks):
        assert lesson.check_answer(i, check.answer)
        assert not any(lesson.check_answer(i, j) for j in range(len(check.choices)) if j != check.answer)


def test_every_claim_has_a_live_check():
    from test_lessons_claims import CHECKS
    claimed = {c["id"] for lesson in LESSONS for c in lesson.claims}
    missing = claimed - set(CHECKS)
    assert not missing, f"claims without a test on the live model: {sorted(missing)}"


def test_malformed_lessons_are_refused():
    good = {"number": 1, "slug": "x", "title": {"en": "a", "zh": "b"}, "text": {"en": "a", "zh": "b"},
            "preset": {"tab": "explorer"},
            "checks": [{"question": {"en": "q", "zh": "q"},
                        "choices": [{"en": "a", "zh": "a", "right": True, "why": {"en": "e", "zh": "e"}},
                                    {"en": "b", "zh": "b", "why": {"en": "e", "zh": "e"}}]}]}
    parse_lesson(good)
    with pytest.raises(LessonError, match="zh"):
        parse_lesson({**good, "title": {"en": "only english"}})
    with pytest.raises(LessonError, match="tab"):
        parse_lesson({**good, "preset": {"tab": "nowhere"}})
    with pytest.raises(LessonError, match="settings"):
        parse_lesson({**good, "preset": {"settings": {"top_p": 7}}})
    two_right = [{**c, "right": True} for c in good["checks"][0]["choices"]]
    with pytest.raises(LessonError, match="right answer"):
        parse_lesson({**good, "checks": [{**good["checks"][0], "choices": two_right}]})
    with pytest.raises(LessonError, match="why"):
        parse_lesson({**good, "checks": [{**good["checks"][0], "choices": [{"en": "a", "zh": "a", "right": True}]}]})
