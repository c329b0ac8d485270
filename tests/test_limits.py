"""Deployment limits (``decoding_lab.limits``): read from the environment, enforced by every core
entry point with a message that names the value, the limit and the variable."""

from __future__ import annotations

import dataclasses

import pytest

from decoding_lab import limits
from decoding_lab.determinism import greedy_variants
from decoding_lab.limits import Limits, LimitsError
from decoding_lab.experiments.grid import SweepConfig
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import Stepper
from decoding_lab.strategies import beam_search, greedy, sample

PROMPT = [5, 17, 42, 8, 9]


def test_defaults_and_environment(monkeypatch):
    for f in dataclasses.fields(Limits):
        monkeypatch.delenv(f"DECODING_LAB_{f.name.upper()}", raising=False)
    assert limits.current() == Limits()
    lim = Limits.from_env({"DECODING_LAB_MAX_NEW_TOKENS": " 32 ", "DECODING_LAB_SESSION_TTL": "2.5",
                           "DECODING_LAB_PUBLIC": "yes", "DECODING_LAB_ALLOWED_MODELS": "a/b, ,c/d"})
    assert (lim.max_new_tokens, lim.session_ttl, lim.public, lim.allowed_models) == (32, 2.5, True, ("a/b", "c/d"))
    assert lim.model_allowed("A/B") == "a/b" and lim.model_allowed("e/f") is None
    assert Limits().model_allowed("e/f") == "e/f"  # not public: anything


@pytest.mark.parametrize("name,value,match", [
    ("MAX_BEAMS", "many", "DECODING_LAB_MAX_BEAMS must be a whole number, got 'many'"),
    ("MAX_SAMPLES", "0", "DECODING_LAB_MAX_SAMPLES must be at least 1"),
    ("MAX_NEW_TOKENS", "2.5", "whole number"),
    ("SESSION_TTL", "nan", "DECODING_LAB_SESSION_TTL must be at least 1"),
    ("SESSION_TTL", "soon", "must be a number"),
])
def test_bad_environment_values_name_the_variable(name, value, match):
    with pytest.raises(LimitsError, match=match):
        Limits.from_env({f"DECODING_LAB_{name}": value})


def test_stepper_limits(tiny_lm, monkeypatch):
    monkeypatch.setenv("DECODING_LAB_MAX_PROMPT_TOKENS", "8")
    monkeypatch.setenv("DECODING_LAB_MAX_NEW_TOKENS", "3")
    st = Stepper(tiny_lm, PROMPT)
    assert st.max_new_tokens == 3  # None: as many as allowed
    assert len(st.steps(10)) <= 3
    with pytest.raises(SettingsError, match="9 tokens; the limit here is 8 .DECODING_LAB_MAX_PROMPT_TOKENS"):
        Stepper(tiny_lm, list(range(2, 11)))
    with pytest.raises(SettingsError, match="max_new_tokens must be between 1 and 3 .DECODING_LAB_MAX_NEW_TOKENS"):
        Stepper(tiny_lm, PROMPT, max_new_tokens=4)  # refused, not silently cut
    with pytest.raises(SettingsError, match="max_new_tokens must be between 1 and 3"):
        Stepper(tiny_lm, PROMPT, max_new_tokens=0)


@pytest.mark.parametrize("kw,match", [
    ({"top_n": 0}, "top_n must be between 1 and 1000"),
    ({"top_n": -3}, "top_n"),
    ({"top_n": 2.5}, "top_n must be a whole number"),
    ({"prompt_ids": [5, 10**6]}, "prompt token ids"),
    ({"prompt_ids": None}, "list of token ids"),
    ({"prompt_ids": []}, "prompt is empty"),
    ({"settings": {"temperature": 1}}, "SamplingSettings"),
])
def test_stepper_arguments_get_a_clear_error(tiny_lm, kw, match):
    with pytest.raises(SettingsError, match=match):
        Stepper(tiny_lm, **{"prompt_ids": PROMPT, **kw})


def test_strategy_limits(tiny_lm, monkeypatch):
    monkeypatch.setenv("DECODING_LAB_MAX_BEAMS", "2")
    monkeypatch.setenv("DECODING_LAB_MAX_SAMPLES", "3")
    monkeypatch.setenv("DECODING_LAB_MAX_NEW_TOKENS", "4")
    monkeypatch.setenv("DECODING_LAB_MAX_PROMPT_TOKENS", "5")
    assert len(sample(tiny_lm, PROMPT, SamplingSettings(seed=1), 4, n=3).sequences) == 3
    assert beam_search(tiny_lm, PROMPT, max_new_tokens=4, num_beams=2).sequences
    with pytest.raises(SettingsError, match="num_beams must be between 1 and 2 .DECODING_LAB_MAX_BEAMS., got 3"):
        beam_search(tiny_lm, PROMPT, max_new_tokens=2, num_beams=3)
    with pytest.raises(SettingsError, match="number of samples n must be between 1 and 3 .DECODING_LAB_MAX_SAMPLES"):
        sample(tiny_lm, PROMPT, max_new_tokens=2, n=4)
    with pytest.raises(SettingsError, match="DECODING_LAB_MAX_NEW_TOKENS"):
        greedy(tiny_lm, PROMPT, max_new_tokens=5)
    with pytest.raises(SettingsError, match="DECODING_LAB_MAX_PROMPT_TOKENS"):
        greedy(tiny_lm, PROMPT + [3], max_new_tokens=2)


def test_sweep_size_limit(monkeypatch):
    cfg = dict(model="m", task="addition", problems=10, n=4, temperatures=(0.0, 1.0), truncations=("none", "top-p"))
    assert SweepConfig(**cfg).samples() == 10 * 1 + 10 * 4 * 2  # greedy draws once per problem
    monkeypatch.setenv("DECODING_LAB_MAX_SWEEP_SAMPLES", "89")
    with pytest.raises(SettingsError, match="would draw 90 samples; the limit here is 89 .DECODING_LAB_MAX_SWEEP"):
        SweepConfig(**cfg)
    monkeypatch.setenv("DECODING_LAB_MAX_SAMPLES", "3")
    with pytest.raises(SettingsError, match="DECODING_LAB_MAX_SAMPLES"):
        SweepConfig(**{**cfg, "problems": 1})


def test_temperature_zero_paths_check_first(tiny_lm):
    with pytest.raises(SettingsError, match="unknown variant 'fp8'"):
        greedy_variants(tiny_lm, PROMPT, 3, ("float32, cached", "fp8"))
    with pytest.raises(SettingsError, match="full-recompute path .* at most 1024, got 1029"):
        greedy_variants(tiny_lm, PROMPT, 1024)
    with pytest.raises(SettingsError, match="at least one"):
        greedy_variants(tiny_lm, PROMPT, 3, ())
    out = greedy_variants(tiny_lm, PROMPT, 3, ("float32, cached", "float32, full recompute"))
    assert out["divergence"][0]["step"] is None  # the same greedy tokens along both paths
