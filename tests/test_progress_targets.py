"""The page's wide and progress-hidden events keep their loading status on one hidden component
that no event writes (``ui.common.progress``): gradio's page rewrites the status of every
component an event ever wrote on each status message of any event, so one wide event left at
gradio's default slows every later one, and a status written to a component another event is
writing can put its old value back."""

from __future__ import annotations

import gradio as gr
import pytest

from decoding_lab.ui.common.progress import WIDE, narrow_progress


def _targets(fn) -> list:
    """What gradio's page tracks for ``fn``: ``show_progress_on``, else the outputs."""
    return list(fn.show_progress_on or fn.outputs)


@pytest.mark.app   # builds the whole page
def test_no_event_of_the_page_tracks_a_wide_set_of_components():
    from decoding_lab.ui import build_demo
    demo = build_demo()
    fns = [f for f in demo.fns.values() if not f.is_validator_function]
    wide = {str(f.api_name): len(f.outputs) for f in fns if len(f.outputs) > WIDE}
    # the events this is for are still there and still wide: the language switch, the link's restore, a lesson's load
    assert {"set_language", "restore_from_url", "lesson_load"} <= set(wide), wide
    assert max(len(_targets(f)) for f in fns) <= WIDE
    assert all(len(_targets(f)) <= 1 for f in fns if f.show_progress == "hidden")
    # every narrowed event tracks the one hidden sink, and no event writes it
    by_name = {str(f.api_name): f for f in fns}
    sinks = {c.elem_id for f in fns if f.show_progress_on and len(f.show_progress_on) == 1 and
             (len(f.outputs) > WIDE or f.show_progress == "hidden") for c in f.show_progress_on}
    assert sinks == {"progress-sink"}, sinks
    sink = by_name["set_language"].show_progress_on[0]
    assert sink.visible is False and by_name["lesson_load"].show_progress_on == [sink]
    assert not any(sink in f.outputs for f in fns)
    # what a fresh page tracks after its start-up events (the load events and what they chain)
    start = _chained_from_load(demo)
    tracked = {c._id for f in start for c in _targets(f) if f.fn is not None}
    assert len(start) >= 3 and len(tracked) <= 12, (len(start), len(tracked))


def _chained_from_load(demo) -> list:
    fns = list(demo.fns.values())
    chosen = [f for f in fns if any(event == "load" for _, event in f.targets)]
    ids = {f._id for f in chosen}
    grew = True
    while grew:
        after = [f for f in fns if f._id not in ids and f.trigger_after in ids]
        chosen += after
        ids |= {f._id for f in after}
        grew = bool(after)
    return chosen


def test_each_kind_of_event_gets_the_target_it_should():
    with gr.Blocks() as demo:
        btn = gr.Button("go")
        boxes = [gr.Textbox(str(i)) for i in range(WIDE + 1)]
        wide = btn.click(lambda: [""] * len(boxes), None, boxes)
        chained = wide.then(lambda: [""] * len(boxes), None, boxes)
        hidden = btn.click(lambda: ["", ""], None, boxes[:2], show_progress="hidden")
        narrow = btn.click(lambda: ["", ""], None, boxes[:2])
        named = btn.click(lambda: [""] * len(boxes), None, boxes, show_progress_on=boxes[5])
        demo.load(lambda: [""] * len(boxes), None, boxes)
        sink = gr.Markdown(visible=False)
    assert narrow_progress(demo, sink) == 4
    fns = list(demo.fns.values())
    wide_fn, chained_fn, hidden_fn, narrow_fn, named_fn, load_fn = fns
    assert wide_fn.show_progress_on == [sink]              # a wide click
    assert chained_fn.show_progress_on == [sink]           # a wide chained event
    assert load_fn.show_progress_on == [sink]              # the page's load
    assert hidden_fn.show_progress_on == [sink]            # shows nothing: one status kept
    assert narrow_fn.show_progress_on is None              # a narrow event keeps gradio's default
    assert named_fn.show_progress_on == [boxes[5]]         # one named by its wiring is kept
    assert all(x is not None for x in (wide, chained, hidden, narrow, named))
    assert narrow_progress(demo, sink) == 0                # a second call changes nothing


def test_a_sink_an_event_writes_is_refused():
    with gr.Blocks() as demo:
        btn = gr.Button("go")
        box = gr.Textbox()
        btn.click(lambda: "", None, box)
    with pytest.raises(ValueError, match="no event writes"):
        narrow_progress(demo, box)
