"""The picture beside a lesson experiment, drawn from the learner's own run: the variants' values
with the learner's pick or guess marked, or, for a one-variant step or one whose answer is a token,
the first variant's top tokens before and after the stages. ``teacher=True`` scales every font for a projector (text ≥ 24 px on the page)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from decoding_lab.lesson_runs import Experiment
from decoding_lab.ui.lessons.strings import tr

RAW, FINAL, PICK, GUESS = "#93c5fd", "#1d4ed8", "#f97316", "#b91c1c"


def font_size(teacher: bool) -> int:
    return 24 if teacher else 13


def shown(token: str) -> str:
    """A token as it is drawn: a leading space as ␣, a newline as ↵."""
    return token.replace(" ", "␣").replace("\n", "↵")


def experiment_figure(exp: Experiment, run: dict[str, Any], lang: str, lg: str, teacher: bool) -> go.Figure:
    values = run["values"]
    numeric = {k: v for k, v in values.items() if isinstance(v, (int, float))}
    if run.get("top") and (len(exp.variants) == 1 or not numeric):   # one step, or a token as the answer
        fig = _top_tokens(run["top"], lang, exp)
    elif numeric:
        fig = _variants(exp, run, lang, lg)
    else:
        return go.Figure()
    size = font_size(teacher)
    fig.update_layout(font={"size": size}, height=460 if teacher else 340,
                      margin={"l": 60, "r": 20, "t": 30, "b": 60}, bargap=0.25,
                      legend={"orientation": "h", "y": -0.22 if teacher else -0.25, "font": {"size": size}})
    fig.update_xaxes(tickfont={"size": size})
    fig.update_yaxes(tickfont={"size": size})
    return fig


def _top_tokens(top: list, lang: str, exp: Experiment) -> go.Figure:
    tokens = [shown(t) for t, _, _ in top]
    fig = go.Figure([go.Bar(x=tokens, y=[r for _, r, _ in top], name=tr(lang, "plot_raw"), marker_color=RAW),
                     go.Bar(x=tokens, y=[f for _, _, f in top], name=tr(lang, "plot_final"), marker_color=FINAL)])
    name, _, arg = exp.measure.partition(":")
    if arg:  # the token the question is about
        fig.add_annotation(x=shown(arg), y=max(r for _, r, _ in top), text="▼", showarrow=False, yshift=18,
                           font={"color": PICK})
    fig.update_layout(barmode="group")
    return fig


def _variants(exp: Experiment, run: dict[str, Any], lang: str, lg: str) -> go.Figure:
    keys = [v.key for v in exp.variants]
    labels = [v.label.get(lg, v.key) for v in exp.variants]
    ys = [run["values"][k] for k in keys]
    guess = run.get("guess")
    picked = [k == str(guess) for k in keys]
    name = tr(lang, "plot_value_file" if exp.reads_file else "plot_value")   # a sweep reads a file
    fig = go.Figure(go.Bar(x=labels, y=ys, name=name, marker_color=FINAL,
                           marker_line={"color": [PICK if p else FINAL for p in picked],
                                        "width": [5 if p else 0 for p in picked]},
                           text=[exp.formatted({"v": y})["v"] for y in ys],
                           textposition="outside", cliponaxis=False))
    if exp.predict.kind == "number" and _is_number(guess):
        fig.add_trace(go.Scatter(x=[labels[keys.index(exp.predict.of)]], y=[float(guess)], mode="markers",
                                 marker={"symbol": "line-ew-open", "size": 60, "color": GUESS, "line": {"width": 4}},
                                 name=tr(lang, "plot_guess")))
    elif any(picked):
        fig.add_trace(go.Bar(x=[None], y=[None], marker_color="white", marker_line={"color": PICK, "width": 5},
                             name=tr(lang, "plot_pick")))
    nums = [y for y in ys if isinstance(y, (int, float)) and y > 0]
    if exp.measure == "kept" and nums and max(nums) / min(nums) > 50:   # counts from a few to thousands
        fig.update_yaxes(type="log", dtick=1, exponentformat="power")   # one tick per decade
    return fig


def _is_number(x: Any) -> bool:
    try:
        float(x)
        return True
    except (TypeError, ValueError):
        return False
