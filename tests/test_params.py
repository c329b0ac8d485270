"""The parameter table is the one declaration of every decoding knob: these tests walk it
and check that the settings, the stages, the Explorer, Compare, share links, the CLI and
both languages cover every row, with the same bounds."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings as hyp_settings, strategies as st

from decoding_lab import cli
from decoding_lab.errors import SettingsError
from decoding_lab.params import PARAMS, Param, format_bias, parse_bias_text
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stages import STAGE_CLASSES
from decoding_lab.stages.registry import STAGE_NAMES
from decoding_lab.ui import compare
from decoding_lab.ui.common import i18n, urlstate
from decoding_lab.ui.common.state import DEFAULTS, SETTING_KEYS, settings_from_values, values_from_settings


def test_every_row_is_a_settings_field_and_nothing_else_is():
    fields = [f.name for f in dataclasses.fields(SamplingSettings)]
    assert fields == [*PARAMS, "order"]
    assert SamplingSettings() == SamplingSettings(**{k: p.default for k, p in PARAMS.items()})


def test_every_row_configures_a_known_stage():
    for p in PARAMS.values():
        assert p.stage == "" or p.stage in STAGE_NAMES, p.key
    # each settings-built stage is in the registry, and builds from default settings
    assert set(STAGE_CLASSES) <= set(STAGE_NAMES)
    built = SamplingSettings().all_stages()
    assert set(built) == set(STAGE_CLASSES)
    assert not any(s.is_active() for s in built.values())


@pytest.mark.parametrize("key", list(PARAMS))
def test_both_languages_label_and_explain_every_row(key):
    for lang in ("en", "zh"):
        assert key in i18n.STRINGS[lang], (lang, key)
        assert key + "_info" in i18n.STRINGS[lang], (lang, key)
    assert i18n.ZH[key + "_info"] != i18n.EN[key + "_info"]


def test_url_and_cli_keys_cover_every_row_and_are_unique():
    assert set(urlstate.URL_KEYS) == set(PARAMS)
    assert len(set(urlstate.URL_KEYS.values())) == len(PARAMS)
    flags = [p.cli_flag for p in PARAMS.values()]
    assert len(set(flags)) == len(flags)
    parser = cli.build_parser()
    step = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith("step"))
    known = {s for a in step._actions for s in a.option_strings}
    assert set(flags) <= known


def test_ui_controls_cover_every_row():
    assert set(SETTING_KEYS) == {*PARAMS, "order_preset", "custom_order"}
    assert set(DEFAULTS) == set(SETTING_KEYS)
    assert set(PARAMS) <= set(compare.COL_KEYS)


def test_explorer_controls_and_slider_ranges_come_from_the_table():
    import gradio as gr
    from decoding_lab.ui.explorer import setting_controls
    from decoding_lab.ui.common.state import Labels
    with gr.Blocks():
        c = setting_controls(Labels())
    assert set(c) == set(SETTING_KEYS)
    for key, p in PARAMS.items():
        comp = c[key]
        if isinstance(comp, gr.Slider):
            assert (comp.minimum, comp.maximum) == p.slider_range, key
            assert p.lo is None or comp.minimum >= p.lo
            assert p.hi is None or comp.maximum <= p.hi
        elif isinstance(comp, gr.Number):  # no gradio bounds: the core's check names the knob
            assert (comp.minimum, comp.maximum) == (None, None), key
            assert comp.precision is None, key   # gradio must not round 1.5 to 2: the core refuses it


@pytest.mark.parametrize("key", [k for k, p in PARAMS.items() if p.kind in ("real", "int") and p.lo is not None])
def test_below_the_lower_bound_is_refused_by_name(key):
    p = PARAMS[key]
    with pytest.raises(SettingsError, match=p.label):
        SamplingSettings(**{key: p.lo - 1})


@pytest.mark.parametrize("key", [k for k, p in PARAMS.items() if p.integer])
def test_integers_must_be_integers(key):
    with pytest.raises(SettingsError, match="whole number"):
        SamplingSettings(**{key: 2.5})
    with pytest.raises(SettingsError, match="number"):
        SamplingSettings(**{key: True})


def _value(p: Param) -> st.SearchStrategy:
    if p.kind == "bool":
        return st.booleans()
    if p.kind == "bias":
        pair = st.tuples(st.integers(0, 50_000), st.sampled_from([-100.0, -2.5, 0.0, 1.0, 7.25]))
        return st.lists(pair, max_size=3, unique_by=lambda x: x[0]).map(tuple)
    lo = p.lo if p.lo is not None else 0
    hi = p.hi if p.hi is not None else lo + 1000
    if p.integer:
        ints = st.integers(int(lo) + (1 if p.lo_open else 0), int(min(hi, lo + 10_000)))
        return (st.none() | ints) if p.none_ok else ints
    reals = st.floats(lo, hi, exclude_min=p.lo_open, exclude_max=p.hi_open, allow_nan=False)
    return (st.none() | reals) if p.none_ok else reals


def _valid_or_none(d: dict, order) -> SamplingSettings | None:
    """Random values with an order that lacks an active stage are refused (tested elsewhere)."""
    try:
        return SamplingSettings(**d, order=order)
    except SettingsError:
        return None


_ALL_STAGES = tuple(n for n in STAGE_NAMES if n not in ("grammar", "healing", "verifier-tilt"))
_settings = st.fixed_dictionaries({k: _value(p) for k, p in PARAMS.items()}).flatmap(
    lambda d: st.sampled_from([*PRESET_ORDERS, _ALL_STAGES]).map(lambda order: _valid_or_none(d, order))
).filter(lambda s: s is not None)


@hyp_settings(max_examples=150, deadline=None)
@given(_settings)
def test_control_values_round_trip_every_field(s):
    values = values_from_settings(s)
    assert set(values) == set(SETTING_KEYS)
    assert settings_from_values(values) == s
    assert values_from_settings(settings_from_values(values)) == values
    assert SamplingSettings.from_json(s.to_json()) == s


def test_bias_text_round_trips_and_refuses_nonsense():
    assert parse_bias_text(format_bias(((3, -100.0), (7, 2.5)))) == ((3, -100.0), (7, 2.5))
    for bad, match in (("3", "token id:bias"), ("a:1", "token id:bias"), ("1.5:2", "whole"), ("3:1,3:2", "more than once"),
                       ("3:500", "<= 100")):
        with pytest.raises(SettingsError, match=match):
            parse_bias_text(bad)


def test_a_share_link_carries_every_changed_row():
    s = SamplingSettings(temperature=0.7, top_n_sigma=1.5, xtc_probability=0.5, xtc_threshold=0.2, dry_multiplier=0.8,
                         dry_allowed_length=3, dynatemp_range=0.5, penalty_include_prompt=True, repetition_window=32,
                         logit_bias=((5, -100.0),), order="llama.cpp", seed=4)
    values = values_from_settings(s)
    query = urlstate.encode("smollm2-135m-instruct", "hi", "chat", values)
    from urllib.parse import parse_qsl
    decoded, notes = urlstate.decode(dict(parse_qsl(query)))
    assert notes == []
    assert settings_from_values({**DEFAULTS, **decoded}) == s


def test_engine_only_stages_are_refused_by_other_presets_with_a_reason():
    with pytest.raises(SettingsError, match="xtc is not in vLLM's sampler; only llama.cpp has it"):
        SamplingSettings(temperature=0.8, xtc_probability=0.5, order="vllm")
    with pytest.raises(SettingsError, match="typical-p is not in vLLM's sampler; only transformers, llama.cpp have"):
        SamplingSettings(temperature=0.8, typical_p=0.9, order="vllm")
    s = SamplingSettings(temperature=0.8, xtc_probability=0.5, order="llama.cpp")
    assert "xtc" in [st_.name for st_ in s.build_chain()]


# ----------------------------------------------------------------------------- engine columns
def _endpoint(api: str):
    import json
    from decoding_lab.remote.config import parse_endpoints
    (ep,) = parse_endpoints(json.dumps([{"name": "e", "base_url": "http://127.0.0.1:1", "model": "m", "api": api,
                                         "tokenizer": "smollm2-135m-instruct"}]))
    return ep


#: A value "on" for each knob an engine has (in llama-server's spelling, as the sampling dict holds it).
_ON = {"temperature": 0.7, "dynatemp_range": 0.5, "dynatemp_exponent": 2.0, "top_k": 7, "top_p": 0.8, "min_p": 0.1,
       "typical_p": 0.9, "top_n_sigma": 1.5, "xtc_probability": 0.5, "xtc_threshold": 0.2, "repetition_penalty": 1.3,
       "presence_penalty": 0.4, "frequency_penalty": -0.2, "penalty_last_n": 9, "dry_multiplier": 0.8,
       "dry_base": 2.0, "dry_allowed_length": 4, "dry_penalty_last_n": 5, "logit_bias": ((3, -100.0),), "seed": 11}


@pytest.mark.parametrize("api,body_of", [("llama-server", lambda b: b), ("openai", lambda b: b),
                                         ("sglang", lambda b: b["sampling_params"])])
def test_every_engine_spelling_in_the_table_reaches_that_engines_request(api, body_of):
    """A row's engine column is the whole story: set the knob, and the request carries it under the
    row's spelling; leave it off, and the request says the engine's own "off"."""
    from decoding_lab.params import engine_rows
    from decoding_lab.remote.payloads import _SAMPLING_NAME, build_request, neutral_sampling
    ep = _endpoint(api)
    rows = engine_rows(api)
    assert rows, api
    for p, key in rows:
        name = _SAMPLING_NAME.get(p.key, p.key)
        _, off = build_request(ep, list(range(20)), neutral_sampling(), n_vocab=500)
        _, on = build_request(ep, list(range(20)), neutral_sampling(**{name: _ON[name]}), n_vocab=500)
        assert key.name in body_of(on), (api, p.key)
        assert body_of(on)[key.name] != body_of(off).get(key.name), (api, p.key)
    off = body_of(build_request(ep, [1], neutral_sampling(), n_vocab=500)[1])
    assert off["top_k"] == {"llama-server": 0, "openai": 500, "sglang": -1}[api]   # each engine's "off"
    if api == "llama-server":
        assert off["top_n_sigma"] == -1.0 and off["seed"] == -1


def test_engine_defaults_and_inexact_stages_come_from_the_table():
    from decoding_lab import engines
    from decoding_lab.params import PARAMS, engine_rows
    assert engines._VLLM_KEYS == {p.key: k.name for p, k in engine_rows("vllm-gen-config")}
    assert engines.engine_default_values("llama-server")["top_k"] == PARAMS["top_k"].engine_default("llama-server") == 40
    inexact = {p.key for p in PARAMS.values() if p.top_n_inexact}
    assert inexact == {"dynatemp_range", "typical_p", "top_n_sigma", "xtc_probability", "repetition_penalty"}
    assert not PARAMS["top_n_sigma"].inexact_from_top_n(-1.0) and PARAMS["top_n_sigma"].inexact_from_top_n(1.5)
    assert not PARAMS["xtc_probability"].inexact_from_top_n(1.0)   # XTC that always fires needs no coin
    assert PARAMS["xtc_probability"].inexact_from_top_n(0.5) and not PARAMS["top_k"].inexact_from_top_n(5)
