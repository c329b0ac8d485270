"""The Grammar tab alone in a small Blocks, driven through gradio_client on the live default model.

The app runs in this process, so the test can compare what the tab shows with the core's
own records. Bad input must give a one-line error while the server keeps serving."""

from __future__ import annotations

import html
import json
import os
import re

import pytest
from gradio_client import Client
from gradio_client.exceptions import ValidationError

from conftest_app import free_port, note_start

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

pytestmark = pytest.mark.real

STEP_OUT = ["status", "generated", "trace", "forbidden", "timing"]
CMP_OUT = ["summary", "view"]
HEAL_OUT = ["summary", "without", "with"]



def build_app():
    """The tab alone, built the way the page builds it: ``build(ctx)`` with the Explorer's model picker."""
    import gradio as gr

    from decoding_lab.models import DEFAULT_MODEL
    from decoding_lab.ui import grammar
    from decoding_lab.ui.common.sessions import SessionJobs
    from decoding_lab.ui.common.state import Labels
    from decoding_lab.ui.common.tab import ModelPicker, TabContext

    with gr.Blocks() as demo:
        lang_state = gr.State("en")
        model = gr.Dropdown([DEFAULT_MODEL], value=DEFAULT_MODEL, label="Model")
        hub = gr.Textbox("", label="Hub id")
        chat = gr.Radio(["chat", "raw"], value="chat", label="Prompt format")
        ctx = TabContext("en", lang_state, SessionJobs(), Labels(), picker=ModelPicker(model, hub, chat), page=demo)
        tab = grammar.build(ctx)
    demo.ctx, demo.tab = ctx, tab  # type: ignore[attr-defined]
    return demo, tab.parts


@pytest.fixture(scope="module")
def app_url(smollm):  # smollm: the model is loaded before the first request
    demo, _ = build_app()
    demo.queue(default_concurrency_limit=2, max_size=32)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    note_start("app (one tab)")
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture
def client(app_url):
    return Client(app_url, verbose=False)  # one client = one session


def args(**kw):
    base = {"model": "smollm2-135m-instruct", "hub_id": "", "kind": "preset", "preset": "json-person",
            "constraint": "", "prompt": "Describe a fictional person as JSON with the fields name, age, city and "
            "is_student.", "chat": "chat", "temperature": 0.0, "seed": 0, "max_new_tokens": 64}
    base.update(kw)
    return base


def step(client, endpoint="/grammar_step", **kw):
    return dict(zip(STEP_OUT, client.predict(**args(**kw), api_name=endpoint)))


def plot(value) -> dict:
    return json.loads(value["plot"])


def test_step_with_json_preset_shows_the_core_records(client, smollm):
    from decoding_lab.grammar import GrammarMask, preset
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper

    r = step(client)
    assert "Step 0" in r["status"] and "forced" in r["status"]  # '{"' is the only way to start the object
    r = step(client, endpoint="/grammar_step_n", n_steps=4)
    fig = plot(r["trace"])
    allowed = fig["data"][0]["y"]
    assert len(allowed) == 5
    core = Stepper.from_prompt(smollm, args()["prompt"], True, SamplingSettings(temperature=0.0), top_n=40,
                               extra_stages={"grammar": GrammarMask(preset("json-person"), smollm)})
    traces = core.steps(5)
    want = [next(s for s in tr.stages if s.name == "grammar") for tr in traces]
    assert allowed == [w.extra.allowed for w in want]
    assert fig["data"][-1]["y"] == pytest.approx([w.removed_mass for w in want], abs=1e-9)
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert "grammar compile" in r["timing"] and "mask, this step" in r["timing"]
    assert set(r["forbidden"]["headers"]) >= {"token", "p (model)"}
    shown = html.unescape(re.sub(r"<[^>]+>", "", r["generated"]))
    assert core.text().startswith('{"name": "') and shown.startswith(core.text())


def test_bad_regex_is_a_clear_error_and_the_server_stays_up(client):
    step(client)
    # refused before the event runs (the Run's validator compiles it): the message names the grammar box's problem
    with pytest.raises(ValidationError, match="invalid regex '\\[a-': unclosed character class"):
        step(client, kind="regex", constraint="[a-")
    with pytest.raises(ValidationError, match="JSON schema"):
        step(client, endpoint="/grammar_reset", kind="json_schema", constraint="{not json")
    r = step(client, kind="regex", constraint="[0-9]{1,3}", prompt="How many legs does a spider have?")
    assert "Step 0" in r["status"]  # a fresh session on the new constraint


def test_budget_exhausted_is_a_warning_not_a_crash(client):
    r = step(client, endpoint="/grammar_step_n", n_steps=20, max_new_tokens=8)
    assert "Step 7" in r["status"] and "not complete yet" in r["status"]
    r = step(client, max_new_tokens=8)  # over budget: the same view, a toast, no error
    assert "Step 7" in r["status"]


