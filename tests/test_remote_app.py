"""A configured server in the app: its name in the Explorer's and Compare's model lists, and the
Explorer stepping it through gradio_client, with the "top-N of V" rows in the numbers table.
The server is llama-cpp-python's, on 127.0.0.1, with the bundled GGUF (``conftest_app``)."""

from __future__ import annotations

import os

import pytest
from gradio_client import Client
from gradio_client.exceptions import ValidationError

from conftest_app import explorer_args, loopback_endpoints, loopback_llama_server, running_app
from decoding_lab.remote.config import ENV

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def app():
    with loopback_llama_server() as url:
        before = os.environ.get(ENV)
        os.environ[ENV] = loopback_endpoints(url)   # read when the page is built and at each request
        try:
            with running_app() as (demo, app_url):
                yield demo, Client(app_url, verbose=False)
        finally:
            if before is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = before


def choices_of(demo, elem_id: str) -> list:
    comp = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)
    return [c[1] if isinstance(c, (tuple, list)) else c for c in comp.choices]


def test_the_configured_server_is_offered_where_models_are_picked(app):
    demo, _ = app
    assert "remote:loop" in choices_of(demo, "model")
    assert "remote:loop" in choices_of(demo, "cmp-model")


def test_the_explorer_steps_a_served_model_and_says_what_it_reported(app):
    from decoding_lab.models import get_model
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    demo, client = app
    args = explorer_args(model="remote:loop")
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
    _, client = app
    with pytest.raises(ValidationError, match="model must be one of"):
        client.predict(**explorer_args(model="remote:elsewhere"), api_name="/explorer_step")
    with pytest.raises(ValidationError, match="model must be one of"):
        client.predict(**explorer_args(model="http://10.0.0.1:8000"), api_name="/explorer_step")


def test_compare_runs_a_served_model_column_by_column(app):
    """A greedy and a sampled column on the server: each runs one sequence (the server is asked one
    token at a time), side by side in the table like any model's."""
    _, client = app
    args = {"model": "remote:loop", "prompt": "Say hello.", "ncols": 2, "max_new_tokens": 4, "c0_strategy": "greedy",
            "c1_strategy": "sample", "c1_temperature": 0.9, "c1_top_p": 0.9, "c1_seed": 3}
    *outs, _entropy, table = client.submit(**args, api_name="/compare_run").result(timeout=300)
    assert len(table["data"]) == 2 and all(1 <= row[1] <= 4 for row in table["data"])
    assert "greedy" in outs[0] and "T=0.9" in outs[1]
