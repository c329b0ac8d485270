"""Compare tab: the same model and prompt under 2–4 decoding settings, side by side.

``build(ctx)`` lays the tab out (``layout``), wires it (``handlers``: one ``CompareRequest``
from the named inputs ``model, prompt, chat, ncols, max_new_tokens, c{i}_{key}``) and draws
the core's records (``views``): each output with its length, mean log-prob, 4-gram
repetition and distinct-n, and one line per column on the entropy plot."""

from __future__ import annotations

from typing import Any

from decoding_lab.ui.common.tab import TabContext, TabUI
from decoding_lab.ui.common.tablink import settable
from decoding_lab.ui.compare import handlers
from decoding_lab.ui.compare.request import ColumnSpec, CompareRequest
from decoding_lab.ui.compare.layout import COL_KEYS, MAX_COLS, build_layout
from decoding_lab.ui.compare.parts import CompareParts

__all__ = ["build", "COL_KEYS", "MAX_COLS", "ColumnSpec", "CompareRequest"]


def build(ctx: TabContext) -> TabUI:
    """The Compare tab inside the current ``gr.Tab``. "Send to Explorer" writes
    ``ctx.picker.settings`` (the Explorer's settings controls)."""
    p = build_layout(ctx)
    events = handlers.wire(ctx, p)
    return TabUI(name="compare", states=[p.results], views=[*p.outs, p.entropy, p.table],
                 relabel=lambda lang, results: handlers.relabel(p, lang, results),
                 fill=lambda preset, lang: handlers.fill(p, preset, lang), fill_outputs=handlers.fill_outputs(p),
                 events=events, parts=p, link=link_controls(p))


def link_controls(p: CompareParts) -> dict[str, Any]:
    """What a share link carries: model, prompt, format, length, columns and each column's settings."""
    link = {"model": p.model, "prompt": p.prompt, "chat": p.chat, "max_new": p.max_new, "ncols": p.ncols}
    for i, col in enumerate(p.cols):
        link.update({f"c{i + 1}.{k}": comp for k, comp in col.items() if settable(comp)})
    return link