def test_compare_constrained_vs_free(client):
    out = dict(zip(CMP_OUT, client.predict(**args(temperature=0.8, n=2, max_new_tokens=80),
                                           api_name="/grammar_compare")))
    assert "constrained: **0%**" in out["summary"]
    assert out["view"].count("data-valid='true'") >= 2
    assert out["view"].count("grammar-sample") == 4


def test_kind_switch_and_healing(client):
    from decoding_lab.ui.grammar.handlers import EXAMPLES
    text, prompt, _ = client.predict(kind="regex", preset="json-person", api_name="/grammar_kind")
    assert "am|pm" in (text["value"] if isinstance(text, dict) else text)
    assert prompt == EXAMPLES["regex"][1]              # the box held the tab's own example: replaced
    # a prompt the visitor wrote stays when the kind changes (the example is offered in a note)
    mine = "Tell me when the bakery opens."
    _, kept, _ = client.predict(kind="choices", preset="json-person", prompt=mine, api_name="/grammar_kind")
    assert kept == mine
    _, switched, _ = client.predict(kind="choices", preset="json-person", prompt=EXAMPLES["regex"][1],
                                    api_name="/grammar_kind")
    assert switched == EXAMPLES["choices"][1]
    out = dict(zip(HEAL_OUT, client.predict(model="smollm2-135m-instruct", hub_id="",
                                            prompt="Describe a fictional person as JSON.", chat="chat",
                                            prefix='{"name": "', api_name="/grammar_heal")))
    assert "Removed prompt text" in out["summary"]
    assert len(out["without"]["data"]) == 10 and len(out["with"]["data"]) >= 1


def test_rerender_in_chinese():
    from decoding_lab.ui.common.state import merge_updates

    demo, ui = build_app()
    drawn = demo.tab.relabel("zh", None, None, None)
    out = merge_updates(demo.ctx.labels.updates("zh"), drawn)  # what the page's language switch sends
    assert out[ui.step]["value"] == "单步"
    assert set(drawn) == set(demo.tab.views)
    assert demo.tab.states == [ui.session, ui.cmp_last, ui.heal_last]


def test_fill_loads_a_preset_or_a_kind():
    from decoding_lab.grammar import GrammarError, preset
    from decoding_lab.ui.grammar import load_constraint

    demo, ui = build_app()
    tab, picker = demo.tab, demo.ctx.picker
    out = tab.fill({"tab": "grammar", "constraint": "integer"}, "en")  # a lesson preset without a prompt
    assert out[ui.kind] == "preset" and out[ui.prompt].startswith("How many legs")
    assert out[ui.text]["value"] == preset("integer").source
    assert (out[picker.hub], out[picker.chat]) == ("", "chat") and picker.model not in out  # the model chosen stays
    assert set(out) <= set(tab.fill_outputs)
    out = tab.fill({"tab": "grammar", "model": "smollm2-135m-instruct", "chat": False, "constraint": "answer-abcd",
                    "prompt": "Pick one."}, "en")
    assert (out[picker.model], out[picker.chat], out[ui.prompt]) == ("smollm2-135m-instruct", "raw", "Pick one.")
    out = load_constraint(ui, kind="regex", text="[0-9]+", prompt="Count.")
    assert (out[ui.kind], out[ui.text]["value"], out[ui.prompt]) == ("regex", "[0-9]+", "Count.")
    with pytest.raises(GrammarError):
        tab.fill({"tab": "grammar", "constraint": "nope"}, "en")


def test_one_request_checked_once_and_one_error_badge():
    """Every model event reads one ``GrammarRequest``: a bad regex fails there (before a model
    loads or the session is touched), and the events show progress, and so an error, on one block."""
    from decoding_lab.grammar import GrammarError
    from decoding_lab.ui.grammar import GrammarRequest

    with pytest.raises(GrammarError, match="invalid regex"):
        GrammarRequest.from_inputs({"lang": "en", **args(kind="regex", constraint="[a-")})
    a = GrammarRequest.from_inputs({"lang": "en", **args(temperature=0.0)})
    b = GrammarRequest.from_inputs({"lang": "en", **args(temperature=0.9, seed=3, max_new_tokens=8, n_steps=4)})
    assert a.key == b.key and b.n_steps == 4 and b.settings.temperature == 0.9  # only the prompt side restarts
    assert GrammarRequest.from_inputs({"lang": "en", **args(hub_id=" owner/m ")}).model == "owner/m"
    demo, ui = build_app()
    deps = {d["api_name"]: d for d in demo.config["dependencies"]}
    for name in ("grammar_step", "grammar_step_n", "grammar_reset"):
        assert deps[name]["show_progress_on"] == [ui.generated._id], name
    assert deps["grammar_compare"]["show_progress_on"] == [ui.cmp_view._id]
