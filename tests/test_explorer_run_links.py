"""A run whose settings changed part-way cannot be replayed by a link (a replay runs every step with
one set of settings and would write another text): the link then opens the set-up only, and the
status line says so. On the tiny random model."""

from __future__ import annotations

from urllib.parse import parse_qs

from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper
from decoding_lab.ui.explorer.request import ExplorerSession
from decoding_lab.ui.explorer.views import share_query, with_notice


def session(tiny_lm) -> ExplorerSession:
    st = Stepper(tiny_lm, [5, 6, 7], SamplingSettings(temperature=0.8, seed=1), top_n=5)
    return ExplorerSession("tiny", "p", False, st)


def test_a_run_with_one_set_of_settings_is_replayed_by_its_link(tiny_lm):
    s = session(tiny_lm)
    for _ in range(3):
        s.step()
    assert s.settings_changed_at() is None
    assert parse_qs(share_query(s, "en"))["steps"] == ["3"]


def test_a_settings_change_mid_run_keeps_the_steps_out_of_the_link_and_says_so(tiny_lm):
    s = session(tiny_lm)
    s.step()
    s.step()
    s.stepper.set_settings(SamplingSettings(temperature=1.3, seed=1))   # what Step does with new settings
    s.step()
    assert s.settings_changed_at() == 0
    q = parse_qs(share_query(s, "en"))
    assert "steps" not in q and q["T"] == ["1.3"]
    assert "The settings changed during this run (step 0 ran with others)" in with_notice("status", s, "en")
    assert "第 0 步用的是别的设置" in with_notice("status", s, "zh")
    # back to one set of settings: undo the steps that ran with the old ones, by rewinding to 0
    s.stepper.rewind(0)
    s.step()
    assert s.settings_changed_at() is None and parse_qs(share_query(s, "en"))["steps"] == ["1"]
