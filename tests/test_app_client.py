"""Drive the app's endpoints with gradio_client, on the live default model.

The app runs in this process, so the tests can recompute a step with the core (same
model object, same settings) and demand that the app shows exactly the core's records.
Every tab also gets bad input: a clear message, the server stays up, and the session's
earlier work survives."""

from __future__ import annotations

import csv
import json

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError, ValidationError

#: A refused call: by the handler (an error event) or, for a value a control holds, by the
#: event's validator before the event runs (the same message, beside the control in a browser).
REFUSED = (AppError, ValidationError)

from conftest_app import explorer_args
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper

pytestmark = pytest.mark.real

STEP_OUT = ["dist", "funnel", "entropy", "numbers", "gen", "table", "candidates", "branches", "status", "share"]
VIEW_OUT = STEP_OUT[:-1]


# app_url and client: the shared fixtures in conftest.py


def step(client, endpoint="/explorer_step", names=STEP_OUT, **kw):
    return dict(zip(names, client.predict(**explorer_args(**kw), api_name=endpoint)))


def plot(value) -> dict:
    return json.loads(value["plot"])


def files_of(value) -> list[str]:
    """Export handlers return gr.update(value=files, visible=True); the client passes the update on."""
    return value["value"] if isinstance(value, dict) else value


def test_step_shows_the_core_trace(client, smollm):
    r = step(client)
    assert len(r["table"]["data"]) == 1
    fig = plot(r["dist"])
    core = Stepper.from_prompt(smollm, "What is the capital of France?", True, SamplingSettings(temperature=0.0), top_n=20)
    tr = core.step()
    assert fig["data"][0]["customdata"] == [row.token_id for row in tr.top]
    assert fig["data"][0]["y"] == pytest.approx([row.p_raw for row in tr.top], abs=1e-9)
    assert fig["data"][1]["y"] == pytest.approx([row.p_final for row in tr.top], abs=1e-9)
    assert r["table"]["data"][0][2] == tr.chosen_token_id
    # funnel: model row then the chain; entropy chart: the H(T) curve
    assert plot(r["funnel"])["data"][0]["y"][0] == "model"
    assert len(plot(r["entropy"])["data"][0]["x"]) > 10
    assert "model=smollm2-135m-instruct" in r["share"] and "T=0" in r["share"]
    assert "gen-tok" in r["gen"]


def test_sampling_settings_reproduce_with_seed(client, smollm):
    kw = dict(temperature=0.8, top_p=0.9, seed=7, order_preset="vllm")
    for _ in range(3):
        r = step(client, **kw)
    core = Stepper.from_prompt(smollm, "What is the capital of France?", True,
                               SamplingSettings(temperature=0.8, top_p=0.9, seed=7, order="vllm"), top_n=20)
    expected = [t.chosen_token_id for t in core.steps(3)]
    assert [row[2] for row in r["table"]["data"]] == expected
    assert plot(r["funnel"])["data"][0]["y"] == ["model", "temperature", "top-p"]  # vLLM order, active stages


def test_sessions_are_independent(app_url):
    a, b = Client(app_url, verbose=False), Client(app_url, verbose=False)
    ra = dict(zip(STEP_OUT, a.predict(**explorer_args(n=3), api_name="/explorer_step_n")))
    rb = step(b)
    assert len(ra["table"]["data"]) == 3
    assert len(rb["table"]["data"]) == 1
    assert len(step(a)["table"]["data"]) == 4


@pytest.mark.parametrize("overrides, match", [
    ({"top_p": 0.0}, "top-p"),
    ({"order_preset": "custom", "custom_order": "top-k,foo"}, "foo"),
    ({"min_p": -0.5}, "min-p must be >= 0"),   # the core names the knob (sliders pass the value on as sent)
    ({"top_n": 0}, "top-N must be >= 1, got 0"),   # checked as sent, named by the handler
])
def test_bad_settings_keep_the_session(client, overrides, match):
    step(client)
    step(client)
    with pytest.raises(REFUSED, match=match):
        step(client, **overrides)
    r = step(client)  # the server is up and the two earlier steps are still there
    assert len(r["table"]["data"]) == 3


