"""The learner's own calibration (``decoding_lab.learner_calibration``): the Brier score's anchors,
one record per experiment (the first attempt), only well-formed records from the browser, a number
counted right within a quarter, and a lesson's calibration screen checked when the file is read."""

from __future__ import annotations

import pytest

from decoding_lab import learner_calibration as LC
from decoding_lab.lessons import LessonError, load_lessons, parse_lesson


def _records(pairs):
    return [{"k": f"x/{i}", "c": c, "ok": ok} for i, (c, ok) in enumerate(pairs)]


def test_brier_is_zero_for_a_sure_and_right_forecaster_and_a_quarter_for_always_half():
    assert LC.brier(_records([(0.9, True)] * 3)) == pytest.approx(0.01)
    assert LC.brier(_records([(0.5, True), (0.5, False), (0.5, False)])) == pytest.approx(0.25)
    assert LC.brier(_records([(0.9, False)])) == pytest.approx(0.81)
    assert LC.brier([]) is None


def test_each_level_reports_its_share_right():
    pts = LC.by_confidence(_records([(0.7, True), (0.7, True), (0.7, False), (0.33, False)]))
    assert pts == [(0.33, 1, 0.0), (0.7, 3, pytest.approx(2 / 3))]


def test_the_first_attempt_stands_and_missing_parts_add_nothing():
    r = LC.record(None, "3/ratio-law", "0.9", False)
    assert r == [{"k": "3/ratio-law", "c": 0.9, "ok": False}]
    assert LC.record(r, "3/ratio-law", 0.33, True) == r          # a second run after seeing the answer
    assert LC.record(r, "4/tail-mass", None, True) == r          # no confidence given
    assert LC.record(r, "4/tail-mass", 0.75, True) == r          # not one of the levels offered
    assert LC.record(r, "4/tail-mass", 0.5, None) == r           # no verdict (nothing to compare)
    assert len(LC.record(r, "4/tail-mass", 0.5, True)) == 2


def test_what_the_browser_sends_is_kept_only_when_well_formed():
    sent = [{"k": "1/a", "c": 0.5, "ok": True}, {"k": "1/b", "c": "0.5", "ok": "yes"}, {"k": 7, "c": 0.5, "ok": True},
            {"k": "x" * 65, "c": 0.5, "ok": True}, None, {"k": "1/c", "c": float("nan"), "ok": False}]
    assert LC.clean(sent) == [{"k": "1/a", "c": 0.5, "ok": True}]
    many = _records([(0.5, True)] * (LC.MAX_RECORDS + 50))
    assert len(LC.clean(many)) == LC.MAX_RECORDS


@pytest.mark.parametrize("guess, value, right", [(500, 500, True), (380, 500, True), (370, 500, False),
                                                 (0.5, 0.64, True), (0.4, 0.64, False), ("abc", 1, None),
                                                 (float("inf"), 1, None)])
def test_a_number_is_right_within_a_quarter_of_the_result(guess, value, right):
    assert LC.number_right(guess, value) is right


def test_lesson_11_shows_the_learners_calibration_and_a_bad_screen_is_refused():
    les = {x.number: x for x in load_lessons()}
    assert les[11].calibration_screen >= 1
    assert sum(1 for x in les.values() if x.calibration_screen) == 1
    data = {"number": 99, "slug": "x", "title": {"en": "x", "zh": "x"}, "text": {"en": "one", "zh": "一"},
            "preset": {}, "checks": [{"question": {"en": "q", "zh": "q"},
                                      "choices": [{"en": "a", "zh": "a", "right": True, "why": {"en": "w", "zh": "w"}},
                                                  {"en": "b", "zh": "b", "why": {"en": "w", "zh": "w"}}]}]}
    parse_lesson(dict(data, calibration_screen=1))
    for bad in (2, -1, True, "1"):
        with pytest.raises(LessonError, match="calibration_screen"):
            parse_lesson(dict(data, calibration_screen=bad))
