"""The classroom core on its own (no app): codes, joining, pushing, answering, rounds, reveal,
limits, expiry, and the CSV that leaves no student in it."""

from __future__ import annotations

import csv
import io

import pytest

from decoding_lab.classroom import RoomError, RoomHall, RoomLimits, parse_code, questions_on, to_csv
from decoding_lab.classroom.codes import ALPHABET, CODE_BITS, new_code
from decoding_lab.classroom.questions import Question, right_after_run
from decoding_lab.classroom.tally import rounds_of
from decoding_lab.lessons import load_lessons
from decoding_lab.limits import Limits

CHOICE = Question("check:9.1", "choice", {"en": "Which?", "zh": "哪个？"}, [{"en": "a"}, {"en": "b"}, {"en": "c"}],
                  ["0", "1", "2"], right=2, lesson=9, screen=3)
NUMBER = Question("predict:n", "number", {"en": "How many?"}, lesson=9, screen=1)


def opened(**limits):
    hall = RoomHall(RoomLimits(**limits))
    room = hall.open(now=0.0)
    return hall, room


def test_a_code_has_forty_random_bits_and_reads_back_however_it_is_typed():
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(len(c) == 8 and set(c) <= set(ALPHABET) for c in codes)
    assert CODE_BITS == 40 and len(ALPHABET) ** 8 == 2 ** 40
    # every character of the alphabet turns up in each place (a biased generator would not)
    assert all({c[i] for c in codes} == set(ALPHABET) for i in range(8))
    code = next(iter(codes))
    for typed in (code.lower(), f"{code[:4]}-{code[4:]}", f" {code[:4]} {code[4:]} "):
        assert parse_code(typed) == code
    for bad in ("", "ABC", code + "0", code[:7] + "U", None, 12345678, "x" * 100):
        assert parse_code(bad) is None


def test_a_room_goes_through_a_whole_question_with_two_rounds_and_a_reveal():
    hall, room = opened()
    students = [hall.join(room.code.lower(), client=f"10.0.0.{i}", nickname=f"s{i}", now=1.0) for i in range(4)]
    assert len(set(students)) == 4
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=2.0)
    v = hall.view(room.code, now=2.0)
    assert (v.lesson, v.screen, v.asked) == (9, 3, CHOICE.key)
    for sid, choice in zip(students, (0, 0, 1, 2)):
        hall.answer(room.code, sid, CHOICE.key, choice, confidence=2, now=3.0)
    hall.answer(room.code, students[0], CHOICE.key, 2, now=3.5)       # a change replaces, it does not add
    first = rounds_of(hall.view(room.code, now=4.0), CHOICE.key)
    assert [t.counts for t in first] == [[1, 1, 2]] and first[0].n == 4
    assert hall.next_round(room.code, room.secret, now=5.0) == 2
    for sid in students:
        hall.answer(room.code, sid, CHOICE.key, 2, confidence=3, now=6.0)
    both = rounds_of(hall.view(room.code, now=6.0), CHOICE.key)
    assert [t.counts for t in both] == [[1, 1, 2], [0, 0, 4]]
    assert both[1].confidence == [None, None, 3.0]
    hall.reveal(room.code, room.secret, {"right": 2}, now=7.0)
    assert hall.view(room.code, now=7.0).revealed[CHOICE.key] == {"right": 2}


def test_the_csv_has_counts_per_round_and_no_student_in_it():
    hall, room = opened()
    sids = [hall.join(room.code, client="c", nickname="Nick" + str(i), now=1.0) for i in range(3)]
    hall.push(room.code, room.secret, 9, 1, [NUMBER], now=1.0)
    for sid, x in zip(sids, (3, 3, 40)):
        hall.answer(room.code, sid, NUMBER.key, x, now=2.0)
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=3.0)
    hall.answer(room.code, sids[0], CHOICE.key, 2, confidence=1, now=4.0)
    view = hall.view(room.code, now=5.0)
    text = to_csv(view, right={CHOICE.key: 2})
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["question"], r["answer"], r["count"]) for r in rows] == [
        ("predict:n", "3", "2"), ("predict:n", "40", "1"),
        ("check:9.1", "a", "0"), ("check:9.1", "b", "0"), ("check:9.1", "c", "1")]
    assert rows[-1]["right"] == "yes" and rows[-1]["mean_confidence"] == "1.0" and rows[2]["right"] == "no"
    for secret in (*sids, "Nick0", "Nick1", room.secret):
        assert secret not in text


