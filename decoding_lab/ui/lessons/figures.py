"""The picture beside a lesson experiment, drawn from the learner's own run: the variants' values
with the learner's pick or guess marked, or, for a one-variant step or one whose answer is a token,
the first variant's top tokens before and after the stages. An experiment may ask for its own
picture (``Experiment.figure``): the ratio law as straight lines (``ratio_lines``) or the shipped
sweep's pass@k against T with error bars (``passk_vs_T``). ``teacher=True`` scales every font for a
projector (text ≥ 24 px on the page)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from decoding_lab.lesson_runs import Experiment
from decoding_lab.ui.lessons.strings import STRING_KEYS, tr

RAW, FINAL, PICK, GUESS = "#93c5fd", "#1d4ed8", "#f97316", "#b91c1c"


def font_size(teacher: bool) -> int:
    return 24 if teacher else 13


def shown(token: str) -> str:
    """A token as it is drawn: a leading space as ␣, a newline as ↵."""
    return token.replace(" ", "␣").replace("\n", "↵")


def experiment_figure(exp: Experiment, run: dict[str, Any], lang: str, lg: str, teacher: bool) -> go.Figure:
    values = run["values"]
    numeric = {k: v for k, v in values.items() if isinstance(v, (int, float))}
    if exp.figure == "ratio_lines" and run.get("tops"):
        fig = _ratio_lines(exp, run, lang)
    elif exp.figure == "passk_vs_T":
        fig = _passk_vs_T(exp, run, lang)
    elif exp.figure == "sorted_curve" and run.get("curves"):
        fig = _sorted_curves(exp, run, lang, lg)
    elif run.get("top") and (len(exp.variants) == 1 or not numeric):   # one step, or a token as the answer
        fig = _top_tokens(run["top"], lang, exp)
    elif numeric:
        fig = _variants(exp, run, lang, lg)
    else:
        return go.Figure()
    size = font_size(teacher)
    # a long legend takes its rows from the plot (on a phone one entry a row): give them room
    entries = sum(1 for t in fig.data if t.name and t.showlegend is not False)
    extra = max(0, entries - 4) * (2 * size)
    fig.update_layout(font={"size": size}, height=(460 if teacher else 340) + extra,
                      margin={"l": 60, "r": 20, "t": 30, "b": 60}, bargap=0.25,
                      # under the chart, anchored to the figure's bottom edge (not the plot's), so it never
                      # meets the x axis title, whatever the tick labels' height
                      legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
                              "x": 0.0, "xanchor": "left", "font": {"size": size}})
    fig.update_xaxes(tickfont={"size": size})
    fig.update_yaxes(tickfont={"size": size})
    if fig.layout.title.text:                       # a picture's own title: a little under the text size
        fig.update_layout(title={"font": {"size": size - 2}, "x": 0.02}, margin={"t": 30 + 2 * size})
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
    fig.update_yaxes(title_text=axis_title(exp, lang))
    nums = [y for y in ys if isinstance(y, (int, float)) and y > 0]
    if exp.measure.partition(":")[0] in ("kept", "odds") and nums and max(nums) / min(nums) > 50:   # 16 beside 6,024; 1 beside 500
        fig.update_yaxes(type="log", dtick=1, exponentformat="power")   # one tick per decade
    return fig


def axis_title(exp: Experiment, lang: str) -> str:
    """What the bars measure, from the experiment's measure name (a sweep's pass@K and best-of
    read as pass@k / accuracy; an extraction file's measures as accuracy)."""
    name = exp.measure.partition(":")[0]
    if exp.kind == "extract":
        name = "extract"
    elif name.startswith("pass@") or name == "best_of":
        name = "pass"
    return tr(lang, "axis_" + name) if ("axis_" + name) in STRING_KEYS else ""


def _is_number(x: Any) -> bool:
    try:
        float(x)
        return True
    except (TypeError, ValueError):
        return False


def _temperature(exp: Experiment, key: str) -> float:
    v = next(v for v in exp.variants if v.key == key)
    return float({**exp.settings, **v.settings}.get("temperature", v.options.get("temperature", 1.0)))


def _ratio_lines(exp: Experiment, run: dict[str, Any], lang: str, tokens: int = 4) -> go.Figure:
    """The ratio law drawn: log(p_T(i) / p_T(leader)) = (z_i - z_leader) / T is a straight line in
    1/T through 0, its slope the log ratio at T = 1. Lines from the raw (T = 1) probabilities, dots
    from each temperature the learner ran: the dots sit on the lines."""
    import math
    tops = run["tops"]
    raw = {t: r for t, r, _ in tops[exp.variants[0].key]}
    names = sorted(raw, key=raw.get, reverse=True)[:tokens]
    leader = names[0]
    inv = [1 / _temperature(exp, k) for k in tops]
    xs = [0.0, max(inv) * 1.1]
    palette = ["#1d4ed8", "#f97316", "#059669", "#7c3aed", "#b91c1c"]
    fig = go.Figure()
    for i, tok in enumerate(names[1:]):
        slope = math.log(raw[tok] / raw[leader])
        color = palette[i % len(palette)]
        fig.add_trace(go.Scatter(x=xs, y=[slope * x for x in xs], mode="lines", line={"color": color},
                                 name=tr(lang, "ratio_line", token=shown(tok))))
        pts = [(1 / _temperature(exp, k), {t: f for t, _, f in rows}) for k, rows in tops.items()]
        pts = [(x, math.log(f[tok] / f[leader])) for x, f in pts if f.get(tok, 0) > 0 and f.get(leader, 0) > 0]
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers",
                                 marker={"color": color, "size": 11}, name=tr(lang, "ratio_dots"),
                                 showlegend=i == 0))
    fig.update_layout(title={"text": tr(lang, "ratio_title")},
                      xaxis_title=tr(lang, "ratio_x"), yaxis_title=tr(lang, "ratio_y"))
    return fig


