"""The "Calibrated temperature" section of the Many-samples tab: the shipped CTD result.

It reads the CTD JSON fitted on the selected sweep (``multisample.ctd_report``) and draws
(1) sequence log-prob against pass for the calibration samples, with the pass rate in
equal-count bins and the fitted logistic curve, (2) held-out pass@k of CTD against the grid
temperature chosen on the calibration half and the held-out oracle, (3) the same as a table.
Nothing runs a model; every number comes from the two shipped files."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from decoding_lab.experiments import ctd_report as R
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.i18n import norm_lang

KS = (1, 2, 4, 8, 16)

S = {
    "en": {
        "head": "### Calibrated temperature (CTD)\n"
                "If the verifier potential were an affine function of the sequence log-probability, "
                "V ≈ c + a·log p(y), the tilted sampler (p·e^V)^(1/T) would collapse to a plain temperature, "
                "**T_ctd = 1 / (1 + a)**. The fit below estimates a from samples drawn at T = 1 (logistic "
                "regression of pass on log p), then compares T_ctd with the grid on problems it never saw.",
        "fit": "Fitted on **{samples} samples** (problems {c0}–{c1} at T = 1, pass rate {rate:.3f}): "
               "P(pass | ℓ) = σ({alpha:.3f} + {beta:.4f}·ℓ), affine slope a = {slope:.4f} → **T_ctd = {t:g}**.",
        "held": "Held-out problems {h0}–{h1}: pass@1 **{ctd1:.3f}** with CTD (T = {t:g}) against **{grid1:.3f}** "
                "with the grid's T = {gt1:g} (chosen on the calibration half; the held-out oracle is T = {ot1:g}, "
                "{or1:.3f}); difference {d1:+.3f} ± {s1:.3f}. At k = {kn}: {ctdn:.3f} against {gridn:.3f} "
                "(T = {gtn:g}); oracle {orn:.3f} (T = {otn:g}).",
        "worse": "**What it means:** on this model CTD did worse than simply choosing the temperature on the "
                 "calibration half. Log-probability is poorly calibrated for correctness here: the pass rate "
                 "does rise with log p (see the binned dots), but so slowly per nat that the affine fit asks "
                 "for little sharpening (T_ctd = {t:g}), while the grid's T = {gt1:g}, which pushes each sample "
                 "towards the model's preferred path, reaches pass@1 {grid1:.2f} instead of {ctd1:.2f}.",
        "better": "**What it means:** here CTD matched or beat the grid temperature chosen on the calibration "
                  "half: log-probability tracks correctness well enough for one fitted scalar to pay off.",
        "none": "*No calibrated-temperature result is shipped for this sweep file.*",
        "fit_title": "Sequence log-prob vs pass (calibration samples, T = 1)", "logprob": "sequence log-prob ℓ",
        "pass": "pass (1) / fail (0)", "samples": "samples", "binned": "pass rate (equal-count bins)",
        "curve": "fit σ(α + βℓ)",
        "cmp_title": "Held-out pass@k: CTD vs the grid", "k": "k", "passk": "pass@k",
        "ctd": "CTD (T = {t:g})", "grid": "grid T chosen on calibration half", "oracle": "held-out oracle",
        "table": "CTD against the grid, held-out problems",
        "c_k": "k", "c_ctd": "CTD", "c_gridT": "grid T", "c_grid": "grid", "c_oracleT": "oracle T",
        "c_oracle": "oracle", "c_diff": "CTD − grid", "c_se": "± s.e.",
    },
    "zh": {
        "head": "### 校准温度（CTD）\n"
                "如果验证器势能是序列对数概率的仿射函数 V ≈ c + a·log p(y)，倾斜采样 (p·e^V)^(1/T) 就退化为普通温度："
                "**T_ctd = 1 / (1 + a)**。下面用 T = 1 的样本拟合 a（对 log p 做“是否通过”的逻辑回归），"
                "再在它没见过的题目上把 T_ctd 与网格温度比较。",
        "fit": "在 **{samples} 个样本**上拟合（第 {c0}–{c1} 题，T = 1，通过率 {rate:.3f}）："
               "P(通过 | ℓ) = σ({alpha:.3f} + {beta:.4f}·ℓ)，仿射斜率 a = {slope:.4f} → **T_ctd = {t:g}**。",
        "held": "留出题目 {h0}–{h1}：CTD（T = {t:g}）的 pass@1 为 **{ctd1:.3f}**，网格的 T = {gt1:g}"
                "（在校准半边选出；留出集上的最优是 T = {ot1:g}，{or1:.3f}）为 **{grid1:.3f}**；"
                "差 {d1:+.3f} ± {s1:.3f}。k = {kn} 时：{ctdn:.3f} 对 {gridn:.3f}（T = {gtn:g}）；最优 {orn:.3f}（T = {otn:g}）。",
        "worse": "**这说明什么**：在这个模型上，CTD 不如直接在校准半边挑温度。这里对数概率对“是否正确”校准得很差："
                 "通过率确实随 log p 上升（见分箱的点），但每个 nat 上升得太慢，仿射拟合只要求很少的锐化（T_ctd = {t:g}）；"
                 "而网格的 T = {gt1:g} 把每个样本推向模型偏好的路径，pass@1 达到 {grid1:.2f}，而不是 {ctd1:.2f}。",
        "better": "**这说明什么**：这里 CTD 追平或超过了在校准半边选出的网格温度：对数概率与正确性足够相关，"
                  "一个拟合出的标量就能带来收益。",
        "none": "*这个扫描文件没有随附的校准温度结果。*",
        "fit_title": "序列对数概率与是否通过（校准样本，T = 1）", "logprob": "序列对数概率 ℓ",
        "pass": "通过 (1) / 未通过 (0)", "samples": "样本", "binned": "通过率（等数量分箱）", "curve": "拟合 σ(α + βℓ)",
        "cmp_title": "留出集 pass@k：CTD 与网格温度", "k": "k", "passk": "pass@k",
        "ctd": "CTD（T = {t:g}）", "grid": "校准半边选出的网格 T", "oracle": "留出集最优",
        "table": "CTD 与网格温度对比（留出题目）",
        "c_k": "k", "c_ctd": "CTD", "c_gridT": "网格 T", "c_grid": "网格", "c_oracleT": "最优 T",
        "c_oracle": "最优", "c_diff": "CTD − 网格", "c_se": "± 标准误",
    },
}


def s(lang: str | None, key: str, **kw: Any) -> str:
    return S[norm_lang(lang)][key].format(**kw)


# --------------------------------------------------------------------------- content
def summary_markdown(ctd: dict[str, Any], lang: str = "en") -> str:
    h = R.headline(ctd)
    first, last = h["first"], h["last"]
    worse = first["ctd"] < first["grid"]
    return "\n\n".join([
        s(lang, "head"),
        s(lang, "fit", samples=h["samples"], c0=h["calibration"][0], c1=h["calibration"][1], rate=h["pass_rate"],
          alpha=h["alpha"], beta=h["beta"], slope=h["slope"], t=h["T_ctd"]),
        s(lang, "held", h0=h["heldout"][0], h1=h["heldout"][1], t=h["T_ctd"], ctd1=first["ctd"], grid1=first["grid"],
          gt1=first["grid_T_from_calibration"], ot1=first["oracle_T"], or1=first["oracle"],
          d1=first["ctd_minus_grid"]["mean"], s1=first["ctd_minus_grid"]["stderr"], kn=last["k"], ctdn=last["ctd"],
          gridn=last["grid"], gtn=last["grid_T_from_calibration"], orn=last["oracle"], otn=last["oracle_T"]),
        s(lang, "worse" if worse else "better", t=h["T_ctd"], gt1=first["grid_T_from_calibration"],
          grid1=first["grid"], ctd1=first["ctd"])])


def fit_figure(sweep: dict[str, Any], ctd: dict[str, Any], lang: str = "en") -> go.Figure:
    x, y = R.calibration_samples(sweep, ctd["calibration_problems"])
    fit = ctd["fit"]
    # a small fixed vertical jitter so 400 points at 0 and 1 do not hide each other (display only)
    jitter = np.random.default_rng(0).uniform(-0.04, 0.04, len(y))
    bins = R.binned_rates(x, [float(v) for v in y], bins=8)
    grid = np.linspace(min(x), max(x), 120).tolist()
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[float(v) + j for v, j in zip(y, jitter)], mode="markers", name=s(lang, "samples"),
                             marker=dict(size=5, opacity=0.35, color=["#2ca02c" if v else "#d62728" for v in y]),
                             hovertemplate="ℓ=%{x:.1f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[b["x"] for b in bins], y=[b["rate"] for b in bins], mode="markers",
                             name=s(lang, "binned"), marker=dict(size=11, color="#1f77b4", symbol="diamond"),
                             error_y=dict(type="data", array=[b["stderr"] for b in bins], visible=True),
                             customdata=[[b["n"], b["lo"], b["hi"]] for b in bins],
                             hovertemplate="%{y:.2f} (n=%{customdata[0]}, ℓ in [%{customdata[1]:.0f}, "
                                           "%{customdata[2]:.0f}])<extra></extra>"))
    fig.add_trace(go.Scatter(x=grid, y=R.logistic_curve(fit["alpha"], fit["beta"], grid), mode="lines",
                             name=s(lang, "curve"), line=dict(color="#ff7f0e", width=3)))
    fig.update_layout(title=s(lang, "fit_title"), xaxis_title=s(lang, "logprob"), yaxis_title=s(lang, "pass"),
                      yaxis_range=[-0.1, 1.1], height=360, margin=dict(l=50, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def compare_figure(ctd: dict[str, Any], lang: str = "en") -> go.Figure:
    rows = ctd["rows"]
    ks = [r["k"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ks, y=[r["ctd"] for r in rows], mode="lines+markers",
                             name=s(lang, "ctd", t=ctd["ctd_temperature"])))
    for key, tkey, name, dash in (("grid", "grid_T_from_calibration", "grid", None), ("oracle", "oracle_T", "oracle", "dot")):
        fig.add_trace(go.Scatter(x=ks, y=[r[key] for r in rows], mode="lines+markers", name=s(lang, name),
                                 line=dict(dash=dash), customdata=[r[tkey] for r in rows],
                                 hovertemplate="k=%{x}: %{y:.3f} (T=%{customdata})<extra></extra>"))
    fig.update_layout(title=s(lang, "cmp_title"), xaxis_title=s(lang, "k"), yaxis_title=s(lang, "passk"),
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
    return pd.DataFrame(out, columns=[s(lang, c) for c in cols])


def content(sweep_path: Path | None, sweep: dict[str, Any] | None, lang: str = "en") -> dict[str, Any]:
    """Part name -> value for the section (``text`` only when no CTD file goes with the sweep)."""
    ctd_path = R.ctd_path_for(sweep_path) if sweep_path is not None else None
    if ctd_path is None or sweep is None:
        return {"text": s(lang, "none"), "fit": None, "compare": None, "table": None}
    ctd = R.load_ctd(ctd_path)
    try:
        fit = fit_figure(sweep, ctd, lang)
    except SettingsError:          # a sweep without the T = 1 cell: show the fit parameters only
        fit = None
    return {"text": summary_markdown(ctd, lang), "fit": fit, "compare": compare_figure(ctd, lang),
            "table": compare_table(ctd, lang)}


# --------------------------------------------------------------------------- components
def build(c: dict[str, Any], lang: str = "en") -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Column(elem_id="ms-ctd"):
        ui.text = gr.Markdown(c["text"], elem_id="ms-ctd-text")
        with gr.Row():
            ui.fit = gr.Plot(c["fit"], elem_id="ms-ctd-fit", show_label=False, visible=c["fit"] is not None)
            ui.compare = gr.Plot(c["compare"], elem_id="ms-ctd-compare", show_label=False,
                                 visible=c["compare"] is not None)
        ui.table = gr.Dataframe(c["table"], label=s(lang, "table"), elem_id="ms-ctd-table", interactive=False,
                                visible=c["table"] is not None)
    return ui


def updates(ui: SimpleNamespace, c: dict[str, Any], lang: str) -> dict:
    """Values for the section; a sweep file without a CTD result hides the empty plots and table."""
    return {ui.text: c["text"], ui.fit: gr.update(value=c["fit"], visible=c["fit"] is not None),
            ui.compare: gr.update(value=c["compare"], visible=c["compare"] is not None),
            ui.table: gr.update(value=c["table"], label=s(lang, "table"), visible=c["table"] is not None)}


def outputs(ui: SimpleNamespace) -> list[Any]:
    return [ui.text, ui.fit, ui.compare, ui.table]
