"""What the Temperature-0 tab draws from ``greedy_variants``'s result: each path's text with
the step where it first leaves the reference, and the reference path's top-1 − top-2 logit
margins (the steps where a path diverged in red). Nothing is computed here but layout."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go

from decoding_lab.ui.common import plots
from decoding_lab.ui.determinism.strings import tr


def progress(lang: str, variants: tuple[str, ...], done: int) -> str:
    """What the result area says while the paths run (path ``done + 1`` of them is running)."""
    return (f"<div class='det-run det-progress'>"
            f"{html.escape(tr(lang, 'running', i=done + 1, n=len(variants), name=tr(lang, variants[done]), done=done))}"
            "</div>")


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def marked(text: str, at: int | None, lang: str) -> str:
    """``text`` as HTML, everything from character ``at`` on highlighted (where the paths part)."""
    if at is None or at >= len(text):
        return html.escape(text)
    return (f"{html.escape(text[:at])}<mark class='det-diff' title='{html.escape(tr(lang, 'parted'), quote=True)}' "
            f"style='background:#fde68a;border-left:3px solid #d62728;padding-left:1px'>{html.escape(text[at:])}</mark>")


def render(lang: str, out: dict | None) -> tuple[str, Any]:
    """(the paths as HTML, the margin chart) for one run; nothing before the first run."""
    if not out:
        return "", None
    runs = out["runs"]
    n = len(runs[0]["tokens"])
    ref = out["texts"][runs[0]["name"]]
    # where each path's text first leaves the reference's (a character inside the first token that differs)
    parts_at = {run["name"]: _common_prefix(ref, out["texts"][run["name"]])
                for run, div in zip(runs[1:], out["divergence"]) if div["step"] is not None}
    rows = [f"<div class='det-run'><b>{html.escape(tr(lang, runs[0]['name']))}</b> ({tr(lang, 'reference')})<br>"
            f"<span class='det-text'>{marked(ref, min(parts_at.values(), default=None), lang)}</span></div>"]
    flips = []
    for run, div in zip(runs[1:], out["divergence"]):
        if div["step"] is None:
            note = tr(lang, "same", n=n)
        else:
            note = tr(lang, "diverge", step=div["step"], ref=div["reference_token"], var=div["variant_token"],
                      m=div["reference_margin"])
            flips.append(div["step"])
        sep = "；" if lang == "zh" else "; "
        gap = div.get("logit_gap")
        if gap is not None:
            note += sep + (tr(lang, "gap_zero") if gap == 0 else tr(lang, "gap", g=gap))
        if run.get("others_in_flight") is not None:
            note += sep + tr(lang, "others", k=run["others_in_flight"])
        rows.append(f"<div class='det-run'><b>{html.escape(tr(lang, run['name']))}</b>: {html.escape(note)}<br>"
                    f"<span class='det-text'>{marked(out['texts'][run['name']], parts_at.get(run['name']), lang)}"
                    "</span></div>")
    fig = go.Figure(go.Bar(x=list(range(n)), y=runs[0]["margins"], name=tr(lang, "margin"),
                           marker_color=["#d62728" if i in flips else "#4c78a8" for i in range(n)]))
    plots.layout(fig, tr(lang, "margins"), height=300)   # the shared white look, title clear of the modebar
    fig.update_layout(xaxis_title=tr(lang, "step"), yaxis_title=tr(lang, "margin"), showlegend=False)
    fig.update_yaxes(type="log", dtick=1, exponentformat="power")   # one tick per decade
    return "\n".join(rows), fig
