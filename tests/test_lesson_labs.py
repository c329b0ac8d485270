"""A lesson's lab (``decoding_lab.lesson_labs``): the kept step under new settings gives the chain's
own numbers; the controls refuse what they cannot stand for; a sweep lab reads the shipped file;
and on the bundled model the lab at an experiment's own settings gives back what the experiment
measured (the learner's run and its lab agree)."""

from __future__ import annotations

import math

import pytest
import torch

from decoding_lab import lesson_labs as L
from decoding_lab import lesson_runs, stats
from decoding_lab.errors import SettingsError
from decoding_lab.lessons import load_lessons
from decoding_lab.settings import SamplingSettings


def _step(vocab: int = 500, seed: int = 0) -> L.LabStep:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(vocab, generator=g) * 3.0
    return L.LabStep("hand-built", logits, (1, 2, 3), (4, 4))


def _tok(i: int) -> str:
    return f"t{i}"


@pytest.mark.parametrize("T", [0.3, 1.0, 2.5])
def test_cuts_count_what_the_top_p_and_min_p_stages_keep(T):
    step = _step()
    view = L.look(step, L.lab_settings("cuts", {}, T, top_p=0.9), _tok)
    # the sorted-curve count is the TopP stage's own, and min-p 0.1's is the MinP stage's own
    assert view.top_p_kept == view.kept == view.stages[-1].kept
    minp = L.look(step, SamplingSettings(temperature=T, min_p=L.CUTS_MIN_P), _tok)
    assert view.min_p_kept == minp.kept
    # and a hotter step keeps more under top-p (never fewer), far more at the top of the range
    hotter = L.look(step, L.lab_settings("cuts", {}, min(3.0, T + 0.5), top_p=0.9), _tok)
    assert hotter.top_p_kept >= view.top_p_kept
    assert L.look(step, L.lab_settings("cuts", {}, 3.0, top_p=0.9), _tok).top_p_kept > 10 * view.top_p_kept or T > 1


def test_temperature_view_gives_h_and_its_slope_at_T():
    step = _step()
    view = L.look(step, L.lab_settings("temperature", {"top_p": 0.5}, 0.7), _tok)
    assert view.kept == step.vocab                         # this lab cuts nothing, whatever the lesson's top-p
    h, slope = stats.entropy_and_dH_dT(step.logits, 0.7)
    assert view.entropy_T == pytest.approx(h) and view.dH_dT == pytest.approx(slope)
    # the tangent's slope is the curve's: a finite difference of H around T
    eps = 1e-3
    fd = (stats.entropy_at(step.logits, 0.7 + eps) - stats.entropy_at(step.logits, 0.7 - eps)) / (2 * eps)
    assert view.dH_dT == pytest.approx(fd, rel=1e-3)
    assert [r.p_T for r in view.rows] == sorted((r.p_T for r in view.rows), reverse=True)
    assert view.rows[0].p_T == pytest.approx(float(torch.softmax(step.logits / 0.7, -1).max()))


def test_tail_is_the_mass_below_one_in_ten_thousand():
    step = _step(vocab=2000)
    view = L.look(step, L.lab_settings("tail", {}, 1.5), _tok)
    p = torch.softmax(step.logits.double() / 1.5, -1)
    assert view.tail_count == int((p < L.TAIL_P).sum())
    assert view.tail_mass == pytest.approx(float(p[p < L.TAIL_P].sum()))


def test_order_lab_runs_the_experiments_cuts_in_each_engines_order():
    step = _step()
    base = {"temperature": 2.0, "top_p": 0.9, "min_p": 0.1}
    kept = {o: L.look(step, L.lab_settings("order", base, 2.0, order=o), _tok) for o in ("transformers", "vllm", "llama.cpp")}
    assert [s.name for s in kept["transformers"].stages] == list(
        n for n in SamplingSettings(**base).order_names if n in ("temperature", "top-p", "min-p"))
    for o, v in kept.items():
        assert v.settings.order == o
        assert v.kept == v.stages[-1].kept
    # a row cut by a stage says which, and its p at the cut is the mass that stage took from it
    cut = [r for v in kept.values() for r in v.rows if r.cut_by]
    assert all(r.p_cut is not None and r.p_cut > 0 and r.p_final == 0 for r in cut)


def test_penalties_read_the_kept_history():
    step = L.LabStep("hand-built", torch.zeros(10), (1,), (4, 4))
    view = L.look(step, SamplingSettings(temperature=1.0, presence_penalty=1.0, order="vllm"), _tok)
    p4 = next(r.p_final for r in view.rows if r.token_id == 4)
    others = [r.p_final for r in view.rows if r.token_id != 4]
    assert p4 < min(others)          # token 4 was generated: the presence penalty lowered it


