"""What the sweep section draws from a shipped sweep file: pass@k against temperature, the best
temperature for each k, a temperature x truncation heatmap, every cell as a table, the status line,
and the CSV / JSON downloads. The builders take the loaded sweep (``data.load``) and are usable on
their own; ``content`` gathers everything the section shows for one view (file, k, metric,
truncation) by part name, with the calibrated-temperature section (``ctd.content``)."""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import plotly.graph_objects as go

from decoding_lab.experiments import sweep
from decoding_lab.ui.multisample import ctd
from decoding_lab.ui.multisample.data import (METRICS, best_by_k, default_view, heatmap_matrix, ks_for, load,
                                              n_samples, truncations)
from decoding_lab.ui.multisample.strings import TASK_ZH, tr


def passk_figure(result: Mapping[str, Any], lang: str = "en", truncation: str = "none",
                 ks: tuple[int, ...] | list[int] | None = None) -> go.Figure:
    fig = go.Figure()
    for k in ks or ks_for(result):
        pts = sweep.curve(result, k=k, truncation=truncation)
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 name=f"k={k}", error_y=dict(type="data", array=[p[2] or 0 for p in pts],
                                                             visible=True)))
    fig.update_layout(title=tr(lang, "passk_title", trunc=shown(truncation, lang)), xaxis_title=tr(lang, "temperature"),
                      yaxis_title=tr(lang, "passk_axis"), yaxis_range=[0, 1.05], height=380,
                      margin=dict(l=50, r=20, t=50, b=40), legend_title_text="k")
    return fig


def best_figure(result: Mapping[str, Any], lang: str = "en") -> go.Figure:
    fig = go.Figure()
    sampled = [t for t in truncations(result) if any(c["truncation"] == t and c["temperature"] > 0
                                                     for c in result["cells"])]
    lines = [(None, tr(lang, "any"))] + ([(t, shown(t, lang)) for t in sampled] if len(sampled) > 1 else [])
    # The lines often coincide (the best T is the same with or without a truncation): the first is
    # drawn widest and each next one narrower, with its own marker and dash, so none hides another.
    symbols, dashes = ["circle", "square", "diamond", "triangle-up", "x"], ["solid", "dash", "dot", "dashdot"]
    for i, (trunc, name) in enumerate(lines):
        best = best_by_k(result, trunc)
        ks = sorted(best)
        fig.add_trace(go.Scatter(
            x=ks, y=[best[k]["temperature"] for k in ks], mode="lines+markers", name=name,
            opacity=0.85,
            line=dict(shape="hv", width=max(1.5, 8 - 2.5 * i), dash=dashes[i % len(dashes)]),
            marker=dict(symbol=symbols[i % len(symbols)], size=max(5, 14 - 3 * i)), customdata=[[best[k]["pass"], best[k]["stderr"], shown(best[k]["truncation"], lang)]
                                         for k in ks],
            hovertemplate="k=%{x}<br>T=%{y}<br>pass@k=%{customdata[0]:.3f} ± %{customdata[1]:.3f}"
                          "<br>%{customdata[2]}<extra></extra>"))
    fig.update_layout(title=tr(lang, "best_title"), xaxis_title="k", yaxis_title=tr(lang, "best_axis"),
                      height=320, margin=dict(l=50, r=20, t=50, b=40), xaxis_dtick=1 if n_samples(result) <= 16 else None)
    return fig


def best_text(result: Mapping[str, Any], lang: str = "en") -> str:
    best = best_by_k(result)
    if not best:
        return ""
    kmax = max(best)
    t1, tk = best[1]["temperature"], best[kmax]["temperature"]
    return tr(lang, "rises" if tk > t1 else "flat", t1=t1, tk=tk, kmax=kmax)


def heatmap_figure(result: Mapping[str, Any], lang: str = "en", metric: str = "pass_at_k", k: int = 1) -> go.Figure:
    rows, cols, z = heatmap_matrix(result, metric, k)
    label = tr(lang, "m_" + metric).replace("pass@k", f"pass@{k}")
    text = [["" if v is None else f"{v:.3g}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=[f"{t:g}" for t in cols], y=[shown(r, lang) for r in rows], text=text,
                               texttemplate="%{text}",
                               colorscale="Viridis", hoverongaps=False, colorbar_title=label,
                               zmin=0 if metric != "mean_length" else None,
                               zmax=1 if metric != "mean_length" else None))
    fig.update_layout(title=tr(lang, "heat_title", metric=label, done=result.get("cells_done", len(result["cells"])),
                               total=result.get("cells_total", len(result["cells"]))),
                      xaxis_title=tr(lang, "temperature"), yaxis_title=tr(lang, "truncation"), xaxis_type="category",
                      yaxis_type="category", yaxis_autorange="reversed", height=320,
                      margin=dict(l=70, r=20, t=50, b=40))
    return fig


