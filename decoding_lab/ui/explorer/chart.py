"""The Explorer's distribution chart: every recorded token's raw probability beside its fate.

Each token gets two bars side by side. The left one (light) is its raw probability. The right
one says what decoding did with it, one colour per fate:

* kept (blue, its final probability: what the selector drew from),
* chosen (orange; at T = 0 the legend says *argmax*, because nothing is sampled),
* cut by a named stage (one colour per stage, hatched, at the probability the token had in
  the distribution *entering* that stage: the mass the stage took away).

Cut probabilities are often tiny, so the y axis can be switched to a log scale. Trace 0 is
the raw series and trace 1 the final one (every row, in the core's order); every trace
carries token ids as ``customdata`` (the page's click handler forces the clicked token).
Nothing is computed here: the numbers are the trace's (``TokenRow``)."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from decoding_lab.ui.common import plots
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.plots import BLUE, ORANGE, plot_token
from decoding_lab.ui.explorer.strings import tr

RAW = "#bfdbfe"   # light blue: the raw distribution, the same for every token
INK = "#111827"   # near-black: a server's own sampler (its post-sampling probabilities)
#: One colour per stage that can cut (none of them blue or orange, which mean kept and chosen).
STAGE_COLOURS = {"top-k": "#7c3aed", "top-p": "#db2777", "min-p": "#0d9488", "typical-p": "#ca8a04",
                 "top-n-sigma": "#4f46e5", "xtc": "#dc2626", "grammar": "#475569", "no-repeat-ngram": "#92400e",
                 "logit-bias": "#65a30d", "healing": "#0891b2", "dry": "#be123c", "verifier-tilt": "#a16207"}
SPARE = ["#6b7280", "#84cc16", "#e11d48", "#14b8a6"]
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def stage_colour(name: str, index: int) -> str:
    return STAGE_COLOURS.get(name, SPARE[index % len(SPARE)])


def fmt_p(p: float) -> str:
    """0.9512 -> '0.9512'; 4.2e-06 -> '4.2e-06' (four decimals would say 0.0000)."""
    return "0" if p == 0 else (f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}")


def chosen_name(trace: Any, lang: str) -> str:
    key = "chosen_forced" if trace.forced else ("chosen_greedy" if trace.greedy else "chosen_sampled")
    return tr(lang, key)


def raw_source(trace: Any) -> str:
    """Where a step's raw numbers come from: ``local`` (this process), ``raw_server`` (a server's raw
    logits for the whole vocabulary) or ``topn_server`` (a server's top-N, the rest filled in)."""
    rep = getattr(trace, "reported", None)
    if not rep:
        return "local"
    return "raw_server" if rep.get("raw_logits") else "topn_server"


def hover_text(row: Any, trace: Any, lang: str) -> str:
    lines = [f"<b>{plot_token(row.token)}</b> (id {row.token_id})",
             tr(lang, "hover_rank", rank=row.rank, logit=row.logit),
             tr(lang, "hover_p", raw=fmt_p(row.p_raw), final=fmt_p(row.p_final))]
    if row.cut_by:
        lines.append(tr(lang, "hover_cut", stage=row.cut_by, p=fmt_p(row.p_cut if row.p_cut is not None else row.p_raw)))
    else:
        lines.append(tr(lang, "hover_kept"))
    if row.token_id == trace.chosen_token_id:
        lines.append(f"<b>{chosen_name(trace, lang)}</b>")
    rep = getattr(trace, "reported", None) or {}
    lines.append(f"<i>{tr(lang, 'hover_src_' + raw_source(trace), n=len(rep.get('ids', ())))}</i>")
    return "<br>".join(lines)


def fate_height(row: Any) -> float:
    """The right-hand bar: p final when the token survived, p at the cut when a stage removed it."""
    if row.cut_by:
        return row.p_cut if row.p_cut is not None else row.p_raw
    return row.p_final


def log_ticks(lo: int) -> tuple[list[float], list[str]]:
    """One tick per decade from 10^lo to 1: '1', '0.1', '0.01', then '10⁻³' … (never 2, 5 minor labels)."""
    vals = [10.0 ** k for k in range(lo, 1)]
    text = [("1" if k == 0 else f"{10.0 ** k:g}") if k >= -2 else f"10{str(k).translate(SUPERSCRIPT)}"
            for k in range(lo, 1)]
    return vals, text


def engine_points(trace: Any, by_id: dict[int, int]) -> list[tuple[int, float]]:
    """(row index, p) for each token a server's sampler kept that the chart shows (empty when the
    model is local or the server reports no post-sampling top-N)."""
    rep = getattr(trace, "reported", None) or {}
    ids, probs = rep.get("post_ids"), rep.get("post_probs")
    if not ids or not probs:
        return []
    return [(by_id[i], float(p)) for i, p in zip(ids, probs) if i in by_id and p > 0]


def dist_chart(trace: Any, lang: str, log_y: bool = False) -> go.Figure:
    rows = list(trace.top)
    labels = plots.token_labels(rows)
    hover = [hover_text(r, trace, lang) for r in rows]
    by_id = {r.token_id: i for i, r in enumerate(rows)}
    data: list[dict[str, Any]] = []

    def bar(name: str, idx: list[int], ys: list[float], colour: str, group: str, **kw: Any) -> None:
        data.append(dict(type="bar", name=name, x=[labels[i] for i in idx], y=ys, marker=dict(color=colour, **kw),
                         offsetgroup=group, customdata=[rows[i].token_id for i in idx],
                         hovertext=[hover[i] for i in idx], hoverinfo="text", hoverlabel=dict(font=dict(size=13))))

    everyone = list(range(len(rows)))
    bar(t(lang, "raw_p"), everyone, [r.p_raw for r in rows], RAW, "raw")
    bar(tr(lang, "final_greedy" if trace.greedy else "final_sampled"), everyone, [r.p_final for r in rows], BLUE,
        "fate")
    chosen = by_id.get(trace.chosen_token_id)
    if chosen is not None:  # drawn over its blue bar, in the same slot
        bar(chosen_name(trace, lang), [chosen], [fate_height(rows[chosen])], ORANGE, "fate")
    stage_order = [s.name for s in trace.stages]
    cut_stages = sorted({r.cut_by for r in rows if r.cut_by}, key=lambda n: stage_order.index(n)
                        if n in stage_order else len(stage_order))
    for k, name in enumerate(cut_stages):
        idx = [i for i, r in enumerate(rows) if r.cut_by == name and i != chosen]
        if idx:
            bar(tr(lang, "cut_legend", stage=name), idx, [fate_height(rows[i]) for i in idx],
                stage_colour(name, k), "fate", pattern=dict(shape="/", fgcolor="white", solidity=0.25))
    engine = engine_points(trace, by_id)
    if engine:  # a server's own sampler (llama-server): what it kept, with p after its chain, as diamonds
        data.append(dict(type="scatter", mode="markers", name=tr(lang, "engine_legend"), offsetgroup="fate",
                         x=[labels[i] for i, _ in engine], y=[p for _, p in engine],
                         marker=dict(symbol="diamond", size=11, color=INK, line=dict(color="white", width=1)),
                         hovertext=[tr(lang, "engine_hover", p=fmt_p(p)) for _, p in engine], hoverinfo="text"))
    heights = [r.p_raw for r in rows] + [fate_height(r) for r in rows] + [p for _, p in engine]
    if log_y:
        lo = math.floor(math.log10(max(min([h for h in heights if h > 0] or [1e-6]), 1e-30)))
        vals, text = log_ticks(lo)
        yaxis = dict(title=dict(text=tr(lang, "log_axis")), type="log", range=[lo - 0.15, 0.08], tickvals=vals,
                     ticktext=text, minor=dict(showgrid=False, ticks=""))
    else:
        top = max(heights + [0.01])
        yaxis = dict(title=dict(text=t(lang, "prob_axis")), range=[0, min(1.0, top * 1.25) if top < 0.8 else 1.08])
    spec = plots.merge(plots.look(t(lang, "dist_title", step=trace.step, n=len(rows)), 440), dict(
        barmode="group", scattermode="group", bargap=0.18, bargroupgap=0.0, showlegend=True, yaxis=yaxis,
        xaxis=dict(title=None, tickangle=-45, tickfont=dict(size=12), automargin=True),
        # The legend goes under the chart (never over the title), in the figure's own coordinates.
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0, xanchor="left",
                    font=dict(size=12)),
        margin=dict(l=56, r=36, t=44, b=40),
        modebar=dict(orientation="v")))  # in the right margin, off the title and the bars
    return plots.figure(data, spec)
