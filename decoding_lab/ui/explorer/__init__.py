"""The Explorer tab: step a live model token by token, see every stage of the decoding chain.

* ``layout``: the components (and the settings controls other tabs reuse);
* ``request``: ``ExplorerRequest`` (the validated inputs) and ``ExplorerSession`` (the stepper);
* ``handlers``: the events, from request to stepper calls to views;
* ``views``: the generated text, tables and "this step in numbers" drawn from the traces.

``build(ctx)`` lays it out inside the page's ``gr.Tab``, wires it, publishes the model choice,
prompt and settings as ``ctx.picker`` for the tabs that read or write them, and returns its
``TabUI``.
"""

from __future__ import annotations

from decoding_lab.ui.common.tab import ModelPicker, TabContext, TabUI
from decoding_lab.ui.explorer.handlers import fill, fill_outputs, wire
from decoding_lab.ui.explorer.layout import (any_hub_id_allowed, chat_choices, layout, model_names, order_choices,
                                             setting_controls)
from decoding_lab.ui.explorer.request import ExplorerRequest, ExplorerSession, new_session
from decoding_lab.ui.explorer.views import render, view_components


def build(ctx: TabContext) -> TabUI:
    parts = layout(ctx.labels, ctx.lang)
    events = wire(ctx, parts)
    ctx.picker = ModelPicker(parts.model, parts.hub, parts.chat, prompt=parts.prompt, settings=parts.settings)
    return TabUI(name="explorer", states=[parts.session], views=view_components(parts),
                 relabel=lambda lang, session: render(parts, lang, session),
                 fill=lambda preset, lang: fill(parts, preset, lang), fill_outputs=fill_outputs(parts),
                 events=events, parts=parts)


__all__ = ["build", "model_names", "chat_choices", "order_choices", "any_hub_id_allowed", "setting_controls",
           "new_session", "ExplorerRequest", "ExplorerSession"]
