"""The Explorer's views of what used to be hidden or unbounded, on the tiny random model:

* a long shared link replays its first ``LINK_REPLAY_STEPS`` steps only, keeps naming its whole run
  and offers the rest on a button, until the visitor makes the run another one;
* what dynamic temperature used and whether XTC fired, in the numbers table and the status line;
* a link's bad ``lang`` and ``order`` are said (in the link's language), not silently dropped;
* the candidates' labels name both probabilities; the Temperature-0 and Many-samples texts."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper
from decoding_lab.ui.common import urlstate
from decoding_lab.ui.explorer.request import ExplorerSession, LinkRest
from decoding_lab.ui.explorer.views import (candidate_choices, extra_rows, numbers_md, replay_more_button,
                                            share_query, status_md, with_notice)


def session(tiny_lm, **settings) -> ExplorerSession:
    st = Stepper(tiny_lm, [5, 6, 7], SamplingSettings(**{"temperature": 0.8, "seed": 1, **settings}), top_n=5)
    return ExplorerSession("tiny", "p", False, st)


def paused(tiny_lm, done: int, total: int, forced: dict[int, int]) -> ExplorerSession:
    """What ``on_replay`` leaves for a link of ``total`` steps after replaying ``done`` of them."""
    s = session(tiny_lm)
    for i in range(done):
        s.step(force_token_id=forced.get(i))
    s.link_rest = LinkRest(total, forced, tuple(s.stepper.tokens))
    return s


def test_the_cap_is_a_small_named_number():
    assert 8 <= urlstate.LINK_REPLAY_STEPS <= 64


def test_a_paused_link_keeps_its_whole_run_in_the_link_and_offers_the_rest(tiny_lm):
    forced = {1: 9, 6: 11}
    s = paused(tiny_lm, 3, 8, forced)
    if s.stepper.finished:
        pytest.skip("the tiny model ended the run early")
    assert s.pending_link() is not None
    q = parse_qs(share_query(s, "en"))
    assert q["steps"] == ["8"] and q["force"] == ["1:9,6:11"]     # the forced token still to come is kept
    button = replay_more_button(s, "en")
    assert button["visible"] is True and button["value"] == "▶ Replay the other 5 steps of the link"
    assert "重放链接的其余 5 步" in replay_more_button(s, "zh")["value"]
    note = with_notice("status", s, "en")
    assert "This link names 8 steps; the first 3 were replayed" in note and "other 5" in note
    assert "这个链接共有 8 步；打开时只重放了前 3 步" in with_notice("status", s, "zh")


def test_the_rest_is_gone_once_the_run_is_another_one(tiny_lm):
    s = paused(tiny_lm, 3, 8, {})
    if s.stepper.finished:
        pytest.skip("the tiny model ended the run early")
    s.stepper.undo()                      # the visitor's own action: no longer the link's run
    assert s.pending_link() is None
    assert replay_more_button(s, "en")["visible"] is False
    assert "This link names" not in with_notice("status", s, "en")
    assert parse_qs(share_query(s, "en"))["steps"] == ["2"]


def test_a_finished_rest_is_not_offered(tiny_lm):
    s = paused(tiny_lm, 3, 3, {})
    assert s.pending_link() is None and replay_more_button(s, "en")["visible"] is False


LLAMA = {"order": "llama.cpp", "temperature": 1.0}


def test_dynamic_temperature_is_on_screen(tiny_lm):
    s = session(tiny_lm, **LLAMA, dynatemp_range=0.5)
    s.step()
    tr = s.stepper.traces[-1]
    used = next(r for r in tr.stages if r.name == "temperature").extra.T_used
    assert 0.5 <= used <= 1.5
    rows = "\n".join(extra_rows(tr, "en"))
    assert (f"| Temperature used (dynamic) | {used:.3f}: chosen from this step's entropy, between 0.5 (sure) and "
            "1.5 (unsure) around T 1 |") in rows
    assert rows in numbers_md(tr, "en")
    assert f"dynamic T = {used:.2f}" in status_md(s.stepper, "en") and "XTC" not in status_md(s.stepper, "en")
    assert "实际使用的温度（动态温度）" in "\n".join(extra_rows(tr, "zh"))
    assert f"动态 T = {used:.2f}" in status_md(s.stepper, "zh")


def test_xtc_that_fired_is_on_screen(tiny_lm):
    s = session(tiny_lm, **LLAMA, xtc_probability=1.0, xtc_threshold=0.001)
    s.step()
    tr = s.stepper.traces[-1]
    xtc = next(r for r in tr.stages if r.name == "xtc")
    assert xtc.extra.fired and xtc.removed_count >= 1   # at least two tokens pass 0.001 on the tiny model
    rows = "\n".join(extra_rows(tr, "en"))
    assert (f"| XTC at this step | fired: removed {xtc.removed_count} top choices, every token with p ≥ 0.001 but "
            f"the least likely of them (mass {xtc.removed_mass:.4f}) |") in rows
    status = status_md(s.stepper, "en")
    assert "XTC fired" in status and "dynamic T" not in status
    zh = "\n".join(extra_rows(tr, "zh"))
    assert "这一步的 XTC" in zh and "触发了" in zh and "XTC 触发了" in status_md(s.stepper, "zh")


def test_one_token_reaching_temperature_is_explained(tiny_lm):
    """llama.cpp's order puts temperature last: after top-k 1 a single token reaches it, so dynamic
    temperature scales nothing and H(T) is 0 for every T; the table says so instead of a bare number."""
    s = session(tiny_lm, **LLAMA, dynatemp_range=0.5, top_k=1)
    s.step()
    tr = s.stepper.traces[-1]
    rows = "\n".join(extra_rows(tr, "en"))
    assert "| Temperature used (dynamic) | none: a single token reached temperature" in rows
    assert "(only one token reaches temperature, after the cuts: H(T) is 0 for every T)" in numbers_md(tr, "en")
    assert "dynamic T" not in status_md(s.stepper, "en")
    assert "只有一个词元到达温度阶段" in numbers_md(tr, "zh")


def test_xtc_that_did_not_fire_says_why(tiny_lm):
    s = session(tiny_lm, **LLAMA, xtc_probability=1.0, xtc_threshold=0.5)
    s.step()
    tr = s.stepper.traces[-1]
    assert not next(r for r in tr.stages if r.name == "xtc").extra.fired
    rows = "\n".join(extra_rows(tr, "en"))
    assert "| XTC at this step | did not fire (it fires on 100% of the steps, and only when two or more" in rows
    assert "XTC did not fire" in status_md(s.stepper, "en") and "dynamic T" not in status_md(s.stepper, "en")


def test_a_plain_step_has_no_extra_rows(tiny_lm):
    s = session(tiny_lm)
    s.step()
    assert extra_rows(s.stepper.traces[-1], "en") == []


def test_candidates_name_both_probabilities(tiny_lm):
    s = session(tiny_lm, top_k=2)
    s.step()
    tr = s.stepper.traces[-1]
    labels = [label for label, _ in candidate_choices(tr, "en")]
    first = tr.top[0]
    assert labels[0].startswith(f"#{first.rank} ") and f"p raw {first.p_raw:.3f} · final {first.p_final:.3f}" in labels[0]
    assert "原始 p" in candidate_choices(tr, "zh")[0][0]


def test_a_link_s_unknown_language_and_order_are_said():
    values, notes = urlstate.decode({"lang": "xx", "order": "top-p,banana"})
    assert values["lang"] == "en" and "order_preset" not in values
    assert any("lang='xx' is not a language of this page" in n for n in notes)
    assert any(n.startswith("order='top-p,banana' not used, kept the default order: unknown stage 'banana'") for n in notes)
    values, notes = urlstate.decode({"lang": "zh", "order": "nonsense", "top_p": "7"})
    assert any(n.startswith("order='nonsense' 未采用，保留默认顺序：未知的阶段") for n in notes), notes
    assert any("top_p='7'：top-p 必须" in n for n in notes), notes
    values, notes = urlstate.decode({"order": "top-p,min-p"})   # a good custom order is kept
    assert values["custom_order"] == "top-p,min-p" and not notes


def test_temperature_zero_marks_where_the_texts_part():
    from decoding_lab.ui.determinism.views import marked
    assert marked("a 12-year-old", 3, "en").startswith("a 1<mark class='det-diff'")
    assert marked("a <b>", None, "en") == "a &lt;b&gt;"


def test_many_samples_names_the_pool_and_the_sweep_s_problems():
    from decoding_lab.ui.multisample.views import task_text
    task = {"description": "single-digit addition, 'What is 3 + 4?' (81 problems)"}
    assert task_text(task, "en", 50) == "single-digit addition, 'What is 3 + 4?' (a pool of 81 problems; this sweep used 50)"
    assert "题库共 81 道题；这次扫描用了其中 50 道" in task_text(task, "zh", 50)
    assert task_text(task, "en", 81).endswith("(81 problems)")


def test_the_step_under_each_engine_order_leaves_the_run_as_it_was(tiny_lm):
    """The shown step redone under every preset order with the same settings and draw: the stages
    come in each engine's order, the order the step ran with is marked, and the visitor's run is
    untouched. Redone under the order it ran with, it is the step on screen."""
    from decoding_lab.settings import PRESET_ORDERS
    from decoding_lab.ui.explorer.orders import orders_md, under_each_order
    s = session(tiny_lm, temperature=1.5, top_k=20, top_p=0.9, min_p=0.05, order="vllm")
    s.step()
    s.step()
    before = (list(s.stepper.tokens), len(s.stepper.branches))
    results = dict(under_each_order(s.stepper, s.stepper.settings))
    assert list(results) == list(PRESET_ORDERS)
    assert (list(s.stepper.tokens), len(s.stepper.branches)) == before
    shown = s.stepper.traces[-1]
    same = results["vllm"]
    assert same.chosen_token_id == shown.chosen_token_id and [r.kept for r in same.stages] == [r.kept for r in shown.stages]
    for name, tr in results.items():
        names = [r.name for r in tr.stages]
        assert names == [n for n in PRESET_ORDERS[name] if n in names]    # the engine's order
    table = orders_md(s, "en")
    assert "| vllm ◀ |" in table and "| transformers |" in table and "| llama.cpp |" in table
    assert "| 顺序 |" in orders_md(s, "zh") and "| vllm ◀ |" in orders_md(s, "zh")


def test_an_engine_only_stage_is_refused_in_the_other_orders(tiny_lm):
    from decoding_lab.ui.explorer.orders import orders_md
    s = session(tiny_lm, temperature=1.0, order="llama.cpp", dry_multiplier=0.8)
    s.step()
    table = orders_md(s, "en")
    assert "| llama.cpp ◀ |" in table
    assert "| transformers | not possible: dry is not in transformers generate()'s sampler" in table