def test_only_the_teachers_secret_pushes_reveals_or_closes_and_a_refusal_changes_nothing():
    hall, room = opened()
    sid = hall.join(room.code, client="c", now=1.0)
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=1.0)
    before = hall.view(room.code, now=1.0)
    for call in (lambda s: hall.push(room.code, s, 9, 1, [NUMBER], now=2.0),
                 lambda s: hall.reveal(room.code, s, {"right": 0}, now=2.0),
                 lambda s: hall.next_round(room.code, s, now=2.0),
                 lambda s: hall.close(room.code, s, now=2.0)):
        for wrong in (sid, room.code, "", None, room.secret[:-1]):
            with pytest.raises(RoomError, match="only the browser that opened this class"):
                call(wrong)
    after = hall.view(room.code, now=2.0)
    assert (after.version, after.screen, after.revealed, after.rounds) == \
        (before.version, before.screen, before.revealed, before.rounds)


@pytest.mark.parametrize("value,message", [(3, "one of the question's 3 choices"), (-1, "3 choices"),
                                           ("b", "3 choices"), (1.0, "3 choices"), (True, "3 choices"),
                                           ([1], "3 choices")])
def test_an_answer_out_of_range_is_refused_and_counts_nothing(value, message):
    hall, room = opened()
    sid = hall.join(room.code, client="c", now=1.0)
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=1.0)
    with pytest.raises(RoomError, match=message):
        hall.answer(room.code, sid, CHOICE.key, value, now=2.0)
    assert rounds_of(hall.view(room.code, now=2.0), CHOICE.key)[0].n == 0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e13, "12abc", None, True])
def test_a_number_answer_must_be_finite_and_bounded(value):
    hall, room = opened()
    sid = hall.join(room.code, client="c", now=1.0)
    hall.push(room.code, room.secret, 9, 1, [NUMBER], now=1.0)
    with pytest.raises(RoomError, match="must be a number between"):
        hall.answer(room.code, sid, NUMBER.key, value, now=2.0)
    hall.answer(room.code, sid, NUMBER.key, "2.5", now=2.0)
    assert rounds_of(hall.view(room.code, now=2.0), NUMBER.key)[0].values == [2.5]


def test_confidence_is_one_two_three_or_left_out():
    hall, room = opened()
    sid = hall.join(room.code, client="c", now=1.0)
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=1.0)
    for bad in (0, 4, "sure", 2.5):
        with pytest.raises(RoomError, match="confidence must be 1, 2 or 3"):
            hall.answer(room.code, sid, CHOICE.key, 1, confidence=bad, now=2.0)
    hall.answer(room.code, sid, CHOICE.key, 1, confidence="", now=2.0)


def test_answers_only_reach_the_question_asked_now_from_a_member():
    hall, room = opened()
    sid = hall.join(room.code, client="c", now=1.0)
    hall.push(room.code, room.secret, 9, 1, [NUMBER], now=1.0)
    with pytest.raises(RoomError, match="not open now"):
        hall.answer(room.code, sid, CHOICE.key, 1, now=2.0)
    with pytest.raises(RoomError, match="no longer in this class"):
        hall.answer(room.code, "made-up", NUMBER.key, 1, now=2.0)
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=3.0)    # the teacher moves on
    with pytest.raises(RoomError, match="not open now"):
        hall.answer(room.code, sid, NUMBER.key, 1, now=4.0)


def test_the_limits_rooms_students_answers_rounds_and_wrong_codes():
    hall = RoomHall(RoomLimits(max_rooms=2, students=2, answers=3, wrong_codes=3))
    rooms = [hall.open(now=0.0), hall.open(now=0.0)]
    with pytest.raises(RoomError, match="2 classes are open.*DECODING_LAB_MAX_ROOMS"):
        hall.open(now=0.0)
    room = rooms[0]
    a = hall.join(room.code, client="x", now=1.0)
    hall.join(room.code, client="x", now=1.0)
    with pytest.raises(RoomError, match="already has 2 students.*DECODING_LAB_ROOM_STUDENTS"):
        hall.join(room.code, client="x", now=1.0)
    assert hall.join(room.code, client="x", previous=a, now=1.0) == a   # a reloaded page gets its place back
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=1.0)
    for i in range(3):
        hall.answer(room.code, a, CHOICE.key, i, now=2.0)
    with pytest.raises(RoomError, match="changed this answer 3 times.*DECODING_LAB_ROOM_ANSWERS"):
        hall.answer(room.code, a, CHOICE.key, 0, now=2.0)
    assert rounds_of(hall.view(room.code, now=2.0), CHOICE.key)[0].counts == [0, 0, 1]
    assert hall.next_round(room.code, room.secret, now=2.0) == 2
    assert hall.next_round(room.code, room.secret, now=2.0) == 3
    with pytest.raises(RoomError, match="3 rounds"):
        hall.next_round(room.code, room.secret, now=2.0)
    # wrong codes: counted per client, refused past the limit even for a right one; others unaffected
    other = "ZZZZZZZZ" if room.code != "ZZZZZZZZ" else "YYYYYYYY"
    for _ in range(3):
        with pytest.raises(RoomError, match="no open class has the code"):
            hall.join(other, client="guesser", now=10.0)
    with pytest.raises(RoomError, match="too many wrong class codes"):
        hall.join(rooms[1].code, client="guesser", now=20.0)
    hall.join(rooms[1].code, client="teacher-of-b", now=20.0)
    hall.join(rooms[1].code, client="guesser", now=71.0)               # a minute later it may try again
    with pytest.raises(RoomError, match="not a class code"):
        hall.join("hello", client="x", now=1.0)


