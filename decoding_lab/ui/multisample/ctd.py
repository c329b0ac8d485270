"""The "Calibrated temperature" section of the Many-samples tab: the shipped CTD result.

It reads the CTD JSON fitted on the selected sweep (``multisample.ctd_report``) and draws
(1) sequence log-prob against pass for the calibration samples, with the pass rate in
equal-count bins and the fitted logistic curve, (2) held-out pass@k of CTD against the grid
temperature chosen on the calibration half and the held-out oracle, (3) the same as a table.
Nothing runs a model; every number comes from the two shipped files. The section's components are
laid out by ``layout.ctd_section``; ``updates`` fills them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from decoding_lab.experiments import ctd_report as R
from decoding_lab.stages import SettingsError
from decoding_lab.ui.multisample.parts import CtdParts
from decoding_lab.ui.multisample.strings import tr_ctd as tr

KS = (1, 2, 4, 8, 16)


# --------------------------------------------------------------------------- content
def summary_markdown(ctd: dict[str, Any], lang: str = "en") -> str:
    h = R.headline(ctd)
    first, last = h["first"], h["last"]
    worse = first["ctd"] < first["grid"]
    return "\n\n".join([
        tr(lang, "head"),
        tr(lang, "fit", samples=h["samples"], c0=h["calibration"][0], c1=h["calibration"][1], rate=h["pass_rate"],
          alpha=h["alpha"], beta=h["beta"], slope=h["slope"], t=h["T_ctd"]),
        tr(lang, "held", h0=h["heldout"][0], h1=h["heldout"][1], t=h["T_ctd"], ctd1=first["ctd"], grid1=first["grid"],
          gt1=first["grid_T_from_calibration"], ot1=first["oracle_T"], or1=first["oracle"],
          d1=first["ctd_minus_grid"]["mean"], s1=first["ctd_minus_grid"]["stderr"], kn=last["k"], ctdn=last["ctd"],
          gridn=last["grid"], gtn=last["grid_T_from_calibration"], orn=last["oracle"], otn=last["oracle_T"]),
        tr(lang, "worse" if worse else "better", t=h["T_ctd"], gt1=first["grid_T_from_calibration"],
          grid1=first["grid"], ctd1=first["ctd"])])


def fit_figure(sweep: Mapping[str, Any], ctd: dict[str, Any], lang: str = "en") -> go.Figure:
    x, y = R.calibration_samples(sweep, ctd["calibration_problems"])
    fit = ctd["fit"]
    # a small fixed vertical jitter so 400 points at 0 and 1 do not hide each other (display only)
    jitter = np.random.default_rng(0).uniform(-0.04, 0.04, len(y))
    bins = R.binned_rates(x, [float(v) for v in y], bins=8)
    grid = np.linspace(min(x), max(x), 120).tolist()
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[float(v) + j for v, j in zip(y, jitter)], mode="markers", name=tr(lang, "samples"),
                             marker=dict(size=5, opacity=0.35, color=["#2ca02c" if v else "#d62728" for v in y]),
                             hovertemplate="ℓ=%{x:.1f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[b["x"] for b in bins], y=[b["rate"] for b in bins], mode="markers",
                             name=tr(lang, "binned"), marker=dict(size=11, color="#1f77b4", symbol="diamond"),
                             error_y=dict(type="data", array=[b["stderr"] for b in bins], visible=True),
                             customdata=[[b["n"], b["lo"], b["hi"]] for b in bins],
                             hovertemplate="%{y:.2f} (n=%{customdata[0]}, ℓ in [%{customdata[1]:.0f}, "
                                           "%{customdata[2]:.0f}])<extra></extra>"))
    fig.add_trace(go.Scatter(x=grid, y=R.logistic_curve(fit["alpha"], fit["beta"], grid), mode="lines",
                             name=tr(lang, "curve"), line=dict(color="#ff7f0e", width=3)))
    fig.update_layout(title=tr(lang, "fit_title"), xaxis_title=tr(lang, "logprob"), yaxis_title=tr(lang, "pass"),
                      yaxis_range=[-0.1, 1.1], height=360, margin=dict(l=50, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def compare_figure(ctd: dict[str, Any], lang: str = "en") -> go.Figure:
    rows = ctd["rows"]
    ks = [r["k"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ks, y=[r["ctd"] for r in rows], mode="lines+markers",
                             name=tr(lang, "ctd", t=ctd["ctd_temperature"])))
    for key, tkey, name, dash in (("grid", "grid_T_from_calibration", "grid", None), ("oracle", "oracle_T", "oracle", "dot")):
        fig.add_trace(go.Scatter(x=ks, y=[r[key] for r in rows], mode="lines+markers", name=tr(lang, name),
                                 line=dict(dash=dash), customdata=[r[tkey] for r in rows],
                                 hovertemplate="k=%{x}: %{y:.3f} (T=%{customdata})<extra></extra>"))
    fig.update_layout(title=tr(lang, "cmp_title"), xaxis_title=tr(lang, "k"), yaxis_title=tr(lang, "passk"),
                      yaxis_range=[0, 1.05], height=360, margin=dict(l=50, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def compare_table(ctd: dict[str, Any], lang: str = "en") -> pd.DataFrame:
    cols = ["c_k", "c_ctd", "c_gridT", "c_grid", "c_oracleT", "c_oracle", "c_diff", "c_se"]
    out = []
    for r in ctd["rows"]:
        if r["k"] in KS:
            d = r.get("ctd_minus_grid", {})
            out.append([r["k"], round(r["ctd"], 4), r["grid_T_from_calibration"], round(r["grid"], 4), r["oracle_T"],
                        round(r["oracle"], 4), round(d.get("mean", r["ctd"] - r["grid"]), 4),
                        round(d.get("stderr", 0.0), 4)])
    return pd.DataFrame(out, columns=[tr(lang, c) for c in cols])


def content(sweep_path: Path | None, sweep: Mapping[str, Any] | None, lang: str = "en") -> dict[str, Any]:
    """Part name -> value for the section (``text`` only when no CTD file goes with the sweep)."""
    ctd_path = R.ctd_path_for(sweep_path) if sweep_path is not None else None
    if ctd_path is None or sweep is None:
        return {"text": tr(lang, "none"), "fit": None, "compare": None, "table": None}
    ctd = R.load_ctd(ctd_path)
    try:
        fit = fit_figure(sweep, ctd, lang)
    except SettingsError:          # a sweep without the T = 1 cell: show the fit parameters only
        fit = None
    return {"text": summary_markdown(ctd, lang), "fit": fit, "compare": compare_figure(ctd, lang),
            "table": compare_table(ctd, lang)}


# --------------------------------------------------------------------------- updates
def updates(ui: CtdParts, c: dict[str, Any], lang: str) -> dict:
    """Values for the section; a sweep file without a CTD result hides the empty plots and table."""
    return {ui.text: c["text"], ui.fit: gr.update(value=c["fit"], visible=c["fit"] is not None),
            ui.compare: gr.update(value=c["compare"], visible=c["compare"] is not None),
            ui.table: gr.update(value=c["table"], label=tr(lang, "table"), visible=c["table"] is not None)}


def outputs(ui: CtdParts) -> list[Any]:
    return [ui.text, ui.fit, ui.compare, ui.table]
