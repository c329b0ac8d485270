"""Plotly figures drawn from the core's records (``StepTrace``); no probabilities are
computed here, only laid out.

* ``funnel_chart``  kept tokens and removed mass per stage, in chain order
* ``entropy_chart`` the H(T) curve with the current temperature marked
* ``entropy_traces`` per-step entropy of several runs (Compare tab)

The Explorer's distribution chart (bars coloured by each token's fate) is ``ui/explorer/chart.py``;
``layout`` is the look every figure shares (white template, title at the top left, clean log ticks).
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go
import plotly.io as pio

from decoding_lab.ui.common.i18n import Namespace, register, t

register("plots", {"funnel_hover": "kept {kept}<br>removed {count} tokens, mass {mass}"},
         {"funnel_hover": "保留 {kept} 个<br>移除 {count} 个词元，概率质量 {mass}"})
tr = Namespace("plots")

BLUE, ORANGE, GREY, LIGHT = "#2563eb", "#f97316", "#b8bec8", "#93c5fd"
PALETTE = ["#2563eb", "#f97316", "#16a34a", "#9333ea"]
FONT = dict(family="Inter, 'Noto Sans CJK SC', 'WenQuanYi Zen Hei', sans-serif", size=12)

#: The white look of every figure: plotly_white's layout, and its defaults for the three trace
#: kinds the app draws (bar, scatter, heatmap). Setting ``template="plotly_white"`` on a figure
#: validated the whole template, every trace kind's defaults included: ~25 ms a figure, a third
#: of an Explorer step's server time. Made the process default once, so no figure does that.
_WHITE = pio.templates["plotly_white"]
LOOK = go.layout.Template(layout=_WHITE.layout,
                          data=dict(bar=_WHITE.data.bar, scatter=_WHITE.data.scatter, heatmap=_WHITE.data.heatmap))
# Plotly's default for a numeric axis hides a tick label that would pass the chart's edge, which
# measures every label's box in the page (a forced layout of the whole document each time): a tenth
# of the browser's time in a walk through the lessons' presets. The labels never reach the edge here.
for _axis in (LOOK.layout.xaxis, LOOK.layout.yaxis):
    _axis.ticklabeloverflow = "allow"
pio.templates["decoding-lab"] = LOOK
pio.templates.default = "decoding-lab"


def show_token(s: str) -> str:
    """Make whitespace visible: ' the' -> '␣the', '\\n' -> '↵'."""
    if s == "":
        return "∅"
    return s.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "⏎")


def plot_token(s: str) -> str:
    """A token as plotly text (hover, labels, ticks): visible whitespace, and ``<`` ``>`` ``&``
    escaped, since plotly reads a subset of HTML in text (``<b>``, ``<a href>``) and a Hub model's
    vocabulary may hold such tokens. Plotly turns the entities back into the characters.

    >>> plot_token("<a href=x>"), plot_token(" the")
    ('&lt;a␣href=x&gt;', '␣the')
    """
    import html
    return html.escape(show_token(s), quote=False)


def look(title: str, height: int = 360) -> dict[str, Any]:
    """The shared layout as a dict: the title at the top left with its own band of margin
    (the legend sits under it, the modebar to its right only on hover)."""
    return dict(title=dict(text=title, x=0.01, xanchor="left", yref="container", y=1.0, yanchor="top",
                           pad=dict(t=10), font=dict(size=14)),
                height=height, font=FONT, margin=dict(l=50, r=20, t=64, b=40),
                legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1.0))


def layout(fig: go.Figure, title: str, height: int = 360) -> go.Figure:
    """``look`` applied to a figure built trace by trace."""
    fig.update_layout(**look(title, height))
    return fig


def figure(data: list[dict[str, Any]], layout_spec: dict[str, Any]) -> go.Figure:
    """One figure from plain dicts, validated once. Building the same figure with ``add_bar``
    and ``update_*`` calls validates every property path on each call: ~10x slower, which
    is most of what an Explorer step costs outside the model."""
    return go.Figure(dict(data=data, layout=layout_spec))


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``extra``, nested dicts merged (``look`` plus a chart's own layout)."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def empty_figure(lang: str, key: str, height: int = 300) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=t(lang, key), showarrow=False, font=dict(size=14, color="#6b7280"),
                       xref="paper", yref="paper", x=0.5, y=0.5)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return layout(fig, "", height)


def token_labels(rows: Sequence[Any]) -> list[str]:
    """Unique category labels: '#rank token' (two tokens may share a text)."""
    return [f"#{r.rank} {plot_token(r.token)}" for r in rows]


def funnel_chart(trace: Any, vocab_size: int, lang: str) -> go.Figure:
    """One row per stage in chain order: tokens still alive after it (log scale) and the
    probability mass it removed (under the distribution entering it). Two panels side by
    side sharing the stage axis (laid out by hand: ``make_subplots`` costs ~10 ms a call)."""
    names = [t(lang, "model_row")] + [s.name for s in trace.stages]
    kept = [vocab_size] + [s.kept for s in trace.stages]
    removed = [0.0] + [s.removed_mass for s in trace.stages]
    counts = [0] + [s.removed_count for s in trace.stages]
    hover = [f"<b>{n}</b><br>{tr(lang, 'funnel_hover', kept=f'{k:,}', count=f'{c:,}', mass=f'{m:.4f}')}"
             for n, k, c, m in zip(names, kept, counts, removed)]
    common = dict(type="bar", y=names, orientation="h", textposition="auto", hovertext=hover, hoverinfo="text",
                  showlegend=False)
    data = [dict(common, x=kept, marker=dict(color=BLUE), text=[f"{k:,}" for k in kept], xaxis="x", yaxis="y"),
            dict(common, x=removed, marker=dict(color=ORANGE), text=[f"{m:.3f}" for m in removed], xaxis="x2",
                 yaxis="y2")]
    stage_axis = dict(autorange="reversed", categoryorder="array", categoryarray=names)
    panel_title = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=14))
    spec = merge(look(t(lang, "funnel_title", step=trace.step), 120 + 32 * len(names)), dict(
        # one labelled tick per decade (1, 10, 100, 1k …): no "2 5" minor labels between them
        xaxis=dict(domain=[0.0, 0.48], type="log", dtick=1, minor=dict(ticks="", showgrid=False), anchor="y"),
        xaxis2=dict(domain=[0.52, 1.0], range=[0, 1], anchor="y2"),
        yaxis=dict(stage_axis, anchor="x"), yaxis2=dict(stage_axis, anchor="x2", matches="y", showticklabels=False),
        annotations=[dict(panel_title, text=t(lang, "kept_axis"), x=0.24, xanchor="center"),
                     dict(panel_title, text=t(lang, "removed_axis"), x=0.76, xanchor="center")]))
    return figure(data, spec)


def entropy_chart(curve: Sequence[Sequence[float]], trace: Any, lang: str) -> go.Figure:
    """H(T) over a temperature grid (recorded by the stepper) with the current T marked."""
    data: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    if curve:
        data.append(dict(type="scatter", x=[c[0] for c in curve], y=[c[1] for c in curve], mode="lines", name="H(T)",
                         line=dict(color=BLUE, width=2),
                         hovertemplate="T = %{x:.3f}<br>H = %{y:.3f} nats<extra></extra>"))
    if trace.greedy or trace.entropy_T is None:
        extra["annotations"] = [dict(text=t(lang, "greedy_note"), xref="paper", yref="paper", x=0.02, y=0.95,
                                     showarrow=False)]
    else:
        T = trace.temperature
        extra["shapes"] = [dict(type="line", x0=T, x1=T, xref="x", y0=0, y1=1, yref="y domain",
                                line=dict(color=ORANGE, dash="dash"))]
        data.append(dict(type="scatter", x=[T], y=[trace.entropy_T], mode="markers", name=t(lang, "current_T", T=T),
                         marker=dict(color=ORANGE, size=11),
                         hovertemplate=f"T = {T:g}<br>H = {trace.entropy_T:.3f}<br>dH/dT = {trace.dH_dT:.3f}"
                                       "<extra></extra>"))
    ticks = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3]
    extra["xaxis"] = dict(title=dict(text=t(lang, "temperature_axis")), type="log", tickvals=ticks,
                          ticktext=[f"{v:g}" for v in ticks])
    extra["yaxis"] = dict(title=dict(text=t(lang, "entropy_axis")), rangemode="tozero")
    return figure(data, merge(look(t(lang, "entropy_title"), 320), extra))


def entropy_traces(series: Sequence[tuple[str, Sequence[float]]], lang: str, title_key: str = "cmp_entropy") -> go.Figure:
    """Per-step entropy of several runs: ``[(name, [H_0, H_1, ...]), ...]``."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series):
        fig.add_scatter(x=list(range(len(ys))), y=list(ys), mode="lines+markers", name=name,
                        line=dict(color=PALETTE[i % len(PALETTE)], width=2), marker=dict(size=4))
    fig.update_xaxes(title=t(lang, "cmp_step_axis"))
    fig.update_yaxes(title=t(lang, "entropy_axis"), rangemode="tozero")
    return layout(fig, t(lang, title_key), 300)
