"""Grammar tab: let the model write only what a grammar allows, and watch what that costs.

Three sections, one constraint (a preset, a regex, a JSON Schema, a list of choices, or a
Lark / GBNF grammar):

* **Step through** — a ``Stepper`` with the ``GrammarMask`` stage: per step, how many
  tokens the grammar still allows (log scale) and how much of the model's probability it
  removed ("how hard the grammar pushed"), the model's favourite tokens it forbade, and the
  engine's compile and mask times next to the forward pass.
* **Constrained vs free** — ``experiments.constrained_vs_free``: n samples each side, each
  checked by the same validator.
* **Token healing** — ``grammar.healing_demo``: the next-token distribution after a prompt
  that ends in ``{"name": "``, with and without backing up over the last token.

The tab reads the Explorer's model choice (``ctx.picker``). Its pieces: ``layout`` (the
components), ``session`` (``GrammarRequest``, the checked inputs of every model event, and
``GrammarSession``, the visitor's stepper), ``handlers`` (the events), ``views`` (what is
drawn from the core's records) and ``strings`` (English and Chinese, ``grammar.<key>``).
"""

from __future__ import annotations

from decoding_lab.ui.common.tab import TabContext, TabUI
from decoding_lab.ui.grammar.handlers import EXAMPLES, fill, fill_outputs, link_restore, load_constraint, wire
from decoding_lab.ui.grammar.layout import HEAL_PREFIX, layout, view_components
from decoding_lab.ui.grammar.session import GrammarRequest, GrammarSession, new_session
from decoding_lab.ui.grammar.views import compare_html, healing_views, step_views


def build(ctx: TabContext) -> TabUI:
    """Lay the tab out inside the page's ``gr.Tab`` (after the Explorer: it needs ``ctx.picker``)
    and wire it."""
    if ctx.picker is None:
        raise RuntimeError("the Grammar tab reads the Explorer's model choice: build the Explorer first")
    picker = ctx.picker
    parts = layout(ctx.labels, ctx.lang)
    events = wire(ctx, parts)

    def relabel(lang: str, session: GrammarSession | None = None, cmp_last=None, heal_last=None) -> dict:
        summary, body = compare_html(lang, cmp_last)
        h_summary, without, with_h = healing_views(lang, heal_last)
        return {**step_views(parts, lang, session), parts.cmp_summary: summary, parts.cmp_view: body,
                parts.heal_summary: h_summary, parts.heal_without: without, parts.heal_with: with_h}

    return TabUI(name="grammar", states=[parts.session, parts.cmp_last, parts.heal_last],
                 views=view_components(parts), relabel=relabel,
                 fill=lambda preset, lang: fill(picker, parts, preset, lang),
                 fill_outputs=fill_outputs(picker, parts), events=events, parts=parts,
                 link={"kind": parts.kind, "preset": parts.preset, "grammar": parts.text, "prompt": parts.prompt,
                       "chat": parts.chat, "temperature": parts.temperature, "seed": parts.seed,
                       "max_tokens": parts.max_tokens},
                 link_restore=lambda values, lang: link_restore(parts, values),
                 link_restore_outputs=[parts.text, parts.preset])


__all__ = ["build", "EXAMPLES", "HEAL_PREFIX", "GrammarRequest", "GrammarSession", "load_constraint", "new_session"]
