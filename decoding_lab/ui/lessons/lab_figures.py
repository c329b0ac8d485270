"""The pictures of a lesson's lab (``decoding_lab.lesson_labs``): each one draws a ``LabView`` (the
learner's step under the lab's settings) or a shipped sweep, and nothing is computed here but the
tangent line. ``teacher=True`` sets projector-sized type, as the lesson's own pictures do."""

from __future__ import annotations

import math
import plotly.graph_objects as go

from decoding_lab.lesson_labs import TAIL_P, T_RANGE, LabView
from decoding_lab.ui.explorer.chart import stage_colour
from decoding_lab.ui.lessons.figures import FINAL, PICK, RAW, font_size, shown
from decoding_lab.ui.lessons.strings import tr

GREY = "#6b7280"
RULE_COLOURS = {"none": GREY, "top-p": "#db2777", "top-k": "#7c3aed", "min-p": "#0d9488"}


def finish(fig: go.Figure, teacher: bool, height: int = 340) -> go.Figure:
    """The lab's common look: type sized for the screen or the projector, the legend under the plot."""
    size = font_size(teacher)
    fig.update_layout(font={"size": size}, height=height + (120 if teacher else 0),
                      margin={"l": 60, "r": 20, "t": 30 + 2 * size, "b": 60},
                      title={"font": {"size": size}, "x": 0.02},
                      legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
                              "x": 0.0, "xanchor": "left", "font": {"size": size}})
    return fig


def entropy_figure(view: LabView, lang: str, teacher: bool) -> go.Figure:
    """H(T) of the step over the slider's range, the point at the lab's T and its tangent line
    H(T) + dH/dT · (T' − T), drawn over ±0.4 around T."""
    T, h, slope = view.settings.temperature, view.entropy_T, view.dH_dT
    xs = [c[0] for c in view.entropy_curve]
    fig = go.Figure(go.Scatter(x=xs, y=[c[1] for c in view.entropy_curve], mode="lines", name="H(T)",
                               line={"color": FINAL, "width": 3}))
    lo, hi = max(T_RANGE[0], T - 0.4), min(T_RANGE[1], T + 0.4)
    fig.add_trace(go.Scatter(x=[lo, hi], y=[h + slope * (lo - T), h + slope * (hi - T)], mode="lines",
                             name=tr(lang, "lab_tangent", T=T), line={"color": PICK, "dash": "dash", "width": 3}))
    fig.add_trace(go.Scatter(x=[T], y=[h], mode="markers", name=tr(lang, "lab_now", T=T),
                             marker={"color": PICK, "size": 14}))
    fig.update_layout(title={"text": tr(lang, "lab_H_title")})
    fig.update_xaxes(title_text="T", range=list(T_RANGE))
    fig.update_yaxes(title_text=tr(lang, "axis_entropy_T"), rangemode="tozero")
    return finish(fig, teacher)


def bars_figure(view: LabView, lang: str, teacher: bool) -> go.Figure:
    """The top tokens: raw probability (light) beside what the chain left (dark); a token a stage
    cut is drawn hatched in that stage's colour at the probability it had entering the stage."""
    rows = view.rows
    labels = [f"{shown(r.token)}" if sum(x.token == r.token for x in rows) == 1 else f"{shown(r.token)} #{i + 1}"
              for i, r in enumerate(rows)]
    fig = go.Figure([go.Bar(x=labels, y=[r.p_raw for r in rows], name=tr(lang, "lab_raw"), marker_color=RAW,
                            offsetgroup="raw")])
    kept = [i for i, r in enumerate(rows) if r.cut_by is None]
    fig.add_trace(go.Bar(x=[labels[i] for i in kept], y=[rows[i].p_final for i in kept], name=tr(lang, "lab_after"),
                         marker_color=FINAL, offsetgroup="fate"))
    names = [s.name for s in view.stages]
    for k, stage in enumerate(dict.fromkeys(r.cut_by for r in rows if r.cut_by)):
        idx = [i for i, r in enumerate(rows) if r.cut_by == stage]
        fig.add_trace(go.Bar(x=[labels[i] for i in idx], y=[rows[i].p_cut or 0.0 for i in idx],
                             name=tr(lang, "lab_cut", stage=stage), offsetgroup="fate",
                             marker={"color": stage_colour(stage, names.index(stage) if stage in names else k),
                                     "pattern": {"shape": "/", "fgcolor": "white", "solidity": 0.25}}))
    fig.update_layout(barmode="group", bargap=0.2, title={"text": tr(lang, "lab_bars_title", T=view.settings.temperature)})
    fig.update_xaxes(tickangle=-45, categoryorder="array", categoryarray=labels)
    fig.update_yaxes(title_text=tr(lang, "axis_p_raw"), rangemode="tozero")
    return finish(fig, teacher)


