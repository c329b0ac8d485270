"""Beam tab, what it draws: the search tree (``plots.beam_tree_chart``), the table of finished
hypotheses under each α and the status line, from the ``BeamTree`` record and the core's
re-ranking (``strategies.beam.rank_hypotheses``). The scores are the core's; this only lays
them out."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go

from decoding_lab.strategies.beam import HypothesisRanking
from decoding_lab.ui.beam.plots import beam_tree_chart
from decoding_lab.ui.common import plots
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.markdown import code_span


def empty_tree(lang: str) -> go.Figure:
    return plots.empty_figure(lang, "beam_intro", 300)


def tree_figure(tree: Any, lang: str, by: str = "hypothesis") -> go.Figure:
    return beam_tree_chart(tree, lang, by=by)


def ranking_rows(ranking: HypothesisRanking, texts: Sequence[str]) -> list[list[Any]]:
    """Rows [text, length, sum log p, 'score (#rank)' per α], ★ on each α's winner; a
    hypothesis cut by max new tokens (no EOS) ends in ✂."""
    rows = []
    for i, (h, text) in enumerate(zip(ranking.hypotheses, texts)):
        row: list[Any] = [text.replace("\n", "↵") + ("" if h.eos else " ✂"), h.length, round(h.raw_score, 3)]
        for j in range(len(ranking.alphas)):
            mark = " ★" if ranking.winners[j] == i else ""
            row.append(f"{ranking.scores[i][j]:.3f} (#{ranking.ranks[i][j]}){mark}")
        rows.append(row)
    return rows


def ranking_headers(alphas: Sequence[float], lang: str) -> list[str]:
    return [t(lang, "col_hyp"), t(lang, "col_len_tok"), t(lang, "col_sum_lp")] + [t(lang, "col_alpha", a=a)
                                                                                  for a in alphas]


def ranking_table(ranking: HypothesisRanking, texts: Sequence[str], lang: str) -> pd.DataFrame:
    return pd.DataFrame(ranking_rows(ranking, texts), columns=ranking_headers(ranking.alphas, lang))


def status_text(result: Any, lang: str) -> str:
    """Steps, finished hypotheses, why the search stopped and (once done) the best text."""
    tree = result.beam_tree
    reason = t(lang, f"reason_{tree.stop_reason}") if tree.stop_reason else "…"
    # the model's text as typed: a prompt can make it write Markdown (an image from elsewhere, say)
    text = code_span(result.text.replace("\n", "↵")) if result.done else "…"
    # while the search runs, ``tree.hypotheses`` is filled only at the end: count the ends the
    # tree has already drawn as finished (the stars), so the line agrees with the picture
    hyps = len(tree.hypotheses) if result.done else sum(c.status == "finished" for st in tree.steps
                                                          for c in st.candidates)
    return t(lang, "beam_status", steps=len(tree.steps), hyps=hyps, reason=reason, text=text)
