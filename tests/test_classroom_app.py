"""The class room through the API (gradio_client sessions on the shared app): a student follows
the room the way a browser does, and whatever a student sends outside the rules (a wrong code, a
choice the question does not have, a flood of changed answers, a teacher's click from a session
that did not open the class) gets one line and changes nothing the teacher sees."""

from __future__ import annotations

import csv
import io
import re
import time

import pytest
from gradio_client import Client

from decoding_lab.lessons import load_lessons

#: lesson 5's first check: asked on its last screen (whose prediction wants a number), three choices
CHECK = next(les for les in load_lessons() if les.number == 5).checks[0]

pytestmark = pytest.mark.app


def words(out) -> str:
    return " ".join(str(x) for x in (out if isinstance(out, (list, tuple)) else [out]))


def csv_rows(teacher: Client) -> list[dict]:
    update = teacher.predict(api_name="/class_csv")[0]    # the file, shown: {"value": path, "visible": True}
    path = update["value"] if isinstance(update, dict) else update
    return list(csv.DictReader(io.StringIO(open(path, encoding="utf-8").read())))


def wait_for(fn, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError("timed out")


def test_a_class_over_the_api_refuses_what_breaks_the_rules(app_url):
    teacher = Client(app_url, verbose=False)
    kw = {"done": [], "learner": "t", "teacher": True}
    teacher.predict(pick=5, **kw, api_name="/lesson_open")
    for _ in range(2):                                   # lesson 5's last screen: a prediction and two checks
        teacher.predict(**kw, api_name="/lesson_next")
    opened = words(teacher.predict("http://127.0.0.1/", api_name="/class_open"))
    code = re.search(r"\?room=([0-9A-Z]{4}-[0-9A-Z]{4})", opened).group(1)

    student = Client(app_url, verbose=False)
    assert "no open class has the code" in words(student.predict("ZZZZ-ZZZZ", "", api_name="/class_join"))
    assert "not a class code" in words(student.predict("<script>", "", api_name="/class_join"))
    assert "⚠" not in words(student.predict(code.lower(), "Ada", api_name="/class_join"))
    teacher.predict("check:5.1", api_name="/class_ask")    # a question with choices (the screen's prediction is a number)
    follow = student.submit(api_name="/class_follow")    # the room's stream: the question and its choices
    wait_for(lambda: any(CHECK.question["en"][:30] in words(o) for o in follow.outputs()))

    # a choice the question does not have: refused before it is counted
    with pytest.raises(Exception, match="not in the list of choices|one of the question's"):
        student.predict(7, None, None, api_name="/class_answer")
    assert "✔" in words(student.predict(1, None, 2, api_name="/class_answer"))
    for _ in range(9):
        student.predict(0, None, None, api_name="/class_answer")
    assert "changed this answer 10 times" in words(student.predict(1, None, None, api_name="/class_answer"))

    # the teacher's clicks from a session that did not open the class do nothing
    for name in ("/class_round", "/class_reveal", "/class_close"):
        student.predict(api_name=name)
    rows = [r for r in csv_rows(teacher) if r["question"] == "check:5.1"]
    assert {r["round"] for r in rows} == {"1"}                         # no second round was opened
    assert sum(int(r["count"]) for r in rows) == 1 and rows[0]["of"] == "1"
    assert [r["count"] for r in rows] == ["1"] + ["0"] * (len(CHECK.choices) - 1)   # its last answer (choice 0), once
    assert all(r["right"] == "" for r in rows)                         # nothing was revealed
    assert "Ada" not in "".join(str(r) for r in rows)
    teacher.predict(api_name="/class_close")
    wait_for(lambda: follow.done())
