"""Temperature-0 tab: the same greedy decode along several numerical paths (float32 with the
KV cache, float32 recomputing the whole prefix, bfloat16, batched next to a longer prompt),
and the step where they part. The core (``decoding_lab.determinism``) does the runs; this
package draws the texts, the first divergence and the margins.

It reads the Explorer's model choice (``ctx.picker``). Pieces: ``layout`` (components),
``handlers`` (``GreedyRequest``, the run, the lesson fill), ``views`` (what is drawn) and
``strings`` (``determinism.<key>``, English and Chinese)."""

from __future__ import annotations

from decoding_lab.ui.common.tab import TabContext, TabUI
from decoding_lab.ui.determinism.handlers import GreedyRequest, fill, fill_outputs, wire
from decoding_lab.ui.determinism.layout import layout
from decoding_lab.ui.determinism.views import render


def build(ctx: TabContext) -> TabUI:
    """Lay the tab out inside the page's ``gr.Tab`` (after the Explorer) and wire it."""
    if ctx.picker is None:
        raise RuntimeError("the Temperature-0 tab reads the Explorer's model choice: build the Explorer first")
    picker = ctx.picker
    ui = layout(ctx.labels, ctx.lang)
    events = wire(ctx, ui)

    def relabel(lang: str, last: dict | None = None) -> dict:
        html_out, fig = render(lang, last)
        return {ui.result: html_out, ui.plot: fig}

    return TabUI(name="determinism", states=[ui.last], views=[ui.result, ui.plot], relabel=relabel,
                 fill=lambda preset, lang: fill(picker, ui, preset, lang), fill_outputs=fill_outputs(picker, ui),
                 events=events, parts=ui, link={"prompt": ui.prompt, "tokens": ui.tokens, "paths": ui.variants})


__all__ = ["build", "GreedyRequest"]
