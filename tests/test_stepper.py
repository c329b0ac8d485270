"""The stepper on a tiny random model: traces, reproducibility, forcing, rewinding, branches."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import SessionError, Stepper

PROMPT = "hello world"


def make(lm, **kw):
    settings = SamplingSettings(**kw)
    return Stepper.from_prompt(lm, PROMPT, chat=False, settings=settings, top_n=10)


def test_same_seed_same_tokens(tiny_lm):
    a = make(tiny_lm, temperature=1.3, top_p=0.95, seed=11)
    b = make(tiny_lm, temperature=1.3, top_p=0.95, seed=11)
    a.steps(12)
    b.steps(12)
    assert a.tokens == b.tokens
    c = make(tiny_lm, temperature=1.3, top_p=0.95, seed=12)
    c.steps(12)
    assert c.tokens != a.tokens  # a different seed explores differently (fixed seeds: deterministic check)


def test_trace_contents(tiny_lm):
    s = make(tiny_lm, temperature=0.8, top_k=5, top_p=0.9, seed=3)
    t = s.step()
    assert [r.name for r in t.stages] == ["temperature", "top-k", "top-p"]
    assert t.stages[1].kept == 5 or t.stages[1].kept > 5  # ties can keep more
    assert t.stages[2].kept <= t.stages[1].kept
    assert t.kept_final == t.stages[-1].kept
    assert t.chosen_token_id in [r.token_id for r in t.top]
    final_mass = sum(r.p_final for r in t.top)
    assert final_mass == pytest.approx(1.0, abs=1e-6) or t.kept_final > len(t.top)
    # every token that is cut in the final distribution is labelled with the stage that cut it
    for row in t.top:
        assert (row.p_final == 0.0) == (row.cut_by is not None)
    assert t.dH_dT is not None and t.dH_dT >= 0
    j = json.loads(json.dumps(t.to_json()))
    for key in ("chosen_token_id", "chosen_token", "entropy", "dH_dT", "stages", "top"):
        assert key in j
    assert set(j["stages"][0]) >= {"name", "kept", "removed_mass", "entropy_after"}
    assert set(j["top"][0]) >= {"token_id", "token", "logit", "p_raw", "p_final"}


def test_greedy_is_argmax_of_raw_without_stages(tiny_lm):
    s = make(tiny_lm, temperature=0.0)
    for _ in range(5):
        t = s.step()
        assert t.chosen_rank == 1 and t.greedy and t.dH_dT is None


def test_force_rewind_reproduces(tiny_lm):
    s = make(tiny_lm, temperature=1.0, seed=5)
    s.steps(6)
    original = list(s.tokens)
    s.rewind(3)
    assert s.tokens == original[:3]
    s.steps(3)
    assert s.tokens == original, "rewinding restores the cache and the random state exactly"
    assert len(s.branches) == 1 and s.branches[0].tokens == original[3:]


def test_force_creates_branch_and_checkout_restores(tiny_lm):
    s = make(tiny_lm, temperature=1.0, seed=9)
    s.steps(5)
    original = list(s.tokens)
    s.rewind(2)
    forced = next(r.token_id for r in s.traces[-1].top if r.token_id != original[2]) if s.traces else 7
    t = s.step(force_token_id=forced)
    assert t.forced and s.tokens == original[:2] + [forced]
    s.checkout(0)
    assert s.tokens == original
    # the branch we left is saved in turn
    assert s.branches[-1].tokens == [forced]
    # and stepping on continues from a correct cache: compare with a fresh full forward
    ids = torch.tensor([s.prompt_ids + s.tokens])
    with torch.inference_mode():
        full = tiny_lm.model(ids).logits[0, -1].float()
    assert torch.allclose(full, s._next_logits, atol=1e-4)


def test_cached_logits_match_full_forward(tiny_lm):
    s = make(tiny_lm, temperature=0.7, seed=1)
    s.steps(7)
    with torch.inference_mode():
        full = tiny_lm.model(torch.tensor([s.prompt_ids + s.tokens])).logits[0, -1].float()
    assert torch.allclose(full, s._next_logits, atol=1e-4)


def test_errors_are_clear(tiny_lm):
    s = make(tiny_lm)
    with pytest.raises(SettingsError, match="token id"):
        s.step(force_token_id=10_000)
    with pytest.raises(SessionError, match="rewind"):
        s.rewind(5)
    with pytest.raises(SessionError, match="undo"):
        s.undo()
    with pytest.raises(SettingsError, match="empty"):
        Stepper(tiny_lm, [], SamplingSettings())
    s.step()  # the session still works after the errors


def test_eos_finishes(tiny_lm):
    s = make(tiny_lm, temperature=1.0)
    t = s.step(force_token_id=1)
    assert t.finished and s.finished
    with pytest.raises(SessionError, match="end-of-sequence"):
        s.step()
    s.undo()
    s.step()


def test_settings_change_mid_session(tiny_lm):
    s = make(tiny_lm, temperature=1.0, seed=2)
    s.step()
    s.set_settings(s.settings.replace(top_k=3))
    t = s.step()
    assert [r.name for r in t.stages] == ["top-k"] and t.kept_final >= 3
    with pytest.raises(SettingsError):
        s.set_settings(s.settings.replace(order="top-p"))  # top-k is on but missing from the order
    assert s.settings.top_k == 3


def test_deepcopy_shares_the_model(tiny_lm):
    s = make(tiny_lm, seed=4)
    s.steps(2)
    c = copy.deepcopy(s)
    assert c.lm is s.lm and c.tokens == s.tokens and c._cache is not s._cache
    c.step()
    assert len(s.tokens) == 2  # the copy is independent


def test_presence_penalty_counts_output_only(tiny_lm):
    s = make(tiny_lm, temperature=1.0, presence_penalty=2.0)
    t = s.step()
    # no output yet: the penalty changes nothing, although the prompt is full of tokens
    assert t.stages[0].name == "presence-penalty" and t.stages[0].shift == pytest.approx(0.0, abs=1e-9)
    s2 = make(tiny_lm, temperature=1.0, presence_penalty=2.0, penalty_include_prompt=True)
    assert s2.step().stages[0].shift > 1e-3
