"""Multi-sample tab: read a precomputed temperature x truncation sweep (``assets/sweeps``) and show
pass@k against temperature, the best temperature for each k, a temperature x truncation heatmap,
every cell as a table, the command that made the file, and CSV / JSON downloads.

The sweep part runs no model: the tab opens on the shipped file. The figure builders
(``passk_figure``, ``best_figure``, ``heatmap_figure``, ``cells_table``) take the loaded sweep dict
and are usable on their own. Per-session view choices live in one ``gr.State`` (``ui.view``).

Below the sweep: the calibrated-temperature result fitted on the same sweep (``ctd_view``, read from
the shipped CTD file) and a live verifier-tilted run on the default model (``tilt_view``, whose last
runs live in a second ``gr.State``)."""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from decoding_lab.experiments import sweep
from decoding_lab.stages import SettingsError
from decoding_lab.ui import ctd_view, tilt_view
from decoding_lab.ui.common.i18n import norm_lang

KS = (1, 2, 4, 8, 16)
METRICS = ("pass_at_k", "self_consistency", "mean_length", "repetition_4gram", "distinct2", "no_answer")
SWEEP_CLI = ("python -m decoding_lab sweep --model smollm2-135m-instruct --task addition --problems 50 --n 16 "
             "--temperatures 0,0.3,0.7,1.0,1.3 --truncations none,top-p,min-p,top-k --max-new-tokens 40 "
             "--threads 1 --out my_sweep.json")

S = {
    "en": {
        "intro": "**Many samples per problem.** Each cell of a precomputed sweep drew *n* samples for every problem "
                 "of a task with a verifier. pass@k is the chance that at least one of k samples is right "
                 "(unbiased estimate, error bars = standard error across problems). Look for the lesson: the "
                 "temperature that is best for pass@1 is low, the best one for pass@k rises with k, because "
                 "low-temperature samples are near-copies.\n\n"
                 "The sweep was computed beforehand. To make your own sweep file, run on the command line "
                 "(it takes hours on a small CPU; a stopped run is resumed by running the same command again):\n\n"
                 "```\n{cli}\n```",
        "file": "Sweep result file", "trunc": "Truncation (pass@k curve)", "k": "k (heatmap and table)",
        "metric": "Heatmap metric",
        "status": "**{model}** on *{task}* — {done} of {total} cells{partial}; n = {n} samples × {problems} problems, "
                  "up to {tokens} new tokens.",
        "partial": " (**partial sweep**: missing cells are blank)",
        "passk_title": "pass@k versus temperature (truncation: {trunc})", "temperature": "temperature",
        "passk_axis": "pass@k", "best_title": "Best temperature for each k", "best_axis": "best temperature",
        "any": "any truncation",
        "rises": "Best temperature for pass@1: **T = {t1:g}**; for pass@{kmax}: **T = {tk:g}** — it **rises with k**.",
        "flat": "Best temperature for pass@1: **T = {t1:g}**; for pass@{kmax}: **T = {tk:g}** — it does not rise "
                "with k in this file.",
        "heat_title": "{metric} by temperature × truncation — {done} of {total} cells",
        "truncation": "truncation", "missing": "not run",
        "table": "All cells", "command": "Command that produced this file",
        "csv": "Table as CSV", "json": "Sweep JSON file",
        "m_pass_at_k": "pass@k", "m_self_consistency": "self-consistency", "m_mean_length": "mean length (tokens)",
        "m_repetition_4gram": "4-gram repetition", "m_distinct2": "distinct-2", "m_no_answer": "no answer",
        "c_T": "T", "c_trunc": "truncation", "c_pen": "penalty", "c_pass1": "pass@1", "c_passk": "pass@{k}",
        "c_passk_se": "pass@{k} s.e.", "c_sc": "self-consistency", "c_len": "mean length", "c_rep": "4-gram repetition",
        "no_files": "No sweep files shipped in assets/sweeps.",
        "bad_file": "no shipped sweep file named {name!r}; choose one of: {names}",
    },
    "zh": {
        "intro": "**每个问题多次采样。** 预先计算的扫描里，每个格子都对一个可自动判分任务的每个问题采样了 *n* 次。"
                 "pass@k 是 k 个样本中至少有一个正确的概率（无偏估计，误差棒 = 跨问题的标准误）。要看的结论："
                 "对 pass@1 最好的温度较低，而对 pass@k 最好的温度随 k 升高，因为低温下的样本几乎是彼此的副本。\n\n"
                 "这份扫描是预先算好的。要生成自己的扫描文件，请在命令行运行（在小 CPU 上需要数小时；"
                 "中途停止后再运行同一命令即可续跑）：\n\n```\n{cli}\n```",
        "file": "扫描结果文件", "trunc": "截断方式（pass@k 曲线）", "k": "k（热力图与表格）", "metric": "热力图指标",
        "status": "**{model}** 在 *{task}* 上 — {total} 个格子中完成 {done} 个{partial}；n = {n} 个样本 × {problems} 个问题，"
                  "最多 {tokens} 个新 token。",
        "partial": "（**部分扫描**：缺失的格子留空）",
        "passk_title": "pass@k 随温度的变化（截断：{trunc}）", "temperature": "温度", "passk_axis": "pass@k",
        "best_title": "每个 k 的最佳温度", "best_axis": "最佳温度", "any": "任意截断",
        "rises": "pass@1 的最佳温度：**T = {t1:g}**；pass@{kmax} 的最佳温度：**T = {tk:g}** — **随 k 升高**。",
        "flat": "pass@1 的最佳温度：**T = {t1:g}**；pass@{kmax} 的最佳温度：**T = {tk:g}** — 在此文件中没有随 k 升高。",
        "heat_title": "{metric}：温度 × 截断 — {total} 个格子中完成 {done} 个",
        "truncation": "截断", "missing": "未运行",
        "table": "全部格子", "command": "生成此文件的命令", "csv": "表格（CSV）", "json": "扫描 JSON 文件",
        "m_pass_at_k": "pass@k", "m_self_consistency": "自洽性（多数投票）", "m_mean_length": "平均长度（token）",
        "m_repetition_4gram": "4-gram 重复率", "m_distinct2": "distinct-2", "m_no_answer": "无答案比例",
        "c_T": "T", "c_trunc": "截断", "c_pen": "惩罚", "c_pass1": "pass@1", "c_passk": "pass@{k}",
        "c_passk_se": "pass@{k} 标准误", "c_sc": "自洽性", "c_len": "平均长度", "c_rep": "4-gram 重复率",
        "no_files": "assets/sweeps 中没有扫描文件。",
        "bad_file": "没有名为 {name!r} 的扫描文件；可选：{names}",
    },
}


