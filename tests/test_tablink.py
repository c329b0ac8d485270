"""A tab's setup in a share link (``ui.common.tablink``): what the browser writes is the changed
controls only, and what a link sets back is checked as a person's typing would be."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from decoding_lab.errors import SettingsError
from decoding_lab.ui.common import tablink


@pytest.fixture(scope="module")
def link():
    with gr.Blocks():
        return {"prompt": gr.Textbox("hello"), "beams": gr.Slider(1, 8, value=4, step=1),
                "alpha": gr.Number(1.0), "c1.temperature": gr.Slider(0, 2, value=0.8),
                "kind": gr.Radio([("Regex", "regex"), ("Preset", "preset")], value="preset"),
                "paths": gr.CheckboxGroup(["a", "b"], value=["a"]), "early": gr.Checkbox(False),
                "note": gr.Markdown("a note")}


def test_a_link_sets_back_what_a_person_could_type(link):
    text = json.dumps({"prompt": "hi", "beams": 6, "alpha": -0.5, "c1.temperature": 1.5, "kind": "regex",
                       "paths": ["b"], "early": True})
    values, notes = tablink.restore("beam", link, text)
    assert notes == []
    assert values == {"prompt": "hi", "beams": 6, "alpha": -0.5, "c1.temperature": 1.5, "kind": "regex",
                      "paths": ["b"], "early": True}
    assert isinstance(values["beams"], int)


@pytest.mark.parametrize("name, value, says", [
    ("beams", 9, "outside"), ("beams", 2.5, "whole"), ("beams", True, "not a number"),
    ("c1.temperature", -3, "c1.temperature"),          # the parameter table's own check, named
    ("c1.temperature", float("nan"), "not a number"), ("kind", "telepathy", "must be one of regex, preset"),
    ("paths", ["c"], "choices"), ("early", "yes", "true or false"), ("prompt", 7, "text"),
    ("note", "x", "cannot be set"),
    ("prompt", "a\ud800b", "character 2 is a lone surrogate"),   # gradio could not send it back: the page broke
    ("kind", "re\udcffgex", "lone surrogate"),
])
def test_a_value_no_person_could_set_is_refused_by_name(link, name, value, says):
    with pytest.raises(SettingsError, match=says):
        tablink.check_value(name, link[name], value)
    values, notes = tablink.restore("beam", link, json.dumps({name: value, "alpha": 2}))   # the rest is kept
    assert values == {"alpha": 2} and len(notes) == 1 and name in notes[0]


def test_unreadable_or_oversized_setups_restore_nothing_and_say_so(link):
    deep = '{"prompt": ' + "[" * 5000 + "]" * 5000 + "}"       # deeper than Python's stack, under the size cap
    assert len(deep) < tablink.MAX_LINK
    for text in ("{not json", "[1, 2]", json.dumps({"prompt": "x" * tablink.MAX_LINK}), deep):
        values, notes = tablink.restore("beam", link, text)
        assert values == {} and len(notes) == 1
    values, notes = tablink.restore("beam", link, json.dumps({"mystery": 1}))
    assert values == {} and "mystery" in notes[0]


def test_long_text_is_cut_not_refused(link):
    values, _ = tablink.restore("beam", link, json.dumps({"prompt": "y" * (tablink.MAX_TEXT + 50)}))
    assert len(values["prompt"]) == tablink.MAX_TEXT


def test_the_writer_knows_every_name_and_default(link):
    js = tablink.writer_js("beam", link)
    assert json.dumps(list(link)) in js and '"beams": 4' in js and '"beam"' in js
    assert tablink.settable(link["beams"]) and not tablink.settable(link["note"])


def test_a_linked_sweep_view_is_drawn_for_the_link_s_k():
    """Many samples: the sweep's dropdowns redraw only when a person picks, so a restored k
    comes with the views drawn for it."""
    from decoding_lab.ui.common.state import Labels
    from decoding_lab.ui.multisample import handlers, layout
    from decoding_lab.ui.multisample.data import default_view
    from decoding_lab.ui.multisample.views import content
    with gr.Blocks():
        ui = layout.build("en", Labels(), content("en", default_view()))
    out = handlers.link_restore(ui, {"k": 4}, "en")
    assert out[ui.view]["k"] == 4 and out[ui.k]["value"] == 4
    assert handlers.link_restore(ui, {"tilt.eta": 3.0}, "en") == {}
