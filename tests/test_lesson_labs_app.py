"""A lesson's lab over the API (gradio_client, one session per client): nothing to draw before the
screen's experiment has run; after it, a moved control gives the chain's counts on the learner's
step, and a value no control can hold is refused in one line while the session's run stays."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError, ValidationError

from decoding_lab import lesson_labs as L
from decoding_lab import lesson_runs
from decoding_lab.lessons import load_lessons

REFUSED = (AppError, ValidationError)
EXP = next(e for les in load_lessons() if les.number == 5 for e in les.experiments if e.lab == "cuts")


#: what a browser sends from its own storage (progress, shuffle seed) with every lesson event
MINE = {"done": [], "learner": "lab-test"}


def _stats(out) -> str:
    return str(out[-1])


def test_the_lab_draws_only_after_a_run_and_refuses_what_no_control_holds(client, smollm):
    client.predict(**MINE, pick=5, api_name="/lesson_open")
    for _ in range(EXP.screen - 1):
        client.predict(**MINE, api_name="/lesson_next")
    # before the run: nothing to draw (the lab is hidden), and no error either
    assert "keeps" not in _stats(client.predict(**MINE, lab_t=1.2, api_name="/lesson_lab"))
    client.predict(**MINE, guess=None, guess_number=500, confidence=None, api_name="/lesson_run")
    step = lesson_runs.run(EXP, lambda name: smollm).lab_step
    view = L.look(step, L.lab_settings("cuts", EXP.settings, 1.2, top_p=0.9), smollm.token_str)
    stats = _stats(client.predict(**MINE, lab_t=1.2, lab_x=0.9, api_name="/lesson_lab"))
    assert f"{view.top_p_kept:,}" in stats and f"{view.min_p_kept:,}" in stats, stats
    for bad in ({"lab_t": 50.0}, {"lab_t": 0.01}, {"lab_x": 0.0}, {"lab_x": 7.0}, {"lab_t": "hot"}):
        with pytest.raises(REFUSED):
            client.predict(**MINE, **{"lab_t": 1.2, "lab_x": 0.9, **bad}, api_name="/lesson_lab")
    # the run is still there: the lab still answers with the same step
    assert _stats(client.predict(**MINE, lab_t=1.2, lab_x=0.9, api_name="/lesson_lab")) == stats