def s(lang: str | None, key: str, **kw: Any) -> str:
    return S[norm_lang(lang)][key].format(**kw)


# --------------------------------------------------------------------------- data
def file_names() -> list[str]:
    return [p.name for p in sweep.shipped_results()]


def resolve(name: str | None, lang: str = "en") -> Path:
    """A shipped file's path from its name; only names in ``assets/sweeps`` are accepted."""
    for p in sweep.shipped_results():
        if p.name == name:
            return p
    raise SettingsError(s(lang, "bad_file", name=name, names=", ".join(file_names()) or "-"))


_CACHE: dict[tuple[str, float], dict[str, Any]] = {}


def load(name: str | None, lang: str = "en") -> tuple[Path, dict[str, Any]]:
    path = resolve(name, lang)
    key = (str(path), path.stat().st_mtime)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = sweep.load_result(path)
    return path, _CACHE[key]


def n_samples(result: dict[str, Any]) -> int:
    return int(result.get("config", {}).get("n") or max(len(c["metrics"]["pass_at_k"]) for c in result["cells"]))


def truncations(result: dict[str, Any]) -> list[str]:
    cfg = list(result.get("config", {}).get("truncations") or [])
    return cfg + [t for t in dict.fromkeys(c["truncation"] for c in result["cells"]) if t not in cfg]


def temperatures(result: dict[str, Any]) -> list[float]:
    cfg = [float(x) for x in result.get("config", {}).get("temperatures") or []]
    return sorted(set(cfg) | {float(c["temperature"]) for c in result["cells"]})