def test_bad_model_is_a_clear_error(client):
    step(client)
    with pytest.raises(AppError, match="Model error"):
        client.predict(**explorer_args(hub_id="not a model!"), api_name="/explorer_reset")
    assert len(step(client)["table"]["data"]) == 2


def test_force_undo_and_restore_branch(client):
    step(client)
    r = step(client)
    original = r["table"]["data"][-1][2]
    other = [value for _, value in r["candidates"]["choices"] if value != original][0]
    f = dict(zip(VIEW_OUT, client.predict(**explorer_args(token_id=other), api_name="/explorer_force")))
    assert f["table"]["data"][-1][2] == other and f["table"]["data"][-1][9] == "✓"
    assert len(f["branches"]["choices"]) == 1
    u = dict(zip(VIEW_OUT, client.predict(api_name="/explorer_undo")))
    assert len(u["table"]["data"]) == 1 and len(u["branches"]["choices"]) == 2
    back = dict(zip(VIEW_OUT, client.predict(branch=0, api_name="/explorer_restore")))
    assert [row[2] for row in back["table"]["data"]][-1] == original
    with pytest.raises(AppError, match="choices"):  # only the listed branches and candidates can be chosen
        client.predict(branch=99, api_name="/explorer_restore")
    with pytest.raises(AppError, match="choices"):
        client.predict(**explorer_args(token_id=10**9), api_name="/explorer_force")


def test_play_streams_until_end_of_sequence(client):
    job = client.submit(**explorer_args(), api_name="/explorer_play")
    final = dict(zip(STEP_OUT, job.result(timeout=600)))
    assert len(job.outputs()) >= 3  # streamed: one update per step
    text = "".join(row[1] for row in final["table"]["data"]).replace("␣", " ")
    assert "Paris" in text
    assert "end-of-sequence" in final["status"]
    with pytest.raises(AppError, match="end-of-sequence"):
        step(client)


def test_export_json_and_csv(client):
    step(client)
    step(client)
    files = files_of(client.predict(api_name="/explorer_export"))
    by_ext = {f.rsplit(".", 1)[-1]: f for f in files}
    data = json.loads(open(by_ext["json"], encoding="utf-8").read())
    assert len(data["steps"]) == 2 and data["model"] == "smollm2-135m-instruct"
    assert data["settings"]["temperature"] == 0.0
    rows = list(csv.reader(open(by_ext["csv"], encoding="utf-8-sig")))
    assert rows[0][0] == "step" and len(rows) == 3


def test_language_switch_translates_messages(client):
    client.predict("zh", api_name="/set_language")
    r = step(client)
    assert "第 0 步" in r["status"]
    assert "第 0 步" in plot(r["dist"])["layout"]["title"]["text"]
    with pytest.raises(REFUSED, match="输入无效.*top-p"):
        step(client, top_p=0.0)
    client.predict("en", api_name="/set_language")
    assert "Step 1" in step(client)["status"]


def test_order_preset_fills_the_custom_order(client):
    assert client.predict("llama.cpp", api_name="/explorer_order_preset").endswith("temperature")
    # a list from an API caller was an unhandled TypeError (a bare "Error"): now it is either
    # refused by gradio's choice check or changes nothing
    try:
        client.predict(["vllm"], api_name="/explorer_order_preset")
    except REFUSED as e:
        assert "unhashable" not in str(e) and "is not in the list of choices" in str(e), e


# ----------------------------------------------------------------------------- compare
def compare_args(**kw):
    args = {"prompt": "Say hello.", "ncols": 2, "max_new_tokens": 4, "c0_strategy": "greedy",
            "c1_strategy": "sample", "c1_temperature": 0.9, "c1_top_p": 0.9, "c1_seed": 3}
    args.update(kw)
    return args


