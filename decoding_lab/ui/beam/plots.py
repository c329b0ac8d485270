"""The beam-search tree, drawn from ``BeamTree`` records.

x = step; y = the node's row, by hypothesis (a path keeps its row, edges never cross) or by
beam slot (the candidate's rank at its step), see ``tree_layout``. Every candidate is a node
coloured by what happened to it (live beam, finished hypothesis, rejected hypothesis,
pruned); edges follow the back-pointers to the parent beam. The winning hypothesis's path
is drawn thick, and ``ANCESTRY_JS`` lights up the path of the node under the cursor.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from decoding_lab.ui.beam import tree_layout
from decoding_lab.ui.beam.strings import tr
from decoding_lab.ui.beam.tree_layout import Key, Node
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.plots import BLUE, FONT, GREY, ORANGE, plot_token
from decoding_lab.ui.common.scripts import script

STATUS_STYLE = {  # status -> (colour, symbol, size)
    "live": (BLUE, "circle", 11),
    "finished": ("#16a34a", "star", 15),
    "rejected": ("#dc2626", "x", 10),
    "pruned": (GREY, "circle-open", 7),
}


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


def _rows(tree: Any, by: str) -> dict[Key, int]:
    return tree_layout.hypothesis_rows(tree) if by == "hypothesis" else tree_layout.slot_rows(tree)


def _ancestry_data(tree: Any, rows: dict[Key, int], node: Node) -> str:
    """A node's path from the prompt as ``"x,x,…|y,y,…"``: the hover script draws it."""
    path = tree_layout.ancestry(tree, node)
    xs = ",".join(str(-1 if k is None else k[0]) for k in path)
    return xs + "|" + ",".join(str(rows[k]) for k in path)


def _label(c: Any, lang: str) -> str:
    """A node's text: the token, a short "EOS" for an end-of-sequence token (``<|im_end|>`` on
    every finished node ran into its neighbours), nothing for a pruned one."""
    if c.status == "pruned":
        return ""
    return tr(lang, "eos") if c.eos else plot_token(c.token)


def beam_tree_chart(tree: Any, lang: str, title: str = "", by: str = "hypothesis") -> go.Figure:
    """The tree, laid out ``by`` hypothesis (parent-aligned) or by beam slot (``tree_layout``).

    Every node carries its ancestry (``customdata``); ``ANCESTRY_JS`` copies it into the empty
    "ancestry" series on hover, so the path from the prompt to the node lights up."""
    fig = go.Figure()
    rows = _rows(tree, by)
    best = winner_path(tree)
    ex, ey, bx, by_ = [], [], [], []  # edges: all, and the winner's path
    for s, bstep in enumerate(tree.steps):
        for j, c in enumerate(bstep.candidates):
            if (s, j) not in rows:
                continue
            xs, ys = (bx, by_) if (s, j) in best else (ex, ey)
            xs += [s - 1, s, None]
            ys += [rows[tree_layout.parent_of(tree, (s, j))], rows[s, j], None]
    fig.add_scatter(x=ex, y=ey, mode="lines", line=dict(color="#cbd5e1", width=1), hoverinfo="skip", showlegend=False)
    fig.add_scatter(x=bx, y=by_, mode="lines", line=dict(color=ORANGE, width=4), hoverinfo="skip",
                    name=t(lang, "beam_winner"))
    fig.add_scatter(x=[], y=[], mode="lines", line=dict(color="#7c3aed", width=3), hoverinfo="skip", meta="ancestry",
                    name=tr(lang, "ancestry"))
    fig.add_scatter(x=[-1], y=[rows[None]], mode="markers+text", text=[tr(lang, "prompt")], textposition="bottom center",
                    marker=dict(color="#111827", size=10), hoverinfo="skip", showlegend=False)
    for status, (colour, symbol, size) in STATUS_STYLE.items():
        xs, ys, texts, hover, where, anc = [], [], [], [], [], []
        for s, bstep in enumerate(tree.steps):
            for j, c in enumerate(bstep.candidates):
                if c.status != status or (s, j) not in rows:
                    continue
                xs.append(s)
                ys.append(rows[s, j])
                texts.append(_label(c, lang))
                where.append("top center" if s % 2 == 0 else "bottom center")  # neighbours' labels alternate
                anc.append(_ancestry_data(tree, rows, (s, j)))
                h = (f"<b>{plot_token(c.token)}</b> (id {c.token_id})<br>"
                     + tr(lang, "hover_node", step=s, parent=c.parent, lp=c.logprob, score=c.score))
                if c.normalized_score is not None:
                    h += "<br>" + tr(lang, "hover_norm", norm=c.normalized_score, alpha=tree.length_penalty)
                hover.append(h + f"<br>{t(lang, status)}")
        if xs:
            fig.add_scatter(x=xs, y=ys, mode="markers+text", text=texts, textposition=where, customdata=anc,
                            textfont=dict(size=12), name=t(lang, status), hovertext=hover, hoverinfo="text",
                            marker=dict(color=colour, symbol=symbol, size=size, line=dict(width=1, color=colour)))
    n_rows = max(rows.values(), default=0) + 1
    axis = tr(lang, "rows_axis") if by == "hypothesis" else t(lang, "beam_rank_axis")
    # steps 0, 1, …; the prompt's node sits at -1 without a tick of its own (its label says "prompt")
    fig.update_xaxes(title=t(lang, "beam_step_axis"), tickvals=list(range(max(len(tree.steps), 4))),
                     range=[-1.6, max(len(tree.steps), 4) - 0.4])
    fig.update_yaxes(title=axis, dtick=1, range=[n_rows - 0.5, -0.8], showticklabels=by != "hypothesis")
    default_title = tr(lang, "title_hypothesis") if by == "hypothesis" else t(lang, "beam_tree")
    fig.update_layout(title=dict(text=title or default_title, x=0.01, font=dict(size=14)), font=FONT,
                      height=max(400, 100 + 40 * n_rows), margin=dict(l=50, r=20, t=40, b=80),
                      # under the chart, in the figure's own coordinates: never over the title, at any width
                      legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0, xanchor="left"))
    return fig


#: Run in the browser after the tree is drawn: on hover, copy the node's ancestry (its
#: ``customdata``, "x,…|y,…") into the series whose ``meta`` is "ancestry"; clear it on unhover.
#: A page-wide timer re-attaches the two listeners whenever gradio draws a new chart element.
ANCESTRY_JS = script("beam_ancestry")
