"""Alternatives in the text: hovering, focusing or tapping a generated token opens a popover with
the top alternatives at that step (rank, the model's p, and what decoding did with each: kept,
chosen, or cut by a named stage). Clicking an alternative forces it at that step: the steps
after it are saved as a branch (``Stepper.rewind``) and the run continues from the new token.

The server writes each token's alternatives into a ``data-alts`` attribute (JSON, escaped); one
script (``POPOVER_JS``, the generated-text component's ``js_on_load``) draws the popover with
``textContent`` only (a token's text can never become markup) and, on a click, writes
``"step:token_id"`` into a hidden box and presses a hidden button (``handlers.on_force_at``)."""

from __future__ import annotations

import html
import json
from typing import Any

from decoding_lab.ui.common.plots import show_token
from decoding_lab.ui.explorer.chart import fmt_p
from decoding_lab.ui.explorer.strings import tr
from decoding_lab.ui.common.scripts import script

N_ALTERNATIVES = 6


def alternatives(trace: Any, lang: str) -> list[dict[str, Any]]:
    """The first ``N_ALTERNATIVES`` recorded rows of a step by raw rank, plus the chosen token."""
    rows = sorted(trace.top, key=lambda r: r.rank)[:N_ALTERNATIVES]
    if all(r.token_id != trace.chosen_token_id for r in rows):
        rows += [r for r in trace.top if r.token_id == trace.chosen_token_id]
    out = []
    for r in rows:
        if r.token_id == trace.chosen_token_id:
            fate, kind = tr(lang, "pop_chosen", p=fmt_p(r.p_final)), "chosen"
        elif r.cut_by:
            fate, kind = tr(lang, "pop_cut", stage=r.cut_by), "cut"
        else:
            fate, kind = tr(lang, "pop_kept", p=fmt_p(r.p_final)), "kept"
        out.append({"id": r.token_id, "t": show_token(r.token), "r": r.rank, "p": fmt_p(r.p_raw), "f": fate, "k": kind})
    return out


def token_attrs(trace: Any, lang: str) -> str:
    """The attributes of a generated token's span that the popover reads."""
    head = tr(lang, "pop_head", step=trace.step)
    hint = tr(lang, "pop_hint")
    alts = json.dumps(alternatives(trace, lang), ensure_ascii=False)
    return (f"tabindex='0' data-head='{html.escape(head, quote=True)}' data-hint='{html.escape(hint, quote=True)}' "
            f"data-alts='{html.escape(alts, quote=True)}'")


POPOVER_JS = script("popover")
