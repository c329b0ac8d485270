"""A configured vLLM endpoint in the app: the Explorer steps it exactly (the raw-logits server of
``conftest.vllm_servers``: the same top-20 and entropy as the in-process transformers backend on the
same weights, within float32 noise), Compare runs a column on it, a sweep draws its samples, and the
Temperature-0 tab's served paths ask it for one greedy answer alone and beside other requests.

The shared app reads ``DECODING_LAB_ENDPOINTS`` at each request, so each test configures the
endpoint around its own calls (``configured_endpoints``)."""

from __future__ import annotations

import json

import pytest

from conftest_app import configured_endpoints, explorer_args, vllm_endpoints
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper

PROMPT = "What is the capital of France?"
STEPS = 5


@pytest.fixture
def vllm(vllm_servers):
    """The raw-logits server, configured as ``remote:vllm`` for the test."""
    with configured_endpoints(vllm_endpoints(vllm_servers[1])):
        yield vllm_servers[1]


def exported_steps(client) -> list[dict]:
    value = client.predict(api_name="/explorer_export")
    files = value["value"] if isinstance(value, dict) else value
    path = next(f for f in files if f.endswith(".json"))
    with open(path, encoding="utf-8") as f:
        return json.load(f)["steps"]


@pytest.mark.parametrize("settings", [dict(temperature=0.0),
                                      dict(temperature=0.8, top_k=40, top_p=0.95, repetition_penalty=1.2,
                                           order_preset="vllm", seed=3)], ids=["greedy", "sampled"])
def test_the_explorer_steps_a_vllm_endpoint_exactly(vllm, client, smollm, settings):
    args = explorer_args(model="remote:vllm", **settings)
    client.predict(**args, api_name="/explorer_reset")
    client.predict(**args, api_name="/explorer_step_n", n=STEPS)
    served = exported_steps(client)
    local = Stepper.from_prompt(smollm, PROMPT, True, SamplingSettings(
        **{k: v for k, v in settings.items() if k != "order_preset"}, order=settings.get("order_preset", "transformers")),
        top_n=20)
    assert len(served) == STEPS
    for theirs in served:
        ours = local.step()
        assert theirs["chosen_token_id"] == ours.chosen_token_id
        assert [r["token_id"] for r in theirs["top"][:20]] == [r.token_id for r in ours.top[:20]]
        assert theirs["entropy"] == pytest.approx(ours.entropy, abs=1e-3)
        assert theirs["entropy_final"] == pytest.approx(ours.entropy_final, abs=1e-3)
        assert max(abs(a["p_final"] - b.p_final) for a, b in zip(theirs["top"], ours.top)) < 1e-4
        assert theirs["reported"]["inexact"] == [] and "raw logits" in theirs["reported"]["exact"][0]
        if settings["temperature"] == 0:   # the engine's own pick under the same settings is ours
            assert theirs["reported"]["chosen_id"] == theirs["chosen_token_id"]


def test_compare_runs_a_greedy_column_on_vllm_as_in_process(vllm, client, smollm):
    from decoding_lab.strategies import greedy
    args = {"model": "remote:vllm", "prompt": "Say hello.", "ncols": 2, "max_new_tokens": 8, "c0_strategy": "greedy",
            "c1_strategy": "sample", "c1_temperature": 0.9, "c1_top_p": 0.9, "c1_seed": 3}
    *outs, _entropy, table = client.submit(**args, api_name="/compare_run").result(timeout=300)
    want = greedy(smollm, smollm.encode_prompt("Say hello.", True), max_new_tokens=8).sequences[0]
    import html
    assert html.escape(smollm.decode(list(want.token_ids)).strip())[:20] in outs[0]
    assert "Drawn by the server's own sampler (vllm, openai)" in outs[1]
    assert len(table["data"]) == 2


def test_a_sweep_draws_its_samples_on_vllm(vllm):
    from decoding_lab.experiments.grid import SweepConfig
    from decoding_lab.experiments.sweep import run_sweep
    from decoding_lab.models import get_model
    remote = get_model("remote:vllm")
    config = SweepConfig(model="remote:vllm", task="addition", problems=2, n=3, temperatures=(0.8,),
                         truncations=("none", "min-p"), max_new_tokens=16, order="vllm")
    result = run_sweep(config, lm=remote)
    assert result.complete and len(result.cells) == 2 and "remote:vllm's own" in result.environment["sampler"]
    assert all(len(o.correct) == 3 and all(1 <= n <= 16 for n in o.lengths) for c in result.cells for o in c.outcomes)


def test_the_temperature_0_tab_asks_vllm_alone_and_beside_other_requests(vllm, client):
    """The tab's checkboxes start on the local paths (this app was built without a configured server,
    so they are all it lists): for a served model it runs the paths on the server instead, and says
    so (which paths run for which choice is ``handlers.paths_for``'s, tested in test_determinism_paths)."""
    args = {"model": "remote:vllm", "hub": "", "chat": "chat", "prompt": PROMPT, "tokens": 5,
            "variants": ["float32, cached", "float32, full recompute"]}
    result, _plot = client.submit(**args, api_name="/determinism_run").result(timeout=600)[:2]
    assert "remote:vllm is a served model: every path on the server was run." in result
    for name in ("on the server, alone", "on the server, alone again", "on the server, beside other requests"):
        assert f"<b>{name}</b>" in result
    assert "other requests were in flight on the server whenever this path asked for a token" in result