def _sorted_curves(exp: Experiment, run: dict[str, Any], lang: str, lg: str) -> go.Figure:
    """Each variant's distribution sorted from the largest probability down, on log-log axes: a
    sharp step falls off a cliff, a flat one slopes gently. On each curve a filled dot where the
    experiment's own rule cut, an open diamond where min-p 0.1 would; top-k 40 is one vertical line
    for every shape."""
    import math
    palette = ["#1d4ed8", "#059669", "#f97316", "#b91c1c", "#7c3aed"]
    fig = go.Figure()
    for i, v in enumerate(exp.variants):
        c = run["curves"].get(v.key)
        if not c:
            continue
        color = palette[i % len(palette)]
        at = lambda r: c["p"][min(range(len(c["rank"])), key=lambda j: abs(c["rank"][j] - r))]  # noqa: E731
        fig.add_trace(go.Scatter(x=c["rank"], y=c["p"], mode="lines", line={"color": color, "width": 3},
                                 name=v.label.get(lg, v.key)))
        fig.add_trace(go.Scatter(x=[c["kept"]], y=[at(c["kept"])], mode="markers", showlegend=False,
                                 marker={"color": color, "size": 13, "line": {"color": "white", "width": 1}}))
        fig.add_trace(go.Scatter(x=[c["min_p"]], y=[at(c["min_p"])], mode="markers", showlegend=False,
                                 marker={"symbol": "diamond-open", "color": color, "size": 14, "line": {"width": 3}}))
    for name, marker in ((tr(lang, "curve_rule"), {"color": "#6b7280", "size": 13}),        # the marks' key, in grey:
                         (tr(lang, "curve_minp"), {"symbol": "diamond-open", "color": "#6b7280", "size": 14,
                                                   "line": {"width": 3}})):               # each curve's own colour
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", marker=marker, name=name))
    guess, of = run.get("guess"), run["curves"].get(exp.predict.of)
    if exp.predict.kind == "number" and _is_number(guess) and of and float(guess) >= 1:
        near = min(range(len(of["rank"])), key=lambda j: abs(of["rank"][j] - float(guess)))
        fig.add_trace(go.Scatter(x=[float(guess)], y=[of["p"][near]], mode="markers", name=tr(lang, "plot_guess"),
                                 marker={"symbol": "x", "color": GUESS, "size": 16}))
    top_k = next((c["top_k"] for c in run["curves"].values()), 40)
    fig.add_vline(x=top_k, line={"color": "#6b7280", "dash": "dash", "width": 2})
    fig.add_annotation(x=math.log10(top_k), y=1.0, yref="paper", xanchor="left", showarrow=False,   # log axis: log10 x
                       text=tr(lang, "curve_topk", k=top_k), font={"color": "#6b7280"})
    fig.update_xaxes(type="log", title_text=tr(lang, "curve_x"), exponentformat="power", dtick=1)
    # 1e-6 and up: where the cuts fall (the far tail dives below 1e-15 and would squash the rest)
    fig.update_yaxes(type="log", title_text=tr(lang, "curve_y"), exponentformat="power", dtick=1, range=[-6, 0.35])
    return fig


def _passk_vs_T(exp: Experiment, run: dict[str, Any], lang: str) -> go.Figure:
    """The shipped sweep's pass@k against T (k = 1, 4, 16, standard errors across problems), the
    learner's pick ringed on the k = 1 line."""
    import json
    from decoding_lab.experiments.sweep import ASSET_DIR
    from decoding_lab.ui.multisample.views import passk_figure
    result = json.loads((ASSET_DIR / exp.file).read_text(encoding="utf-8"))
    fig = passk_figure(result, "zh" if lang.startswith("zh") else "en", ks=[1, 4, 16])
    guess = str(run.get("guess"))
    if any(v.key == guess for v in exp.variants):
        T = _temperature(exp, guess)
        fig.add_trace(go.Scatter(x=[T], y=[run["values"][guess]], mode="markers", name=tr(lang, "passk_pick"),
                                 marker={"symbol": "circle-open", "size": 22, "color": PICK, "line": {"width": 4}}))
    return fig
