"""Beam tab: watch beam search keep, prune and finish hypotheses (streamed step by step from
``iter_beam``), then see how the length penalty α would rank the hypotheses it found:
score = sum log p / length ** α, computed by the core (``strategies.beam.rank_hypotheses``).

``build(ctx)`` lays the tab out (``layout``), wires it (``handlers``: one ``BeamRequest`` from
the named inputs) and draws the records (``views``, ``plots``: the tree)."""

from __future__ import annotations

from decoding_lab.ui.beam import handlers
from decoding_lab.ui.beam.handlers import BeamRequest, BeamRun, parse_alphas
from decoding_lab.ui.beam.layout import build_layout
from decoding_lab.ui.common.tab import TabContext, TabUI

__all__ = ["build", "BeamRequest", "BeamRun", "parse_alphas"]


def build(ctx: TabContext) -> TabUI:
    """The Beam search tab inside the current ``gr.Tab`` (it has its own model choice)."""
    p = build_layout(ctx)
    events = handlers.wire(ctx, p)
    return TabUI(name="beam", states=[p.result, p.by], views=[p.tree, p.table, p.status],
                 relabel=lambda lang, run, by: handlers.render(p, lang, run, by),
                 fill=lambda preset, lang: handlers.fill(p, preset, lang), fill_outputs=handlers.fill_outputs(p),
                 events=events, parts=p,
                 link={"model": p.model, "prompt": p.prompt, "chat": p.chat, "beams": p.beams, "alpha": p.alpha,
                       "early": p.early, "max_new": p.max_new, "alphas": p.alphas, "layout": p.by})

