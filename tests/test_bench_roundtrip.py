"""The UI round-trip bench speaks the browser's protocol to the real app: its push client gets
the same Step outputs gradio_client gets, and a bench run yields well-formed rows. No timing
is asserted (the figures belong to the bench run, not to a test)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real


def test_push_client_reads_the_step_gradio_client_reads(app_url, smollm):
    from gradio_client import Client

    from decoding_lab.ui.bench_roundtrip import PushClient, _controls
    controls = _controls(smollm.name, {"temperature": 0.0})
    params = Client(app_url, verbose=False).view_api(print_info=False, return_format="dict")[
        "named_endpoints"]["/explorer_step"]["parameters"]
    values = [controls.get(p["parameter_name"], p["parameter_default"]) for p in params]
    push = PushClient(app_url)
    try:
        push.predict("explorer_reset", values)
        out = push.predict("explorer_step", values)
    finally:
        push.close()
    ref = Client(app_url, verbose=False)
    ref.predict(**controls, api_name="/explorer_reset")
    expected = ref.predict(**controls, api_name="/explorer_step")
    # the generated text (greedy: the same first token) and the status line agree
    texts = [o for o in out if isinstance(o, str) and "gen-box" in o]
    assert texts and texts[0] == next(o for o in expected if isinstance(o, str) and "gen-box" in o)
    with pytest.raises(RuntimeError, match="explorer_step"):
        bad = PushClient(app_url)
        bad.predict("explorer_step", [*values[:-1], "not a number"])   # top-N: a clear error, not a hang


def test_bench_rows_are_well_formed(smollm):
    from decoding_lab.ui.bench_roundtrip import ui_roundtrip
    rows = ui_roundtrip(smollm, steps=2, rounds=1)
    assert [r["case"] for r in rows] == ["greedy", "T 1.5, top-p 0.9, min-p 0.05"]
    for r in rows:
        assert r["steps"] == 2 and r["ui_step_s"] > 0 and r["core_step_s"] > 0 and r["target"] == 1.3
        assert r["ratio"] == pytest.approx(r["ui_step_s"] / r["core_step_s"])