def ks_for(result: dict[str, Any]) -> list[int]:
    n = n_samples(result)
    return [k for k in KS if k <= n] or [1]


def metric_value(cell: dict[str, Any], metric: str, k: int) -> tuple[float | None, float | None]:
    m = cell["metrics"]
    if metric == "pass_at_k":
        p = m["pass_at_k"][k - 1]
        return p["mean"], p["stderr"]
    return m.get(metric), None


def best_by_k(result: dict[str, Any], truncation: str | None = None) -> dict[int, dict[str, Any]]:
    """Like ``SweepResult.best_by_k``: per k the cell with the highest mean pass@k (ties: lower T),
    among cells with ``truncation`` (the greedy cell counts for every truncation) or all cells."""
    cells = [c for c in result["cells"] if truncation is None or c["truncation"] == truncation
             or c["temperature"] == 0]
    out: dict[int, dict[str, Any]] = {}
    for k in range(1, n_samples(result) + 1):
        scored = [(c["metrics"]["pass_at_k"][k - 1]["mean"], -c["temperature"], c) for c in cells
                  if len(c["metrics"]["pass_at_k"]) >= k]
        if not scored:
            continue
        val, _, best = max(scored, key=lambda x: (x[0], x[1]))
        out[k] = {"temperature": best["temperature"], "truncation": best["truncation"], "pass": val,
                  "stderr": best["metrics"]["pass_at_k"][k - 1]["stderr"]}
    return out


# --------------------------------------------------------------------------- figures
def passk_figure(result: dict[str, Any], lang: str = "en", truncation: str = "none",
                 ks: tuple[int, ...] | list[int] | None = None) -> go.Figure:
    fig = go.Figure()
    for k in ks or ks_for(result):
        pts = sweep.curve(result, k=k, truncation=truncation)
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 name=f"k={k}", error_y=dict(type="data", array=[p[2] or 0 for p in pts],
                                                             visible=True)))
    fig.update_layout(title=s(lang, "passk_title", trunc=truncation), xaxis_title=s(lang, "temperature"),
                      yaxis_title=s(lang, "passk_axis"), yaxis_range=[0, 1.05], height=380,
                      margin=dict(l=50, r=20, t=50, b=40), legend_title_text="k")
    return fig


def best_figure(result: dict[str, Any], lang: str = "en") -> go.Figure:
    fig = go.Figure()
    sampled = [t for t in truncations(result) if any(c["truncation"] == t and c["temperature"] > 0
                                                     for c in result["cells"])]
    lines = [(None, s(lang, "any"))] + ([(t, t) for t in sampled] if len(sampled) > 1 else [])
    for trunc, name in lines:
        best = best_by_k(result, trunc)
        ks = sorted(best)
        fig.add_trace(go.Scatter(
            x=ks, y=[best[k]["temperature"] for k in ks], mode="lines+markers", name=name,
            line_shape="hv", customdata=[[best[k]["pass"], best[k]["stderr"], best[k]["truncation"]] for k in ks],
            hovertemplate="k=%{x}<br>T=%{y}<br>pass@k=%{customdata[0]:.3f} ± %{customdata[1]:.3f}"
                          "<br>%{customdata[2]}<extra></extra>"))
    fig.update_layout(title=s(lang, "best_title"), xaxis_title="k", yaxis_title=s(lang, "best_axis"),
                      height=320, margin=dict(l=50, r=20, t=50, b=40), xaxis_dtick=1 if n_samples(result) <= 16 else None)
    return fig


def best_text(result: dict[str, Any], lang: str = "en") -> str:
    best = best_by_k(result)
    if not best:
        return ""
    kmax = max(best)
    t1, tk = best[1]["temperature"], best[kmax]["temperature"]
    return s(lang, "rises" if tk > t1 else "flat", t1=t1, tk=tk, kmax=kmax)


def row_label(cell: dict[str, Any]) -> str:
    """A heatmap row: the truncation, and the penalty when the cell has one ("none · rep")."""
    pen = cell.get("penalty", "none")
    return cell["truncation"] if pen == "none" else f"{cell['truncation']} · {pen}"