def test_an_idle_room_is_forgotten_with_its_answers_and_a_closed_one_at_once():
    hall, room = opened(idle_s=60.0)
    sid = hall.join(room.code, client="c", now=30.0)
    hall.push(room.code, room.secret, 9, 3, [CHOICE], now=30.0)
    hall.answer(room.code, sid, CHOICE.key, 1, now=80.0)     # an answer keeps it alive
    assert hall.versions(room.code, now=139.0) is not None
    assert hall.versions(room.code, now=141.0) is None and len(hall) == 0
    with pytest.raises(RoomError, match="no open class"):
        hall.answer(room.code, sid, CHOICE.key, 1, now=142.0)
    hall, room = opened()
    hall.close(room.code, room.secret, now=1.0)
    assert hall.versions(room.code, now=1.0) is None


def test_the_room_limits_come_from_the_environment():
    lim = Limits.from_env({"DECODING_LAB_MAX_ROOMS": "3", "DECODING_LAB_ROOM_IDLE": "90.5",
                           "DECODING_LAB_ROOM_STUDENTS": "7", "DECODING_LAB_ROOM_WRONG_CODES": "4",
                           "DECODING_LAB_ROOM_ANSWERS": "2", "DECODING_LAB_ROOM_FOLLOWERS": "9"})
    assert RoomLimits.from_limits(lim) == RoomLimits(max_rooms=3, students=7, idle_s=90.5, wrong_codes=4,
                                                     answers=2, followers=9)


def test_every_lesson_screen_asks_its_prediction_and_the_last_its_checks():
    lessons = load_lessons()
    asked = 0
    for les in lessons:
        last = len(les.screens("en")) - 1
        for screen in range(last + 1):
            qs = questions_on(les, screen)
            exp = les.experiment_on(screen)
            assert [q.key for q in qs if q.key.startswith("predict:")] == ([f"predict:{exp.id}"] if exp else [])
            assert len([q for q in qs if q.key.startswith("check:")]) == (len(les.checks) if screen == last else 0)
            for q in qs:
                assert q.text["en"] and q.text["zh"]
                assert q.kind == "number" or (len(q.choices) >= 2 and all(c["en"] and c["zh"] for c in q.choices))
            asked += len(qs)
    assert asked >= len(lessons)


def test_a_predictions_right_choice_comes_from_the_experiments_own_verdict():
    les = next(l for l in load_lessons() if any(e.predict.kind in ("min", "max") for e in l.experiments))
    exp = next(e for e in les.experiments if e.predict.kind in ("min", "max"))
    q = questions_on(les, exp.screen - 1)[0]
    values = {v.key: float(i) for i, v in enumerate(exp.variants)}    # the last variant is the largest
    right = right_after_run(les, q, values)
    assert right == (0 if exp.predict.kind == "min" else len(exp.variants) - 1)
    assert right_after_run(les, q, None) is None


def test_live_views_are_counted_and_refused_past_their_cap():
    hall = RoomHall(RoomLimits(followers=2))
    assert hall.follow_start() and hall.follow_start()
    assert not hall.follow_start() and hall.followers == 2
    hall.follow_end()
    assert hall.follow_start()
    for _ in range(5):
        hall.follow_end()
    assert hall.followers == 0


def test_the_app_reserves_a_worker_for_each_live_view(monkeypatch):
    from decoding_lab.ui.page import launch_kwargs
    monkeypatch.setenv("DECODING_LAB_ROOM_FOLLOWERS", "7")
    assert launch_kwargs()["max_threads"] == 47
