"""Settings validation, stage orders and presets."""

from __future__ import annotations

import pytest
import torch

from decoding_lab.chain import DeadEndError, run_chain
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings, parse_order
from decoding_lab.stages import History, SettingsError, TopK


@pytest.mark.parametrize("kwargs,match", [
    ({"temperature": -1}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"top_p": 1.5}, "top-p"),
    ({"top_p": 0}, "top-p"),
    ({"top_k": -5}, "top-k"),
    ({"top_k": 2.5}, "top-k"),
    ({"top_k": float("inf")}, "top-k must be finite"),   # not int(inf)'s OverflowError
    ({"no_repeat_ngram_size": float("nan")}, "n-gram size must be finite"),
    ({"seed": float("inf")}, "seed must be finite"),
    ({"temperature": "hot"}, "temperature must be a number"),
    ({"min_p": 2}, "min-p"),
    ({"typical_p": 0}, "typical-p"),
    ({"repetition_penalty": 0}, "repetition"),
    ({"presence_penalty": 3}, "presence"),
    ({"frequency_penalty": -2.5}, "frequency"),
    ({"no_repeat_ngram_size": -1}, "n-gram"),
    ({"order": "top-p,bogus"}, "unknown stage 'bogus'"),
    ({"order": "top-p,top-p"}, "more than once"),
    ({"seed": -3}, "seed"),
    ({"logit_bias": ((-1, 1.0),)}, "token ids"),
])
def test_bad_values_name_themselves(kwargs, match):
    with pytest.raises(SettingsError, match=match):
        SamplingSettings(**kwargs)


def test_nothing_is_on_by_default():
    assert SamplingSettings().build_chain() == []


def test_presets_order_the_active_stages():
    s = SamplingSettings(temperature=0.7, top_p=0.9, min_p=0.05, top_k=40)
    names = lambda order: [st.name for st in s.replace(order=order).build_chain()]  # noqa: E731
    assert names("transformers") == ["temperature", "top-k", "top-p", "min-p"]
    assert names("vllm") == ["temperature", "min-p", "top-k", "top-p"]
    assert names("llama.cpp") == ["top-k", "top-p", "min-p", "temperature"]
    assert names("min-p,temperature,top-p,top-k") == ["min-p", "temperature", "top-p", "top-k"]


def test_custom_order_must_place_every_active_stage():
    with pytest.raises(SettingsError, match="top-p are on but missing from the order"):
        SamplingSettings(temperature=0.7, top_p=0.9, order="temperature")


def test_order_aliases():
    assert parse_order("Top_P, temp , minp") == ("top-p", "temperature", "min-p")
    assert parse_order("llama.cpp") == PRESET_ORDERS["llama.cpp"]


def test_temperature_zero_is_greedy_and_has_no_stage():
    s = SamplingSettings(temperature=0, top_k=5)
    assert s.greedy and [st.name for st in s.build_chain()] == ["top-k"]


def test_llama_cpp_min_p_sees_the_untempered_distribution():
    """At T = 3, min-p before temperature (llama.cpp) keeps fewer tokens than after it (vLLM)."""
    z = torch.randn(2000, generator=torch.Generator().manual_seed(0)) * 3
    s = SamplingSettings(temperature=3.0, min_p=0.05)
    kept = {}
    for order in ("llama.cpp", "vllm"):
        final, recs, _ = run_chain(s.replace(order=order).build_chain(), z, History.empty())
        kept[order] = int(torch.isfinite(final).sum())
    assert kept["llama.cpp"] < kept["vllm"]


def test_json_round_trip():
    s = SamplingSettings(temperature=0.5, top_k=3, logit_bias=((5, -100.0),), order=("top-k", "temperature", "logit-bias"))
    assert SamplingSettings.from_json(s.to_json()) == s
    with pytest.raises(SettingsError, match="unknown setting"):
        SamplingSettings.from_json({"temprature": 1})


def test_dead_end_is_reported():
    class CutAll(TopK):
        name = "cut-all"

        def transform(self, logits, history):
            return torch.full_like(logits, float("-inf"))

    with pytest.raises(DeadEndError, match="cut-all"):
        run_chain([CutAll(1)], torch.zeros(4), History.empty())
