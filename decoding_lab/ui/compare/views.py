"""Compare tab, what it draws: each column's output with its numbers, the entropy plot and the
comparison table, from the strategies' ``GenerationResult`` records and the core's metrics
(``decoding_lab.metrics``). Nothing here is computed from probabilities; it is laid out."""

from __future__ import annotations

import html
from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go

from decoding_lab.settings import SamplingSettings
from decoding_lab.ui.common import plots
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.compare.strings import tr

TABLE_KEYS = ("col_setting", "col_len", "col_mean_lp", "col_rep4", "col_distinct1", "col_distinct2")

#: [(column label, GenerationResult or None while it has not started)], one per column run
Results = Sequence[tuple[str, Any]]


def column_label(i: int, strategy: str, s: SamplingSettings, kw: dict[str, Any], lang: str = "en") -> str:
    """``1: greedy``, ``2: beam search 4 α=1``, ``3: T=0.8, top-p 0.9``: what a column ran, in ``lang``."""
    if strategy == "greedy":
        return f"{i + 1}: {t(lang, 'greedy')}"
    if strategy == "beam":
        return f"{i + 1}: {t(lang, 'beam')} {kw['num_beams']} α={kw['length_penalty']:g}"
    parts = [f"T={s.temperature:g}"] + [p for p, on in ((f"top-k {s.top_k}", s.top_k), (f"top-p {s.top_p:g}", s.top_p < 1),
                                                         (f"min-p {s.min_p:g}", s.min_p > 0)) if on]
    return f"{i + 1}: " + ", ".join(parts)


def metrics_row(seq: Any) -> dict[str, Any]:
    """Length, mean log-prob, 4-gram repetition and distinct-1/2 of one output (core metrics)."""
    from decoding_lab.metrics import sequence_metrics
    m = sequence_metrics(seq, n_rep=4)
    return {"len": m["tokens"], "mean_lp": m["mean_logprob"], "rep4": m["repetition_rate"], "d1": m["distinct_1"],
            "d2": m["distinct_2"]}


def _fmt(x: Any) -> str:
    return "—" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def _r(x: Any) -> Any:
    return None if x is None else round(float(x), 4)


def output_html(label: str, result: Any, lang: str) -> str:
    """One column's output: its label, the text so far (a cursor while it runs) and its numbers."""
    if result is None:
        return f"<div class='cmp-out empty'>{html.escape(t(lang, 'cmp_waiting'))}</div>"
    seq = result.best
    m = metrics_row(seq)
    stats = (f"{t(lang, 'col_len')} {m['len']} · {t(lang, 'col_mean_lp')} {_fmt(m['mean_lp'])} · "
             f"{t(lang, 'col_rep4')} {_fmt(m['rep4'])} · distinct-2 {_fmt(m['d2'])}")
    text = html.escape(seq.text).replace("\n", "<br>")
    tail = "" if result.done else " <span class='cmp-cursor'>▌</span>"
    return (f"<div class='cmp-out'><div class='cmp-label'>{html.escape(label)}</div>"
            f"<div class='cmp-text'>{text}{tail}</div><div class='cmp-stats'>{stats}</div>"
            f"{engine_note(result, lang)}</div>")


def engine_note(result: Any, lang: str) -> str:
    """Under a column a server drew itself (``strategies.engine_samples``): who drew it and what its
    log-probabilities are; empty for a column decoded here."""
    info = result.settings if isinstance(result.settings, dict) else {}
    if "endpoint" not in info:
        return ""
    names = {"endpoint": str(info["endpoint"]), "api": str(info.get("api", ""))}
    if not result.done:
        text = tr(lang, "engine_waiting").format(**names)
    else:
        lp = tr(lang, "lp_after_chain" if info.get("logprobs_after_chain") else "lp_as_reported")
        text = tr(lang, "engine_drawn").format(logprobs=lp, **names)
    return f"<div class='cmp-note'>{html.escape(text, quote=False)}</div>"


def outputs_html(results: Results, ncols: int, n_outputs: int, lang: str) -> list[str]:
    """Every output box: the columns of this run, "waiting…" in the others."""
    out = []
    for i in range(n_outputs):
        label, res = results[i] if i < len(results) else ("", None)
        out.append(output_html(label, res, lang) if i < max(ncols, len(results)) else output_html("", None, lang))
    return out


def _started(results: Results) -> list[tuple[str, Any]]:
    return [(label, r) for label, r in results if r is not None]


def entropy_figure(results: Results, lang: str) -> go.Figure:
    """One line per column: the entropy of the model's raw distribution at every step."""
    # a column the server drew whole has no entropies (it reports only the picked tokens)
    series = [(label, r.best.entropies) for label, r in _started(results) if r.best.entropies]
    return plots.entropy_traces(series, lang) if series else plots.empty_figure(lang, "cmp_waiting", 260)


def table_headers(lang: str) -> list[str]:
    return [t(lang, k) for k in TABLE_KEYS]


def metrics_table(results: Results, lang: str) -> pd.DataFrame:
    """The comparison table: one row of metrics per column that has output."""
    rows = []
    for label, r in _started(results):
        m = metrics_row(r.best)
        rows.append([label, m["len"], _r(m["mean_lp"]), _r(m["rep4"]), _r(m["d1"]), _r(m["d2"])])
    return pd.DataFrame(rows, columns=table_headers(lang))