def heatmap_rows(result: dict[str, Any]) -> list[str]:
    """Truncations in the config's order, then every truncation · penalty combination run."""
    rows = truncations(result)
    return rows + [r for r in dict.fromkeys(row_label(c) for c in result["cells"]) if r not in rows]


def heatmap_matrix(result: dict[str, Any], metric: str = "pass_at_k", k: int = 1
                   ) -> tuple[list[str], list[float], list[list[float | None]]]:
    """Rows = truncations (and truncation · penalty where a penalty axis was swept), columns =
    temperatures; None where no cell was run. The greedy cell (T = 0) without a penalty stands for
    every truncation without a penalty (truncation never removes the argmax)."""
    if metric not in METRICS:
        raise SettingsError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if metric == "pass_at_k" and not 1 <= k <= n_samples(result):
        raise SettingsError(f"k must lie in 1..{n_samples(result)}, got {k}")
    rows, cols = heatmap_rows(result), temperatures(result)
    plain = set(truncations(result))
    z: list[list[float | None]] = [[None] * len(cols) for _ in rows]
    for c in result["cells"]:
        j = cols.index(float(c["temperature"]))
        greedy_plain = c["temperature"] == 0 and c.get("penalty", "none") == "none"
        for i, r in enumerate(rows):
            if r == row_label(c) or (greedy_plain and r in plain):
                z[i][j] = metric_value(c, metric, k)[0]
    return rows, cols, z


def heatmap_figure(result: dict[str, Any], lang: str = "en", metric: str = "pass_at_k", k: int = 1) -> go.Figure:
    rows, cols, z = heatmap_matrix(result, metric, k)
    label = s(lang, "m_" + metric).replace("pass@k", f"pass@{k}")
    text = [["" if v is None else f"{v:.3g}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=[f"{t:g}" for t in cols], y=rows, text=text, texttemplate="%{text}",
                               colorscale="Viridis", hoverongaps=False, colorbar_title=label,
                               zmin=0 if metric != "mean_length" else None,
                               zmax=1 if metric != "mean_length" else None))
    fig.update_layout(title=s(lang, "heat_title", metric=label, done=result.get("cells_done", len(result["cells"])),
                              total=result.get("cells_total", len(result["cells"]))),
                      xaxis_title=s(lang, "temperature"), yaxis_title=s(lang, "truncation"), xaxis_type="category",
                      yaxis_type="category", yaxis_autorange="reversed", height=320,
                      margin=dict(l=70, r=20, t=50, b=40))
    return fig


def cells_table(result: dict[str, Any], lang: str = "en", k: int = 8) -> pd.DataFrame:
    k = max(1, min(int(k), n_samples(result)))
    cols = ["c_T", "c_trunc", "c_pen", "c_pass1", "c_passk", "c_passk_se", "c_sc", "c_len", "c_rep"]
    rows = []
    for c in result["cells"]:
        m = c["metrics"]
        pk = m["pass_at_k"][k - 1]
        rows.append([c["temperature"], c["truncation"], c.get("penalty", "none"), m["pass1"], pk["mean"],
                     pk["stderr"], m["self_consistency"], m["mean_length"], m["repetition_4gram"]])
    names = [s(lang, c, k=k) for c in cols]
    if k == 1:                                   # keep column names unique (pass@1 twice)
        names[4], names[5] = names[4] + " (k)", names[5] + " (k)"
    return pd.DataFrame(rows, columns=names)


def status_text(result: dict[str, Any], lang: str = "en") -> str:
    cfg = result.get("config", {})
    done, total = result.get("cells_done", len(result["cells"])), result.get("cells_total", len(result["cells"]))
    task = result.get("task", {})
    return s(lang, "status", model=result.get("model", "?"), task=task.get("description") or task.get("name", "?"),
             done=done, total=total, partial="" if result.get("complete", done == total) else s(lang, "partial"),
             n=n_samples(result), problems=cfg.get("problems", "?"), tokens=cfg.get("max_new_tokens", "?"))


