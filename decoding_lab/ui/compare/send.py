"""Compare tab, "Send to the Explorer": one column's settings, with the tab's model, prompt and
prompt format, written into the Explorer's controls; the Explorer tab opens and a message (in
the visitor's language) says what came over."""

from __future__ import annotations

from typing import Any, Callable

import gradio as gr

from decoding_lab.ui.common.errors import guarded
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.state import values_from_settings
from decoding_lab.ui.common.tab import TabContext, inputs_of, named
from decoding_lab.ui.compare.layout import COL_KEYS
from decoding_lab.ui.compare.parts import CompareParts
from decoding_lab.ui.compare.strings import tr

#: after the tab switch, show the Explorer from its top (the page kept the Compare scroll position)
TO_TOP_JS = "() => { window.scrollTo({top: 0}); }"


def sent_message(lang: str, i: int, spec: Any, model: str) -> str:
    """What the page says once a column's settings are in the Explorer (the Explorer has no beam
    search: a beam column arrives as its penalties at T = 0, and the message says so)."""
    key = {"greedy": "sent_greedy", "beam": "sent_beam"}.get(spec.strategy, "sent")
    return tr(lang, key, i=i + 1, model=model)


def wire(ctx: TabContext, p: CompareParts, column_spec: Callable[[dict[str, Any]], Any]) -> None:
    """"Send to the Explorer": this column's settings, the tab's model, prompt and prompt format
    into the Explorer's controls, then the Explorer tab opens and a message says what came over.
    The Explorer starts a new run with them on its next Step (its prompt or model changed).
    ``column_spec`` is ``ColumnSpec.from_values``: the same checks as a run."""
    picker = ctx.picker
    if picker is None:  # no Explorer on this page: nothing to send to
        return
    targets = {"model": picker.model, "hub": picker.hub, "prompt": picker.prompt, "chat": picker.chat,
               **{f"s_{k}": comp for k, comp in picker.settings.items()}}
    if ctx.tabs is not None:
        targets["tabs"] = ctx.tabs
    outputs = [c for c in targets.values() if c is not None]
    for i, (send, c) in enumerate(zip(p.sends, p.cols)):
        def on_send(v: dict[str, Any], i: int = i) -> dict[Any, Any]:
            spec = column_spec(v)
            values = values_from_settings(spec.settings)
            out: dict[Any, Any] = {picker.model: v["model"], picker.hub: "", picker.chat: v["chat"],
                                   **{comp: values[k] for k, comp in picker.settings.items()}}
            if picker.prompt is not None:
                out[picker.prompt] = v["prompt"] or ""
            if ctx.tabs is not None:
                out[ctx.tabs] = gr.Tabs(selected="explorer")
            gr.Info(sent_message(v["lang"], i, spec, v["model"]), title=t(v["lang"], "info"))
            return out
        inputs, names = inputs_of({"lang": ctx.lang_state, "model": p.model, "prompt": p.prompt, "chat": p.chat,
                                   **{k: c[k] for k in COL_KEYS}})
        ev = send.click(named(guarded(on_send), names), inputs, outputs, api_name=f"compare_send_{i}")
        ev.success(None, None, None, js=TO_TOP_JS, api_visibility="private")  # the Explorer from its top
