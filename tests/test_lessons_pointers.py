""""What to look at": a pointer shows only once it can no longer give a prediction away. A screen
that asks for a prediction shows none until its experiment has run, and a pointer that belongs to
a screen with an experiment (it may state that experiment's result) waits for that run."""

from __future__ import annotations

import tomllib
from types import SimpleNamespace

import pytest

from decoding_lab.lessons import LESSON_DIR, LessonError, load_lessons, parse_lesson
from decoding_lab.ui.lessons.views import look_markdown, look_views

LESSONS = load_lessons()
BY_NUMBER = {les.number: les for les in LESSONS}


def run_key(les, exp) -> str:
    return f"{les.number}/{exp.id}"


def pointer_texts(les, lang: str) -> list[str]:
    return [item[lang] for item in les.look_at]


@pytest.mark.parametrize("lesson", LESSONS, ids=[les.slug for les in LESSONS])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_screen_that_asks_for_a_prediction_shows_no_pointer_before_the_run(lesson, lang):
    for exp in lesson.experiments:
        screen = exp.screen - 1
        others = {run_key(lesson, e): {"guess": "x"} for e in lesson.experiments if e is not exp}
        before = look_markdown(lesson, lang, screen, others)
        shown = [p for p in pointer_texts(lesson, lang) if p in before]
        assert not shown, f"{exp.id}: shown beside its question: {shown}"
        after = look_markdown(lesson, lang, screen, {**others, run_key(lesson, exp): {"guess": "x"}})
        for item in lesson.look_at:       # after the run, the screen's own pointers are there
            if item["screen"] == exp.screen:
                assert item[lang] in after


@pytest.mark.parametrize("lesson", LESSONS, ids=[les.slug for les in LESSONS])
def test_a_pointer_tied_to_an_experiment_waits_for_its_run_on_every_screen(lesson):
    n = len(lesson.screens("en"))
    every_run = {run_key(lesson, e): {"guess": "x"} for e in lesson.experiments}
    for item in lesson.look_at:
        own = lesson.experiment_on(item["screen"] - 1)
        for screen in range(n):
            if screen + 1 < item["screen"]:          # not before the screen it belongs to
                assert item["en"] not in look_markdown(lesson, "en", screen, every_run)
                continue
            if own is not None:
                without = {k: v for k, v in every_run.items() if k != run_key(lesson, own)}
                assert item["en"] not in look_markdown(lesson, "en", screen, without), (item["control"], screen)
            assert item["en"] in look_markdown(lesson, "en", screen, every_run), (item["control"], screen)


@pytest.mark.parametrize("lang,words", [("en", "parts from float32 at step 0"), ("zh", "在第 0 步就与 float32 分开")])
def test_lesson_10_does_not_name_the_two_engines_answer_before_the_prediction(lang, words):
    les = BY_NUMBER[10]
    exp = next(e for e in les.experiments if e.id == "same-gguf-first-token")
    assert any(words in item[lang] for item in les.look_at)
    before = look_markdown(les, lang, exp.screen - 1, {})
    assert words not in before and before            # the pane says the pointers come after the run
    assert words not in look_markdown(les, lang, len(les.screens(lang)) - 1, {})   # nor on a later screen
    after = look_markdown(les, lang, exp.screen - 1, {run_key(les, exp): {"guess": "same"}})
    assert words in after


def test_runs_of_another_lesson_do_not_release_pointers():
    les = BY_NUMBER[10]
    exp = next(e for e in les.experiments if e.id == "same-gguf-first-token")
    other = {f"{n}/{exp.id}": {} for n in BY_NUMBER if n != 10}
    assert "float32 at step 0" not in look_markdown(les, "en", exp.screen - 1, other)


def test_teacher_mode_hides_the_pane_and_an_empty_pane_hides():
    les = BY_NUMBER[10]
    exp = next(e for e in les.experiments if e.id == "same-gguf-first-token")
    ui = SimpleNamespace(look="look")
    ran = {run_key(les, exp): {"guess": "same"}}
    assert look_views(ui, les, "en", exp.screen - 1, ran, teacher=False)["look"]["visible"] is True
    assert look_views(ui, les, "en", exp.screen - 1, ran, teacher=True)["look"]["visible"] is False
    assert look_markdown(les, "en", 0, {}) == ""          # the first screen has nothing to point at yet
    assert look_views(ui, les, "en", 0, {}, teacher=False)["look"]["visible"] is False


def test_every_shipped_pointer_names_its_screen():
    for path in sorted(LESSON_DIR.glob("[0-9]*.toml")):
        for item in tomllib.loads(path.read_text(encoding="utf-8")).get("look_at", []):
            assert "screen" in item, f"{path.name}: look_at {item['control']!r} names no screen"


def test_a_pointer_on_a_screen_the_lesson_lacks_is_refused():
    good = {"number": 1, "slug": "x", "title": {"en": "a", "zh": "b"}, "text": {"en": "a\n---\nb", "zh": "a\n---\nb"},
            "preset": {"tab": "explorer"},
            "checks": [{"question": {"en": "q", "zh": "q"},
                        "choices": [{"en": "a", "zh": "a", "right": True, "why": {"en": "e", "zh": "e"}},
                                    {"en": "b", "zh": "b", "why": {"en": "e", "zh": "e"}}]}]}
    look = {"control": "c", "en": "e", "zh": "z"}
    assert parse_lesson({**good, "look_at": [look]}).look_at[0]["screen"] == 1
    assert parse_lesson({**good, "look_at": [{**look, "screen": 2}]}).look_at[0]["screen"] == 2
    for bad in (0, 3, "2", True):
        with pytest.raises(LessonError, match="screen"):
            parse_lesson({**good, "look_at": [{**look, "screen": bad}]})