def _sorted_base(view: LabView, lang: str) -> go.Figure:
    ranks, ps = [r for r, _ in view.sorted_p], [p for _, p in view.sorted_p]
    fig = go.Figure(go.Scatter(x=ranks, y=ps, mode="lines", line={"color": FINAL, "width": 3}, showlegend=False))
    fig.update_layout(title={"text": tr(lang, "lab_sorted_title", T=view.settings.temperature)})
    fig.update_xaxes(type="log", title_text=tr(lang, "curve_x"), exponentformat="power", dtick=1)
    fig.update_yaxes(type="log", title_text=tr(lang, "curve_y"), exponentformat="power", dtick=1)
    return fig


def _p_at(view: LabView, rank: int) -> float:
    return min(view.sorted_p, key=lambda rp: abs(math.log(rp[0]) - math.log(max(rank, 1))))[1]


def tail_figure(view: LabView, lang: str, teacher: bool) -> go.Figure:
    """The sorted step on log-log axes, with the region below p = 1e-4 shaded: the tail."""
    fig = _sorted_base(view, lang)
    floor = min(p for _, p in view.sorted_p if p > 0) if any(p > 0 for _, p in view.sorted_p) else TAIL_P / 100
    fig.add_hrect(y0=max(floor, 1e-30), y1=TAIL_P, fillcolor=PICK, opacity=0.15, line_width=0)
    fig.add_hline(y=TAIL_P, line={"color": PICK, "dash": "dash", "width": 2})
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=tr(lang, "lab_tail"),
                             marker={"symbol": "square", "color": PICK, "opacity": 0.3, "size": 14}))
    return finish(fig, teacher)


def cuts_figure(view: LabView, lang: str, teacher: bool) -> go.Figure:
    """The sorted step with where top-p (filled dot) and min-p 0.1 (open diamond) stop keeping."""
    fig = _sorted_base(view, lang)
    if view.top_p_kept is not None:
        n = view.top_p_kept
        fig.add_trace(go.Scatter(x=[n], y=[_p_at(view, n)], mode="markers",
                                 name=tr(lang, "lab_cut_top_p", p=view.settings.top_p, n=n),
                                 marker={"color": RULE_COLOURS["top-p"], "size": 15, "line": {"color": "white", "width": 1}}))
    m = view.min_p_kept
    fig.add_trace(go.Scatter(x=[m], y=[_p_at(view, m)], mode="markers", name=tr(lang, "lab_cut_min_p", n=m),
                             marker={"symbol": "diamond-open", "color": RULE_COLOURS["min-p"], "size": 16,
                                     "line": {"width": 3}}))
    fig.update_yaxes(range=[-7, 0.35])      # where the cuts fall; the far tail would squash the rest
    return finish(fig, teacher)


def order_figure(view: LabView, lang: str, teacher: bool) -> go.Figure:
    """The funnel: tokens still alive after each stage (log scale) and the mass each removed."""
    from decoding_lab.ui.common.plots import funnel_chart
    trace = type("LabTrace", (), {"stages": view.stages, "step": 0})()
    fig = funnel_chart(trace, view.vocab, lang)
    size = font_size(teacher)
    fig.update_layout(font={"size": size}, height=max(340, 200 + 32 * len(view.stages)) + (120 if teacher else 0),
                      title={"text": tr(lang, "lab_funnel_title"), "font": {"size": size}, "x": 0.02})
    return fig


def passk_figure(lines: dict[str, list[tuple[float, float, float | None]]], k: int, lang: str,
                 teacher: bool) -> go.Figure:
    """pass@k against T, one line per truncation rule, with standard errors across problems."""
    fig = go.Figure()
    for rule, pts in lines.items():
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 name=rule_name(rule, lang),
                                 line={"color": RULE_COLOURS.get(rule, GREY), "width": 3},
                                 error_y={"type": "data", "array": [p[2] or 0 for p in pts], "visible": True}))
    fig.update_layout(title={"text": tr(lang, "lab_passk_title", k=k)})
    fig.update_xaxes(title_text="T")
    fig.update_yaxes(title_text=f"pass@{k}", range=[0, 1.05])
    return finish(fig, teacher)


def rule_name(rule: str, lang: str) -> str:
    """A truncation rule as the lab names it ("none" in the learner's words)."""
    return tr(lang, "lab_rule_none") if rule == "none" else rule


def best_cell(lines: dict[str, list[tuple[float, float, float | None]]]) -> tuple[str, float, float]:
    """(rule, T, pass@k) of the best sampled point (ties: the first rule, the lower T).

    >>> best_cell({"none": [(0.0, 0.5, None), (1.0, 0.4, None)], "min-p": [(0.0, 0.5, None), (1.0, 0.6, None)]})
    ('min-p', 1.0, 0.6)
    """
    best = ("none", 0.0, -1.0)
    for rule, pts in lines.items():
        for T, p, _ in pts:
            if p > best[2] + 1e-12:
                best = (rule, T, p)
    return best


__all__ = ["entropy_figure", "bars_figure", "tail_figure", "cuts_figure", "order_figure", "passk_figure", "best_cell"]