def export(path: Path, table: pd.DataFrame) -> tuple[str, str]:
    """Write the table as CSV and copy the JSON into a fresh temp folder (served by gr.File)."""
    out = Path(tempfile.mkdtemp(prefix="decoding_lab_ms_"))
    csv_path = out / (path.stem + "_cells.csv")
    table.to_csv(csv_path, index=False, quoting=csv.QUOTE_MINIMAL)
    json_path = out / path.name
    shutil.copyfile(path, json_path)
    return str(csv_path), str(json_path)


# --------------------------------------------------------------------------- UI
def default_view() -> dict[str, Any]:
    names = file_names()
    return {"file": names[0] if names else None, "k": 8, "metric": "pass_at_k", "truncation": "none"}


def _metric_choices(lang: str) -> list[tuple[str, str]]:
    return [(s(lang, "m_" + m), m) for m in METRICS]


def content(lang: str, view: dict[str, Any] | None) -> dict[str, Any]:
    """Everything the tab shows for ``view`` (file, k, metric, truncation) in ``lang``, by part name."""
    view = {**default_view(), **(view or {})}
    if not view["file"]:
        return {"status": s(lang, "no_files"), "view": view}
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
            "k": k, "k_choices": ks, "trunc": trunc, "trunc_choices": truncs, "file": view["file"], "view": view,
            "ctd": ctd_view.content(path, result, lang)}


def build(lang: str = "en") -> SimpleNamespace:
    """The tab's components, already showing the first shipped file (no click needed)."""
    ui = SimpleNamespace()
    c = content(lang, default_view())
    ui.intro = gr.Markdown(s(lang, "intro", cli=SWEEP_CLI), elem_id="ms-intro")
    with gr.Row():
        ui.file = gr.Dropdown(file_names(), value=c.get("file"), label=s(lang, "file"), elem_id="ms-file", scale=2)
        ui.trunc = gr.Dropdown(c.get("trunc_choices", ["none"]), value=c.get("trunc", "none"), label=s(lang, "trunc"),
                               elem_id="ms-trunc", scale=1)
        ui.metric = gr.Dropdown(_metric_choices(lang), value="pass_at_k", label=s(lang, "metric"),
                                elem_id="ms-metric", scale=1)
        ui.k = gr.Dropdown(c.get("k_choices", list(KS)), value=c.get("k", 8), label=s(lang, "k"), elem_id="ms-k",
                           scale=1)
    ui.status = gr.Markdown(c.get("status", ""), label="status", elem_id="ms-status")
    ui.passk = gr.Plot(c.get("passk"), label="pass@k vs T", elem_id="ms-passk-vs-T", show_label=False)
    with gr.Row():
        with gr.Column():
            ui.best = gr.Plot(c.get("best"), label="best T", elem_id="ms-best-T", show_label=False)
            ui.best_text = gr.Markdown(c.get("best_text", ""), label="best T text", elem_id="ms-best-T-text")
        ui.heatmap = gr.Plot(c.get("heatmap"), label="heatmap", elem_id="ms-heatmap", show_label=False)
    ui.table = gr.Dataframe(c.get("table"), label=s(lang, "table"), elem_id="ms-table", interactive=False)
    ui.command = gr.Code(c.get("command", ""), label=s(lang, "command"), language="shell", elem_id="ms-command",
                         interactive=False)
    with gr.Row():
        ui.csv = gr.File(c.get("csv"), label=s(lang, "csv"), elem_id="ms-csv", interactive=False)
        ui.json = gr.File(c.get("json"), label=s(lang, "json"), elem_id="ms-json", interactive=False)
    ui.view = gr.State(c["view"])
    ui.ctd = ctd_view.build(c.get("ctd") or ctd_view.content(None, None, lang), lang)
    ui.tilt = tilt_view.build(lang)
    return ui


