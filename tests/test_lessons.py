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
    from test_lessons_claims import CHECKS, CHECKED_BY_A_SERVER_TEST
    claimed = {c["id"] for lesson in LESSONS for c in lesson.claims}
    missing = claimed - set(CHECKS) - set(CHECKED_BY_A_SERVER_TEST)
    assert not missing, f"claims without a test on the live model: {sorted(missing)}"
    for claim, where in CHECKED_BY_A_SERVER_TEST.items():   # the named test exists
        module, name = where.split("::")
        assert callable(getattr(__import__(module), name, None)), (claim, where)


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


# ----------------------------------------------------------------------------- checks that teach
CHECKS = [c for lesson in LESSONS for c in lesson.checks]


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_each_lesson_has_two_checks_one_of_them_transfer(lesson):
    assert len(lesson.checks) >= 2 and any(c.transfer for c in lesson.checks)
    for check in lesson.checks:
        for lang in ("en", "zh"):   # feedback written for each choice, not one text for all
            whys = [c.why[lang] for c in check.choices]
            assert len(set(whys)) == len(whys), f"{check.id}: two choices share their feedback"


def test_no_answer_position_holds_more_than_a_third_of_the_right_answers():
    from collections import Counter
    positions = Counter(c.answer for c in CHECKS)
    assert max(positions.values()) <= len(CHECKS) / 3, positions


def test_choices_are_balanced_in_length():
    """The right answer must not give itself away by being the long, careful one."""
    longest = 0
    for check in CHECKS:
        for lang in ("en", "zh"):
            lengths = [len(c.text[lang]) for c in check.choices]
            assert max(lengths) <= 2 * min(lengths), f"{check.id} ({lang}): choice lengths {lengths}"
        en = [len(c.text["en"]) for c in check.choices]
        longest += en[check.answer] == max(en) and en.count(max(en)) == 1
    assert longest <= len(CHECKS) / 3, f"the right answer is the longest choice in {longest} of {len(CHECKS)} checks"


