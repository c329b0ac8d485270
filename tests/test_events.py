"""Every model event goes through ``events.model_event`` (the GPU wrapper, the one-line error,
named inputs, the tab's job slot and a model slot): the test walks the built page."""

from __future__ import annotations

import gradio as gr
import pytest

from decoding_lab.ui.common.events import is_model_event, model_event, unwrapped_model_events

pytestmark = pytest.mark.app   # builds the whole page


def test_every_model_event_of_the_page_is_wired_by_model_event():
    from decoding_lab.ui import build_demo
    demo = build_demo()
    model_events = [f for f in demo.fns.values() if f.concurrency_id == "model" and not f.is_validator_function]
    names = {str(f.api_name) for f in model_events}
    # the three that ran without the GPU wrapper before, and the Explorer's Step
    assert {"determinism_run", "lesson_run", "lesson_load", "explorer_step"} <= names, sorted(names)
    assert unwrapped_model_events(demo) == []


def test_the_check_names_an_event_wired_by_hand():
    with gr.Blocks() as demo:
        btn, out = gr.Button(), gr.Textbox()
        btn.click(lambda: "by hand", None, out, api_name="by_hand", concurrency_id="model")
        btn.click(model_event(lambda v: "through the helper", [], None), None, out, api_name="helper",
                  concurrency_id="model")
        btn.click(lambda: "light", None, out, api_name="light")   # not a model event: not counted
    assert unwrapped_model_events(demo) == ["by_hand"]


def test_the_mark_survives_the_wrappers_around_it():
    import functools

    h = model_event(lambda v: v["x"], ["x"], None)

    @functools.wraps(h)
    def outer(*a):
        return h(*a)

    assert is_model_event(h) and is_model_event(outer) and not is_model_event(lambda: None)
    assert outer(3) == 3
