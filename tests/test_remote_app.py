"""A configured server in the app: its name in the Explorer's and Compare's model lists, and the
Explorer stepping it through gradio_client, with the "top-N of V" rows in the numbers table and
what the engine's own sampler kept beside what ours kept. The server is llama.cpp's
``llama-server``, on 127.0.0.1, with the bundled GGUF (``conftest_app``)."""

from __future__ import annotations

import pytest
from gradio_client import Client
from gradio_client.exceptions import ValidationError

from conftest_app import (SHOTS, closing_page, configured_endpoints, explorer_args, llama_server_endpoints,
                          loopback_llama_server, open_page, running_app)

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def app():
    # the endpoints are read when the page is built and at each request
    with loopback_llama_server() as url, configured_endpoints(llama_server_endpoints(url)):
        with running_app() as (demo, app_url):
            yield demo, Client(app_url, verbose=False), app_url


def choices_of(demo, elem_id: str) -> list:
    comp = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)
    return [c[1] if isinstance(c, (tuple, list)) else c for c in comp.choices]


def test_the_configured_server_is_offered_where_models_are_picked(app):
    demo, _, _ = app
    assert "remote:llama" in choices_of(demo, "model")
    assert "remote:llama" in choices_of(demo, "cmp-model")


def test_the_explorer_steps_a_served_model_and_says_what_it_reported(app):
    from decoding_lab.models import get_model
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    demo, client, _ = app
    args = explorer_args(model="remote:llama")
    client.predict(**args, api_name="/explorer_reset")
    out = client.predict(**args, api_name="/explorer_step_n", n=4)
    numbers = next(o for o in out if isinstance(o, str) and "Reported by the server" in o)
    assert "top-20 of 49,152 tokens" in numbers and "spread evenly over the other 49,132 tokens" in numbers
    # the engine's own pick is our greedy pick at T 0 (the settings are sent with each request)
    local = Stepper.from_prompt(get_model("smollm2-135m-instruct@llama.cpp"), args["prompt"], chat=True,
                                  settings=SamplingSettings(temperature=0.0))
    local.steps(4)
    pick = local.traces[-1].chosen_token_id
    assert f"(id {pick})" in numbers.split("The engine's own pick")[1].splitlines()[0]


def test_an_unconfigured_server_is_refused_by_name(app):
    _, client, _ = app
    with pytest.raises(ValidationError, match="model must be one of"):
        client.predict(**explorer_args(model="remote:elsewhere"), api_name="/explorer_step")
    with pytest.raises(ValidationError, match="model must be one of"):
        client.predict(**explorer_args(model="http://10.0.0.1:8000"), api_name="/explorer_step")


def test_compare_runs_a_served_model_column_by_column(app):
    """A greedy and a sampled column on the server, side by side in the table like any model's:
    the greedy column is ours, one token per request (with each step's entropy); the sampled one is
    the server's own sample, drawn whole in one request with the column's seed, so it is exactly
    what asking the engine directly gives, and the column says who drew it."""
    import html
    import json

    from decoding_lab.models import get_model
    from decoding_lab.strategies.engine_samples import engine_samples
    from decoding_lab.settings import SamplingSettings
    _, client, _ = app
    args = {"model": "remote:llama", "prompt": "Say hello.", "ncols": 2, "max_new_tokens": 12, "c0_strategy": "greedy",
            "c1_strategy": "sample", "c1_temperature": 0.9, "c1_top_p": 0.9, "c1_seed": 3}
    *outs, entropy, table = client.submit(**args, api_name="/compare_run").result(timeout=300)
    assert len(table["data"]) == 2 and all(1 <= row[1] <= 12 for row in table["data"])
    assert "greedy" in outs[0] and "T=0.9" in outs[1]
    assert "cmp-note" not in outs[0] and "Drawn by the server's own sampler (llama, llama-server)" in outs[1]
    lm = get_model("remote:llama")
    direct = engine_samples(lm, lm.encode_prompt("Say hello.", True),
                            SamplingSettings(temperature=0.9, top_p=0.9, seed=3, order="transformers"), 1, 12)
    text = outs[1].split("<div class='cmp-text'>")[1].split("</div>")[0]
    assert direct.text and text == html.escape(direct.text).replace("\n", "<br>")
    # the entropy plot has the greedy column's line only: a whole sample reports no distributions
    names = [tr.get("name") for tr in json.loads(entropy["plot"])["data"]]
    assert names == ["1: greedy"]