def test_compare_runs_side_by_side(client):
    job = client.submit(**compare_args(), api_name="/compare_run")
    *outs, entropy, table = job.result(timeout=600)
    assert len(table["data"]) == 2
    assert all(1 <= row[1] <= 4 for row in table["data"])
    assert "greedy" in outs[0] and "T=0.9" in outs[1]
    assert len(plot(entropy)["data"]) == 2
    files = files_of(client.predict(api_name="/compare_export"))
    assert sorted(f.rsplit(".", 1)[-1] for f in files) == ["csv", "json"]
    sent = client.predict(model="smollm2-135m-instruct", prompt="Say hi.", chat="raw", strategy="sample",
                          temperature=0.9, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.0, order="vllm", seed=3,
                          num_beams=4, length_penalty=1.0, api_name="/compare_send_1")
    # the Explorer's model, Hub box, prompt, format, then its settings
    assert list(sent[:4]) == ["smollm2-135m-instruct", "", "Say hi.", "raw"] and 0.9 in sent and "vllm" in sent


def test_compare_bad_column_is_a_clear_error(client):
    with pytest.raises(REFUSED, match="top-p"):
        client.predict(**compare_args(c1_top_p=1.5), api_name="/compare_run")
    with pytest.raises(REFUSED, match="columns must be <= 4, got 7"):  # the slider's range, checked by name
        client.predict(**compare_args(ncols=7), api_name="/compare_run")
    with pytest.raises(REFUSED, match="strategy must be one of"):
        client.predict(**compare_args(c0_strategy="telepathy"), api_name="/compare_run")
    with pytest.raises(REFUSED, match="model must be one of"):   # only the listed models, never any Hub id
        client.predict(**compare_args(model="someone/some-model"), api_name="/compare_run")
    with pytest.raises(AppError, match="num_beams"):
        client.predict(**compare_args(c0_strategy="beam", c0_num_beams=0), api_name="/compare_run")
    assert len(step(client)["table"]["data"]) == 1  # server still fine


# ----------------------------------------------------------------------------- beam
def test_beam_tree_and_alpha_ranking(client):
    tree, table, status = client.predict(num_beams=2, max_new_tokens=5, alphas="0, 1, 2", api_name="/beam_run")
    fig = plot(tree)
    names = {d.get("name") for d in fig["data"]}
    assert {"live beam", "finished"} <= names
    assert len(table["headers"]) == 3 + 3 and table["data"]
    assert sum("★" in cell for row in table["data"] for cell in row[3:]) == 3  # one winner per α
    assert "steps" in status
    files = files_of(client.predict(api_name="/beam_export"))
    assert any(f.endswith(".json") for f in files)
    with pytest.raises(REFUSED, match="α"):
        client.predict(num_beams=2, max_new_tokens=3, alphas="a, b", api_name="/beam_run")
    with pytest.raises(REFUSED, match="early stopping must be one of true, false, never"):
        client.predict(num_beams=2, max_new_tokens=3, early_stopping="sometimes", api_name="/beam_run")
    with pytest.raises(REFUSED, match="beams must be <= 8, got 9"):
        client.predict(num_beams=9, max_new_tokens=3, api_name="/beam_run")


# ----------------------------------------------------------------------------- sharing (no server needed)
def test_url_round_trip():
    from decoding_lab.ui.common import urlstate
    from decoding_lab.ui.common.state import DEFAULTS
    values = {**DEFAULTS, "temperature": 0.7, "top_p": 0.9, "order_preset": "custom", "custom_order": "top-k,temperature"}
    q = urlstate.encode("smollm2-135m-instruct", "Hi there", "raw", values, 30, "zh")
    from urllib.parse import parse_qsl
    back, notes = urlstate.decode(dict(parse_qsl(q)))
    assert not notes
    assert back["temperature"] == 0.7 and back["top_p"] == 0.9 and back["prompt"] == "Hi there"
    assert back["order_preset"] == "custom" and back["custom_order"] == "top-k,temperature"
    assert back["chat"] == "raw" and back["top_n"] == 30 and back["lang"] == "zh"
    _, notes = urlstate.decode({"T": "hot"})
    assert notes and "T=" in notes[0]
    back, notes = urlstate.decode({"T": "nan", "n": "1e999", "seed": "inf", "top_k": "3"})  # a hostile link
    assert back == {"top_k": 3} and len(notes) == 3


def test_url_values_go_through_the_controls_checks():
    """A link's values meet the same checks as typed ones: out of range or fractional values
    are refused by name and the control keeps its default (never shows a 7 for top-p)."""
    from decoding_lab.ui.common import urlstate
    back, notes = urlstate.decode({"top_p": "7", "top_k": "1.5", "T": "-1", "n": "500", "min_p": "0.1"})
    assert back == {"min_p": 0.1}
    assert len(notes) == 4
    joined = " ".join(notes)
    for name in ("Top-p", "Top-k", "Temperature", "tokens shown"):
        assert name.lower() in joined.lower(), (name, notes)