@pytest.mark.parametrize("kind, base, T, kw, words", [
    ("cuts", {}, 0.05, {}, "temperature must lie in 0.1"),
    ("cuts", {}, float("nan"), {}, "temperature must lie in 0.1"),
    ("cuts", {}, 1.0, {"top_p": 0.0}, "top-p must lie in 0.05"),
    ("cuts", {}, 1.0, {"top_p": 1.5}, "top-p must lie in 0.05"),
    ("order", {"top_p": 0.9}, 1.0, {"order": "sglang"}, "unknown order"),
    ("passk", {}, 1.0, {}, "unknown step lab"),
])
def test_lab_settings_refuse_what_a_control_cannot_stand_for(kind, base, T, kw, words):
    with pytest.raises(SettingsError, match=words):
        L.lab_settings(kind, base, T, **kw)


def test_passk_lab_reads_every_truncation_of_the_shipped_sweep():
    import json
    from decoding_lab.experiments.sweep import ASSET_DIR, curve
    result = json.loads((ASSET_DIR / "smollm2-135m-instruct_addition.json").read_text(encoding="utf-8"))
    assert L.sweep_size(result) == 16
    lines = L.passk_lines(result, 16)
    assert set(lines) == {"none", "top-p", "top-k", "min-p"}
    for rule, pts in lines.items():
        assert pts == curve(result, k=16, truncation=rule)
        assert pts[0][0] == 0.0                     # greedy opens every line
    # the hot end of the sweep, per rule: at T = 1.3 min-p keeps pass@1 highest (lesson 9's lab shows it)
    hot = {rule: dict((T, p) for T, p, _ in L.passk_lines(result, 1)[rule])[1.3] for rule in lines}
    assert max(hot, key=hot.get) == "min-p"


def test_an_experiment_names_a_lab_its_kind_can_carry():
    labs = {(les.number, e.id): e.lab for les in load_lessons() for e in les.experiments if e.lab}
    assert len({n for n, _ in labs}) >= 5           # at least five lessons carry their view inside the lesson
    bad = {"id": "x", "screen": 1, "kind": "sweep", "measure": "pass@1", "lab": "cuts", "file": "f.json",
           "variants": [{"key": "a", "label": {"en": "a", "zh": "a"}}], "expect": {"a": 0.1}, "reveal": {},
           "predict": {"kind": "max", "question": {"en": "?", "zh": "？"}}}
    with pytest.raises(ValueError, match="passk lab belongs to a sweep"):
        lesson_runs.parse_experiment(bad)
    with pytest.raises(ValueError, match="lab must be one of"):
        lesson_runs.parse_experiment({**bad, "lab": "bars"})


# ----------------------------------------------------------------------------- on the bundled model
def _exp(number: int, eid: str):
    les = next(x for x in load_lessons() if x.number == number)
    return next(e for e in les.experiments if e.id == eid)


@pytest.mark.parametrize("number, eid", [(3, "ratio-law"), (4, "tail-mass"), (5, "hot-kept"), (6, "orders")])
def test_the_lab_at_the_experiments_own_settings_gives_back_what_it_measured(number, eid, smollm):
    exp = _exp(number, eid)
    run = lesson_runs.run(exp, lambda name: smollm)
    step = run.lab_step
    assert step is not None and step.vocab == int(smollm.vocab_size)
    for v in exp.variants:
        s = {**exp.settings, **v.settings}
        T = float(s.get("temperature", 1.0))
        if exp.lab == "order":
            view = L.look(step, L.lab_settings("order", s, T, order=s["order"]), smollm.token_str)
            assert view.kept == run.values[v.key]
        elif exp.lab == "cuts":
            view = L.look(step, L.lab_settings("cuts", s, T, top_p=s.get("top_p", 0.9)), smollm.token_str)
            assert (view.top_p_kept if "top_p" in s else view.min_p_kept) == run.values[v.key]
        elif exp.lab == "tail":
            view = L.look(step, L.lab_settings("tail", s, T), smollm.token_str)
            assert view.tail_mass == pytest.approx(run.values[v.key], rel=1e-4)
        else:    # temperature: the two likeliest tokens' ratio at each T, read off the lab's bars
            view = L.look(step, L.lab_settings("temperature", s, T), smollm.token_str)
            a, b = sorted((r.p_T for r in view.rows), reverse=True)[:2]
            assert a / b == pytest.approx(run.values[v.key], rel=1e-4)
            assert math.isfinite(view.dH_dT)