def test_a_sampled_step_sets_the_engines_kept_tokens_beside_ours(app):
    """With the llama.cpp preset, llama-server's own chain keeps what ours keeps, and the numbers
    table says so; with a repetition penalty on, the table says that stage is approximate here."""
    _, client, _ = app
    args = explorer_args(model="remote:llama", prompt="Tell me a story about a dog.", temperature=0.8, top_k=10,
                         order_preset="llama.cpp", seed=3)
    client.predict(**args, api_name="/explorer_reset")
    out = client.predict(**args, api_name="/explorer_step_n", n=3)
    numbers = next(o for o in out if isinstance(o, str) and "Reported by the server" in o)
    kept = next(line for line in numbers.splitlines() if line.startswith("| What the engine's sampler kept"))
    assert "10 tokens, the same 10 as our chain kept" in kept, kept
    assert "Approximate on a server" not in numbers
    penal = {**args, "repetition_penalty": 1.3}
    client.predict(**penal, api_name="/explorer_reset")
    out = client.predict(**penal, api_name="/explorer_step")
    numbers = next(o for o in out if isinstance(o, str) and "Reported by the server" in o)
    assert "| Approximate on a server | repetition-penalty:" in numbers


@pytest.mark.browser
def test_the_chart_marks_what_the_engine_kept(app, browser):
    """A person opens a link to the served model at T 0.8, top-k 10 (llama.cpp order) and steps once:
    the chart marks the engine's kept tokens with diamonds and the table says they are ours."""
    _, _, url = app
    with closing_page(browser) as new_page:
        page = open_page(new_page,
                         url + "?model=remote:llama&prompt=Tell+me+a+story+about+a+dog.&T=0.8&top_k=10"
                               "&order=llama.cpp&seed=3")
        page.wait_for_function("document.querySelector('#temperature input[type=number]').value === '0.8'")
        page.click("#step-btn")
        page.locator("#dist-chart .legendtext", has_text="kept by the server's own sampler").wait_for(timeout=120_000)
        kept = page.locator("#numbers tr", has_text="What the engine's sampler kept")
        kept.wait_for(timeout=30_000)
        assert "the same 10 as our chain kept" in kept.inner_text()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "explorer_llama_server.png"), full_page=True)
        assert page.locator("#dist-chart .scatterlayer .point").count() == 10


@pytest.mark.browser
def test_compare_says_which_column_the_server_drew(app, browser):
    """A person picks the served model on Compare and runs the starting columns (greedy, beam,
    sampling) with beam set to greedy: the sampled column reads "Drawn by the server's own
    sampler", the greedy one does not, and the entropy plot has the greedy column's line."""
    _, _, url = app
    with closing_page(browser) as new_page:
        page = open_page(new_page, url, tab="compare")
        page.click("#cmp-model input")
        page.get_by_role("option", name="remote:llama").click()
        page.wait_for_function("document.querySelector('#cmp-model input').value === 'remote:llama'")
        page.locator("#cmp1-strategy").get_by_text("greedy", exact=True).click()  # beam refuses a server
        page.fill("#cmp-max-new input[type=number]", "24")
        page.press("#cmp-max-new input[type=number]", "Enter")
        page.click("#cmp-run")
        note = page.locator(".cmp-note", has_text="Drawn by the server's own sampler")
        note.wait_for(timeout=120_000)
        assert note.count() == 1
        page.locator("#cmp-table", has_text="3:").wait_for(timeout=120_000)
        outs = page.locator(".cmp-out")
        assert "Drawn by the server" not in outs.nth(0).inner_text()
        assert "Drawn by the server" in outs.nth(2).inner_text()
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "compare_llama_server.png"), full_page=True)