def render(ui: SimpleNamespace, lang: str, view: dict[str, Any] | None, labels: bool = False) -> dict:
    """Component -> value/update for ``view``; with ``labels`` also every label in ``lang``."""
    c = content(lang, view)
    L = (lambda key: {"label": s(lang, key)}) if labels else (lambda key: {})
    if "passk" not in c:
        return {ui.status: c["status"], ui.view: c["view"]}
    return {**ctd_view.updates(ui.ctd, c["ctd"], lang), ui.status: c["status"], ui.passk: c["passk"], ui.best: c["best"], ui.best_text: c["best_text"],
            ui.heatmap: c["heatmap"], ui.table: gr.update(value=c["table"], **L("table")),
            ui.command: gr.update(value=c["command"], **L("command")),
            ui.csv: gr.update(value=c["csv"], **L("csv")), ui.json: gr.update(value=c["json"], **L("json")),
            ui.k: gr.update(choices=c["k_choices"], value=c["k"], **L("k")),
            ui.trunc: gr.update(choices=c["trunc_choices"], value=c["trunc"], **L("trunc")),
            ui.file: gr.update(value=c["file"], **L("file")), ui.view: c["view"]}


def _outputs(ui: SimpleNamespace) -> list[Any]:
    return [ui.status, ui.passk, ui.best, ui.best_text, ui.heatmap, ui.table, ui.command, ui.csv, ui.json,
            ui.k, ui.trunc, ui.file, ui.view, *ctd_view.outputs(ui.ctd)]


def wire(ui: SimpleNamespace, lang_state: Any, jobs: Any = None) -> None:
    def on_show(lang, file, k, metric, trunc):
        try:
            if file not in file_names():
                raise SettingsError(s(lang, "bad_file", name=file, names=", ".join(file_names()) or "-"))
            return render(ui, lang, {"file": file, "k": k, "metric": metric, "truncation": trunc})
        except (SettingsError, ValueError, TypeError, KeyError, IndexError) as e:
            raise gr.Error(str(e).splitlines()[0] if str(e) else type(e).__name__) from None

    inputs = [lang_state, ui.file, ui.k, ui.metric, ui.trunc]
    ui.file.input(on_show, inputs, _outputs(ui), api_name="multisample_show")
    for i, comp in enumerate((ui.k, ui.metric, ui.trunc)):
        comp.input(on_show, inputs, _outputs(ui), api_name=f"multisample_{('k', 'metric', 'truncation')[i]}",
                   api_visibility="private")
    tilt_view.wire(ui.tilt, lang_state, jobs)


def rerender(ui: SimpleNamespace, lang: str, view: dict[str, Any] | None = None, tilt_last: dict | None = None) -> dict:
    """Relabel everything and redraw the figures in ``lang`` for the session's ``view`` and last tilted runs."""
    try:
        out = render(ui, lang, view, labels=True)
    except SettingsError as e:       # a file that vanished must not break the language switch
        out = {ui.status: str(e)}
    out.pop(ui.view, None)
    base = {ui.file: "file", ui.trunc: "trunc", ui.k: "k", ui.table: "table", ui.command: "command",
            ui.csv: "csv", ui.json: "json"}
    for comp, key in base.items():
        out.setdefault(comp, gr.update(label=s(lang, key)))
    out.update({ui.intro: s(lang, "intro", cli=SWEEP_CLI), ui.metric: gr.update(label=s(lang, "metric"),
                                                                              choices=_metric_choices(lang))})
    for comp in (ui.status, ui.passk, ui.best, ui.best_text, ui.heatmap):
        out.setdefault(comp, None if comp in (ui.passk, ui.best, ui.heatmap) else "")
    for comp in ctd_view.outputs(ui.ctd):
        out.setdefault(comp, gr.update(label=ctd_view.s(lang, "table")) if comp is ui.ctd.table else None)
    out.update(tilt_view.rerender(ui.tilt, lang, tilt_last))
    return out


def mount(lang: str, lang_state: Any, ex: Any = None, jobs: Any = None) -> SimpleNamespace:
    """Build and wire the tab inside the current ``gr.Tab``; ``ex`` is not needed (the tilt demo always
    runs on the bundled default model); ``jobs`` bounds the model jobs one browser tab runs at once."""
    ui = build(lang)
    wire(ui, lang_state, jobs)
    views = list(rerender(ui, lang, None))
    return SimpleNamespace(ui=ui, states=[ui.view, ui.tilt.last], views=views,
                           rerender=lambda lang, view=None, tilt_last=None: rerender(ui, lang, view, tilt_last))
