"""The beam-search tree, drawn from ``BeamTree`` records.

x = step, y = the candidate's rank among that step's candidates (0 = best cumulative
score). Every candidate is a node coloured by what happened to it (live beam, finished
hypothesis, rejected hypothesis, pruned); edges follow the back-pointers to the parent
beam. The winning hypothesis's path is drawn thick.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.plots import BLUE, FONT, GREY, ORANGE, show_token

STATUS_STYLE = {  # status -> (colour, symbol, size)
    "live": (BLUE, "circle", 11),
    "finished": ("#16a34a", "star", 15),
    "rejected": ("#dc2626", "x", 10),
    "pruned": (GREY, "circle-open", 7),
}


def _parent_y(tree: Any, step: int, parent: int) -> float:
    """y of the node a candidate hangs from: the root (y 0) at step 0, else the live
    candidate that became beam ``parent`` at the previous step."""
    return 0.0 if step == 0 else float(tree.steps[step - 1].live[parent])


def winner_path(tree: Any) -> set[tuple[int, int]]:
    """(step, candidate index) of every node on the best hypothesis's path."""
    if not tree.hypotheses:
        return set()
    h = tree.hypotheses[0]
    nodes, step, cand = set(), h.step, h.candidate
    while step >= 0:
        nodes.add((step, cand))
        parent = tree.steps[step].candidates[cand].parent
        step -= 1
        if step >= 0:
            cand = tree.steps[step].live[parent]
    return nodes


def beam_tree_chart(tree: Any, lang: str, title: str = "") -> go.Figure:
    fig = go.Figure()
    best = winner_path(tree)
    ex, ey, bx, by = [], [], [], []  # edges: all, and the winner's path
    for s, bstep in enumerate(tree.steps):
        for j, c in enumerate(bstep.candidates):
            py = _parent_y(tree, s, c.parent)
            xs, ys = (bx, by) if (s, j) in best else (ex, ey)
            xs += [s - 1, s, None]
            ys += [py, j, None]
    fig.add_scatter(x=ex, y=ey, mode="lines", line=dict(color="#cbd5e1", width=1), hoverinfo="skip", showlegend=False)
    fig.add_scatter(x=bx, y=by, mode="lines", line=dict(color=ORANGE, width=4), hoverinfo="skip",
                    name=t(lang, "beam_winner"))
    fig.add_scatter(x=[-1], y=[0], mode="markers+text", text=["prompt"], textposition="bottom center",
                    marker=dict(color="#111827", size=10), hoverinfo="skip", showlegend=False)
    for status, (colour, symbol, size) in STATUS_STYLE.items():
        xs, ys, texts, hover = [], [], [], []
        for s, bstep in enumerate(tree.steps):
            for j, c in enumerate(bstep.candidates):
                if c.status != status:
                    continue
                xs.append(s)
                ys.append(j)
                texts.append(show_token(c.token) if status != "pruned" else "")
                h = (f"<b>{show_token(c.token)}</b> (id {c.token_id})<br>step {s} · from beam {c.parent}"
                     f"<br>step log p {c.logprob:.3f}<br>cumulative {c.score:.3f}")
                if c.normalized_score is not None:
                    h += f"<br>length-normalised {c.normalized_score:.3f} (α = {tree.length_penalty:g})"
                hover.append(h + f"<br>{t(lang, status)}")
        if xs:
            fig.add_scatter(x=xs, y=ys, mode="markers+text", text=texts, textposition="top center",
                            textfont=dict(size=10), name=t(lang, status), hovertext=hover, hoverinfo="text",
                            marker=dict(color=colour, symbol=symbol, size=size, line=dict(width=1, color=colour)))
    n_cand = max((len(s.candidates) for s in tree.steps), default=1)
    fig.update_xaxes(title=t(lang, "beam_step_axis"), dtick=1, range=[-1.6, max(len(tree.steps), 4) - 0.4])
    fig.update_yaxes(title=t(lang, "beam_rank_axis"), dtick=1, range=[n_cand - 0.5, -0.8])
    fig.update_layout(title=dict(text=title or t(lang, "beam_tree"), x=0.01, font=dict(size=14)), font=FONT,
                      height=max(360, 60 + 44 * n_cand), template="plotly_white", margin=dict(l=50, r=20, t=50, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig
