"""The Multi-sample tab alone in a small Blocks (no model): the figure builders on the shipped
sweep JSON, then the live tab through gradio_client. Every pass@k the tab shows must be the
number in the file; a bad file name gives a one-line error and the server keeps serving."""

from __future__ import annotations

import json
import os

import pytest
import torch
from gradio_client import Client
from gradio_client.exceptions import AppError

from conftest_app import free_port

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
torch.set_num_threads(1)

from decoding_lab.multisample import sweep  # noqa: E402
from decoding_lab.ui import multisample_tab as mt  # noqa: E402

FILES = [p for p in sweep.shipped_results()]
pytestmark = pytest.mark.skipif(not FILES, reason="no shipped sweep files")
OUT = ["status", "passk", "best", "best_text", "heatmap", "table", "command", "csv", "json", "k", "trunc", "file"]


def fresh(name: str) -> dict:
    """The file as it is now (a running sweep may add cells; finished cells never change)."""
    return sweep.load_result(sweep.ASSET_DIR / name)


def cell_of(result: dict, t: float, trunc: str) -> dict:
    return next(c for c in result["cells"] if c["temperature"] == t and c["truncation"] == trunc)


# --------------------------------------------------------------------------- builders
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_passk_figure_matches_json(path):
    result = sweep.load_result(path)
    fig = mt.passk_figure(result, "en", "none")
    assert [tr.name for tr in fig.data] == [f"k={k}" for k in mt.ks_for(result)]
    for tr in fig.data:
        k = int(tr.name[2:])
        for t, y, e in zip(tr.x, tr.y, tr.error_y.array):
            p = cell_of(result, t, "none")["metrics"]["pass_at_k"][k - 1]
            assert (y, e) == (p["mean"], p["stderr"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_best_by_k_matches_file(path):
    result = sweep.load_result(path)
    best = mt.best_by_k(result)
    for k, b in result["best_by_k"].items():
        assert best[int(k)]["temperature"] == b["temperature"]
        assert best[int(k)]["pass"] == pytest.approx(b["pass"], abs=1e-12)
    fig = mt.best_figure(result, "en")
    assert list(fig.data[0].y) == [best[k]["temperature"] for k in sorted(best)]
    text = mt.best_text(result, "en")
    assert ("rises with k" in text) == (best[max(best)]["temperature"] > best[1]["temperature"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_heatmap_blank_where_missing(path):
    result = sweep.load_result(path)
    rows, cols, z = mt.heatmap_matrix(result, "pass_at_k", 4)
    filled = sum(v is not None for row in z for v in row)
    done = {(c["truncation"], c["temperature"]) for c in result["cells"] if c["temperature"] > 0}
    greedy = any(c["temperature"] == 0 for c in result["cells"])
    assert filled == len(done) + (len(rows) if greedy else 0)
    for c in result["cells"]:
        i = rows.index(c["truncation"])
        assert z[i][cols.index(c["temperature"])] == c["metrics"]["pass_at_k"][3]["mean"]
    fig = mt.heatmap_figure(result, "en", "pass_at_k", 4)
    assert f"{result['cells_done']} of {result['cells_total']} cells" in fig.layout.title.text
    zh = mt.heatmap_figure(result, "zh", "mean_length", 4)
    assert "温度" in zh.layout.xaxis.title.text
    with pytest.raises(Exception, match="unknown metric"):
        mt.heatmap_matrix(result, "nope", 1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_table(path):
    result = sweep.load_result(path)
    df = mt.cells_table(result, "en", 8)
    assert list(df.columns)[3:5] == ["pass@1", "pass@8"]
    for row, c in zip(df.itertuples(index=False), result["cells"]):
        assert row[3] == c["metrics"]["pass1"] and row[4] == c["metrics"]["pass_at_k"][7]["mean"]
        assert row[6] == c["metrics"]["self_consistency"] and row[7] == c["metrics"]["mean_length"]


def test_bad_name_rejected():
    with pytest.raises(Exception, match="no shipped sweep file named"):
        mt.resolve("../../etc/passwd")


# --------------------------------------------------------------------------- live tab
def build_app():
    import gradio as gr

    with gr.Blocks() as demo:
        lang_state = gr.State("en")
        lang = gr.Radio(["en", "zh"], value="en", label="Language")
        tab = mt.mount("en", lang_state, None)

        def on_language(new_lang, *states):
            return {lang_state: new_lang, **tab.rerender(new_lang, *states)}

        lang.change(on_language, [lang] + tab.states, [lang_state] + tab.views, api_name="multisample_set_language")
    return demo, tab


@pytest.fixture(scope="module")
def app():
    demo, tab = build_app()
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield Client(f"http://127.0.0.1:{port}/", verbose=False), tab
    finally:
        demo.close()


def show(client, name, k=4, metric="pass_at_k", trunc="none"):
    return dict(zip(OUT, client.predict(name, k, metric, trunc, api_name="/multisample_show")))


def test_tab_opens_on_shipped_file(app):
    _, tab = app
    assert tab.ui.file.value == FILES[0].name
    assert tab.ui.passk.value is not None and tab.ui.heatmap.value is not None
    assert "python -m decoding_lab sweep" in tab.ui.command.value
    assert "python -m decoding_lab sweep" in tab.ui.intro.value      # how to run a sweep
    assert {"ms-passk-vs-T", "ms-best-T", "ms-heatmap"} <= {tab.ui.passk.elem_id, tab.ui.best.elem_id,
                                                            tab.ui.heatmap.elem_id}


@pytest.mark.parametrize("k", [1, 4, 16])
def test_live_numbers_match_json(app, k):
    client, _ = app
    name = FILES[0].name
    out = show(client, name, k=k)
    result = fresh(name)
    fig = json.loads(out["passk"]["plot"])
    for tr in fig["data"]:
        kk = int(tr["name"][2:])
        for t, y, e in zip(tr["x"], tr["y"], tr["error_y"]["array"]):
            p = cell_of(result, t, "none")["metrics"]["pass_at_k"][kk - 1]
            assert y == pytest.approx(p["mean"], abs=1e-12) and e == pytest.approx(p["stderr"], abs=1e-12)
    table = out["table"]["value"]
    assert table["headers"][4].startswith(f"pass@{k}") and len(set(table["headers"])) == len(table["headers"])
    for row in table["data"]:
        c = cell_of(result, row[0], row[1])
        assert row[3] == pytest.approx(c["metrics"]["pass1"]) and row[4] == pytest.approx(
            c["metrics"]["pass_at_k"][k - 1]["mean"])
    assert f"of {result['cells_total']} cells" in out["status"]
    assert out["command"]["value"] == result["command"]
    heat = json.loads(out["heatmap"]["plot"])
    assert f"pass@{k}" in heat["layout"]["title"]["text"] and "cells" in heat["layout"]["title"]["text"]
    # downloads: the CSV has the table's rows, the JSON is the file
    csv_path, json_path = out["csv"]["value"], out["json"]["value"]
    with open(csv_path, encoding="utf-8") as f:
        lines = f.read().strip().splitlines()
    assert lines[0].split(",")[4].startswith(f"pass@{k}") and len(lines) == len(table["data"]) + 1
    assert json.load(open(json_path))["format"] == sweep.FORMAT


def test_other_metric(app):
    client, _ = app
    out = show(client, FILES[0].name, k=2, metric="mean_length")
    heat = json.loads(out["heatmap"]["plot"])
    result = fresh(FILES[0].name)
    vals = [v for row in heat["data"][0]["z"] for v in row if v is not None]
    assert set(vals) <= {c["metrics"]["mean_length"] for c in result["cells"]}


def test_bad_file_name_then_still_serving(app):
    client, _ = app
    with pytest.raises(AppError) as err:
        client.predict("../../etc/passwd", 4, "pass_at_k", "none", api_name="/multisample_show")
    msg = str(err.value)
    assert "../../etc/passwd" in msg and "\n" not in msg.strip()
    out = show(client, FILES[0].name)           # the server still answers
    assert out["passk"]["type"] == "plotly"


def test_chinese_rerender(app):
    client, tab = app
    out = client.predict("zh", api_name="/multisample_set_language")
    flat = json.dumps(out, ensure_ascii=False)
    assert "每个问题多次采样" in flat and "温度" in flat and "扫描结果文件" in flat
    # direct call: every label is relabelled
    upd = tab.rerender("zh", tab.ui.view.value)
    assert upd[tab.ui.file]["label"] == mt.s("zh", "file")
    assert upd[tab.ui.table]["label"] == mt.s("zh", "table")
    assert "温度" in upd[tab.ui.passk].layout.xaxis.title.text
    client.predict("en", api_name="/multisample_set_language")
    en = tab.rerender("en", None)
    assert en[tab.ui.file]["label"] == "Sweep result file"