# ----------------------------------------------------------------------------- lessons (if mounted)
def test_lesson_loads_its_experiment(client):
    api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    if "/lesson_load" not in api:
        pytest.skip("the lessons tab is not mounted")
    loaded = client.predict(api_name="/lesson_load")  # the first lesson: an Explorer preset that runs its steps
    assert "Loaded" in loaded[0]
    r = step(client, prompt=loaded[3], temperature=0.0)
    assert len(r["table"]["data"]) >= 2  # the lesson's steps are in this session, and stepping goes on


def test_llama_cpp_samplers_step_in_the_app(client, smollm):
    """The four samplers llama.cpp has (DRY, XTC, top-n-sigma, dynamic temperature) are Explorer
    controls: the app's step equals the core's with the same settings."""
    kw = dict(temperature=0.8, dynatemp_range=0.4, top_n_sigma=1.5, xtc_probability=1.0, xtc_threshold=0.05,
              dry_multiplier=0.8, seed=5, order_preset="llama.cpp")
    for _ in range(3):
        r = step(client, **kw)
    settings = SamplingSettings(temperature=0.8, dynatemp_range=0.4, top_n_sigma=1.5, xtc_probability=1.0,
                                xtc_threshold=0.05, dry_multiplier=0.8, seed=5, order="llama.cpp")
    core = Stepper.from_prompt(smollm, "What is the capital of France?", True, settings, top_n=20)
    assert [row[2] for row in r["table"]["data"]] == [t.chosen_token_id for t in core.steps(3)]
    funnel = plot(r["funnel"])["data"][0]["y"]
    assert funnel[0] == "model" and {"dry", "top-n-sigma", "xtc", "temperature"} <= set(funnel)


def test_fractional_and_boolean_integers_are_refused(client):
    with pytest.raises(REFUSED, match="whole number"):
        client.predict(**explorer_args(top_k=1.5), api_name="/explorer_step")
    assert len(step(client)["table"]["data"]) == 1       # the refused step left nothing behind
    from decoding_lab.errors import SettingsError
    from decoding_lab.ui.explorer.handlers import token_id_of
    for bad in (2.7, "2.7", True, "nan", "inf", [], {}):  # the click box sends text; an API caller anything
        with pytest.raises(SettingsError, match="whole number"):
            token_id_of(bad)
    assert token_id_of("7") == 7 and token_id_of(7.0) == 7


def test_temperature_zero_tab_shows_the_two_engines_part(client):
    """The same GGUF through transformers (float32) and llama.cpp's kernels, live in the tab."""
    from decoding_lab.llamacpp import available
    if not available():
        pytest.fail("llama-cpp-python is part of the test set-up (scripts/install.sh)")
    html_out, _fig = client.predict(
        model="smollm2-135m-instruct", hub="", chat="chat", prompt="What is the capital of France?",
        tokens=6, variants=["float32, cached", "llama.cpp kernels, same GGUF"], api_name="/determinism_run")
    assert "The capital of France is" in html_out
    assert "llama.cpp kernels, same GGUF</b>: first differs at step 0" in html_out


@pytest.mark.parametrize("bad, words", [
    (dict(prompt="   "), "prompt is empty"),
    (dict(variants=["float32, cached"]), "at least two numerical paths"),
    (dict(tokens=10_000), "new tokens must be <= "),
    (dict(chat="poem"), "prompt format must be one of chat, raw"),
    (dict(model="no-such-model"), "model must be one of"),
])
def test_temperature_zero_refuses_bad_input_by_name(client, bad, words):
    """The Run's validator refuses each bad field before any path runs; the tab still runs after."""
    args = dict(model="smollm2-135m-instruct", hub="", chat="chat", prompt="What is 2+2?", tokens=4,
                variants=["float32, cached", "float32, full recompute"])
    with pytest.raises(ValidationError, match=words):
        client.predict(**{**args, **bad}, api_name="/determinism_run")