def cells_table(result: Mapping[str, Any], lang: str = "en", k: int = 8) -> pd.DataFrame:
    k = max(1, min(int(k), n_samples(result)))
    cols = ["c_T", "c_trunc", "c_pen", "c_pass1", "c_passk", "c_passk_se", "c_sc", "c_len", "c_rep"]
    rows = []
    for c in result["cells"]:
        m = c["metrics"]
        pk = m["pass_at_k"][k - 1]
        rows.append([c["temperature"], shown(c["truncation"], lang), shown(c.get("penalty", "none"), lang), m["pass1"], pk["mean"],
                     pk["stderr"], m["self_consistency"], m["mean_length"], m["repetition_4gram"]])
    names = [tr(lang, c, k=k) for c in cols]
    if k == 1:                                   # keep column names unique (pass@1 twice)
        names[4], names[5] = names[4] + " (k)", names[5] + " (k)"
    return pd.DataFrame(rows, columns=names)


def shown(value: str, lang: str) -> str:
    """A truncation or penalty name as the page shows it: "none" in the visitor's words; the
    others are formulas (``top_p=0.9``, ``min_p=0.1 · rep``) and stay as written."""
    return " · ".join(tr(lang, "none_value") if part == "none" else part for part in str(value).split(" · "))


def task_text(task: Mapping[str, Any], lang: str, used: Any = None) -> str:
    """The sweep's task line; a shipped task's Chinese line where there is one. The line names the
    task's whole pool ("(81 problems)"); when the sweep ran on fewer (``used``), it says both."""
    import re
    text = task.get("description") or task.get("name", "?")
    text = TASK_ZH.get(text, text) if lang == "zh" else text
    if isinstance(used, int):
        pool = re.compile(r"（(\d+) 道题）" if lang == "zh" else r"\((\d+) problems\)")
        text = pool.sub(lambda m: m.group(0) if int(m.group(1)) == used
                        else tr(lang, "pool", used=used, pool=int(m.group(1))), text)
    return text


def status_text(result: Mapping[str, Any], lang: str = "en") -> str:
    cfg = result.get("config", {})
    done, total = result.get("cells_done", len(result["cells"])), result.get("cells_total", len(result["cells"]))
    task = result.get("task", {})
    return tr(lang, "status", model=result.get("model", "?"), task=task_text(task, lang, cfg.get("problems")),
              done=done, total=total, partial="" if result.get("complete", done == total) else tr(lang, "partial"),
              n=n_samples(result), problems=cfg.get("problems", "?"), tokens=cfg.get("max_new_tokens", "?"))


def export(path: Path, table: pd.DataFrame) -> tuple[str, str]:
    """Write the table as CSV and copy the JSON into a fresh temp folder (served by gr.File)."""
    out = Path(tempfile.mkdtemp(prefix="decoding_lab_ms_"))
    csv_path = out / (path.stem + "_cells.csv")
    table.to_csv(csv_path, index=False, quoting=csv.QUOTE_MINIMAL)
    json_path = out / path.name
    shutil.copyfile(path, json_path)
    return str(csv_path), str(json_path)


def metric_choices(lang: str) -> list[tuple[str, str]]:
    return [(tr(lang, "m_" + m), m) for m in METRICS]


def content(lang: str, view: dict[str, Any] | None) -> dict[str, Any]:
    """Everything the tab shows for ``view`` (file, k, metric, truncation) in ``lang``, by part name."""
    view = {**default_view(), **(view or {})}
    if not view["file"]:
        return {"status": tr(lang, "no_files"), "view": view}
    path, result = load(view["file"], lang)
    ks = list(range(1, n_samples(result) + 1))
    k = int(view["k"]) if int(view["k"] or 0) in ks else max(ks_for(result))
    truncs = truncations(result)
    trunc = view["truncation"] if view["truncation"] in truncs else truncs[0]
    metric = view["metric"] if view["metric"] in METRICS else "pass_at_k"
    view = {**view, "k": k, "truncation": trunc, "metric": metric}
    table = cells_table(result, lang, k)
    csv_path, json_path = export(path, table)
    return {"status": status_text(result, lang), "passk": passk_figure(result, lang, trunc),
            "best": best_figure(result, lang), "best_text": best_text(result, lang),
            "heatmap": heatmap_figure(result, lang, metric, k),
            "table": table.round(4),  # on screen 4 decimals; the CSV download keeps every digit
            "command": result.get("command") or "", "csv": csv_path, "json": json_path,
            "k": k, "k_choices": ks, "trunc": trunc, "trunc_choices": [(shown(x, lang), x) for x in truncs], "file": view["file"], "view": view,
            "ctd": ctd.content(path, result, lang)}