def _width(text: str) -> int:
    """How wide a choice reads on screen: a Chinese character takes two columns, a Latin one."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def test_the_right_answer_is_never_visibly_the_longest():
    """Where the right answer is the longest choice, it is so by a hair (at most 15% wider than the
    widest wrong one, in either language), so length never points at it."""
    assert _width("中a") == 3
    for check in CHECKS:
        for lang in ("en", "zh"):
            right = _width(check.choices[check.answer].text[lang])
            other = max(_width(c.text[lang]) for i, c in enumerate(check.choices) if i != check.answer)
            assert right <= 1.15 * other, f"{check.id} ({lang}): right answer {right} wide, longest wrong one {other}"


def test_choices_are_shuffled_per_learner():
    check = LESSONS[0].checks[0]
    orders = {tuple(check.order(f"learner-{i}")) for i in range(40)}
    assert len(orders) > 1 and all(sorted(o) == list(range(len(check.choices))) for o in orders)
    assert check.order("same") == check.order("same")   # stable for one learner across reloads
    first = [check.order(f"learner-{i}").index(check.answer) for i in range(600)]
    share = [first.count(p) / len(first) for p in range(len(check.choices))]
    assert all(abs(s - 1 / len(share)) < 0.07 for s in share), share


def test_progress_counts_checks_passed_not_lessons_opened():
    from decoding_lab.ui.lessons import checks as C
    from decoding_lab.ui.lessons.views import picker_choices
    les = LESSONS[0]
    check = les.checks[0]
    wrong = next(i for i in range(len(check.choices)) if i != check.answer)
    msg, passed = C.answer(les, 0, wrong, "en", [])
    assert passed == [] and check.choices[wrong].why["en"] in msg
    msg, passed = C.answer(les, 0, check.answer, "zh", passed)
    assert passed == [check.id] and check.choices[check.answer].why["zh"] in msg
    assert not picker_choices(LESSONS, "en", passed)[0][0].startswith("✓")   # one check of several
    all_ids = [c.id for c in les.checks]
    assert picker_choices(LESSONS, "en", all_ids)[0][0].startswith("✓")


# ----------------------------------------------------------------------------- every number backed
def _backed_numbers(lesson) -> set[float]:
    """What a lesson may quote: its registered claims (each has a test, see above), the values and
    settings of its experiments (tested in test_lessons_claims.py) and its listed inputs."""
    from decoding_lab.lessons import numbers_in
    backed = set().union(*(numbers_in(x) for x in lesson.inputs))
    for claim in lesson.claims:
        backed |= numbers_in(claim["en"])
    for exp in lesson.experiments:
        values = [*exp.expect.values(), *exp.settings.values()]
        for v in exp.variants:
            values += [*v.settings.values(), *v.options.values()]
        backed |= {abs(float(x)) for x in values if isinstance(x, (int, float)) and not isinstance(x, bool)}
        backed |= {abs(float(format(x, exp.fmt))) for x in exp.expect.values()
                   if isinstance(x, (int, float)) and not isinstance(x, bool)}
    return backed


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_every_number_in_the_text_has_a_tested_claim(lesson):
    """A number in the text (English or Chinese) that no claim, experiment or listed input backs
    fails here: add a claim with a test, list it as an input with its reason, or take it out."""
    from decoding_lab.lessons import numbers_in
    backed = _backed_numbers(lesson)
    for lang in ("en", "zh"):
        loose = sorted(n for n in numbers_in(lesson.text[lang]) if not any(abs(n - b) < 1e-9 for b in backed))
        assert not loose, f"lesson {lesson.number} ({lang}): numbers with no claim or listed input: {loose}"


def test_inputs_need_a_reason():
    good = {"number": 1, "slug": "x", "title": {"en": "a", "zh": "b"}, "text": {"en": "a", "zh": "b"},
            "preset": {"tab": "explorer"},
            "checks": [{"question": {"en": "q", "zh": "q"},
                        "choices": [{"en": "a", "zh": "a", "right": True, "why": {"en": "e", "zh": "e"}},
                                    {"en": "b", "zh": "b", "why": {"en": "e", "zh": "e"}}]}]}
    assert parse_lesson({**good, "inputs": {"0.7": "the temperature set"}}).inputs == {"0.7": "the temperature set"}
    with pytest.raises(LessonError, match="reason"):
        parse_lesson({**good, "inputs": ["0.7"]})


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_chinese_has_no_stray_spaces_between_characters(lesson):
    """A space between two Chinese characters is a line-wrap or substitution leftover ("同一个 批次 上")."""
    import re
    texts = [lesson.text["zh"], lesson.title["zh"], *(x["zh"] for x in lesson.look_at)]
    for text in texts:
        stray = re.findall(r"[\u4e00-\u9fff，。；：、）][ ]+[\u4e00-\u9fff，。；：、（]", text)
        assert not stray, f"lesson {lesson.number}: {stray}"


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_listed_inputs_are_used(lesson):
    """No stale entries: every number a lesson lists as an input appears in its text."""
    from decoding_lab.lessons import numbers_in
    used = numbers_in(lesson.text["en"]) | numbers_in(lesson.text["zh"])
    for key in lesson.inputs:
        assert numbers_in(key) <= used, f"lesson {lesson.number}: input {key!r} is not in the text"


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_every_lesson_asks_for_a_prediction_before_an_experiment(lesson):
    """Each lesson has at least one screen experiment, and each experiment asks its question before
    it runs (a number, a choice or which variant is largest / smallest)."""
    assert lesson.experiments, f"lesson {lesson.number} has no experiment to predict"
    for exp in lesson.experiments:
        assert exp.predict.question["en"] and exp.predict.question["zh"], exp.id
        if exp.predict.kind == "value":
            assert {str(c["value"]) for c in exp.predict.choices} >= {str(exp.expect[exp.predict.of])}, exp.id


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_chinese_lines_break_where_a_space_does_no_harm(lesson):
    """Markdown turns a line break into a space: in Chinese one must not fall between two characters
    ("思考模式下 给出"), and bold must close where Markdown can see it close (not "**…。**推")."""
    import re
    zh = lesson.text["zh"]
    assert not re.findall(r"[\u4e00-\u9fff]\n[\u4e00-\u9fff“]", zh), lesson.number
    assert not re.findall(r"\*\*[^*\n]+[。）：，]\*\*[\u4e00-\u9fff]", zh), lesson.number


def test_chinese_screens_show_no_space_after_a_full_width_mark():
    """The source wraps Chinese after ，。； and the like; the screen joins those lines, since
    Markdown would show each break as a space ("打分， 再给")."""
    from decoding_lab.ui.lessons.views import screen_markdown
    les = next(x for x in LESSONS if x.number == 13)
    assert "打分，\n再给" in les.screens("zh")[0]
    text, _ = screen_markdown(les, "zh", 0)
    assert "打分，再给" in text and "\n\n" in text           # paragraph breaks stay


def test_a_decode_experiment_shows_the_texts_it_wrote_folded_and_escaped():
    from decoding_lab.ui.lessons.views import texts_block
    exp = next(e for les in LESSONS for e in les.experiments if e.id == "greedy-loop")
    run = {"texts": {"greedy": "Rome <b>was</b>\nbuilt", "sample": "Rome grew."}}
    block = texts_block(exp, run, "en", "en")
    assert block.startswith("<details>") and "&lt;b&gt;was&lt;/b&gt;<br>built" in block
    assert block.index("greedy") < block.index("one sample") and "Rome grew." in block
    assert texts_block(exp, {}, "zh", "zh") == ""


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: str(les.number))
def test_a_screen_break_stands_on_its_own_line(lesson):
    """Screens split on a line holding only '---': one glued to a sentence would merge two screens
    and print the dashes; the same number of screens in both languages."""
    from pathlib import Path
    folder = Path(__file__).resolve().parents[1] / "lessons"
    raw = next(folder.glob(f"{lesson.number:02d}_*.toml")).read_text(encoding="utf-8")
    glued = [line for line in raw.splitlines() if "---" in line and line.strip() != "---"]
    assert not glued, glued
    assert len(lesson.screens("en")) == len(lesson.screens("zh"))
    assert not any("---" in screen for lang in ("en", "zh") for screen in lesson.screens(lang))
