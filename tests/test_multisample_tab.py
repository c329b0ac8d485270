"""The Multi-sample tab alone in a small Blocks: the figure builders on the shipped sweep and CTD
JSON, then the live tab through gradio_client. Every pass@k the tab shows must be the number in
the file; a bad file name gives a one-line error and the server keeps serving. The live
verifier-tilt section runs the bundled default model (tests marked ``real``)."""

from __future__ import annotations

import html
import json
import math
import os
import re

import pytest
import torch
from gradio_client import Client
from gradio_client.exceptions import AppError, ValidationError

from conftest_app import free_port, note_start

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
torch.set_num_threads(1)

from decoding_lab.experiments import sweep  # noqa: E402
from decoding_lab.stages import SettingsError  # noqa: E402
from decoding_lab.ui.multisample import data as md  # noqa: E402
from decoding_lab.ui.multisample import views as mt  # noqa: E402
from decoding_lab.ui.multisample.strings import tr as ms_tr  # noqa: E402

FILES = [p for p in sweep.shipped_results()]
pytestmark = pytest.mark.skipif(not FILES, reason="no shipped sweep files")
OUT = ["status", "passk", "best", "best_text", "heatmap", "table", "command", "csv", "json", "k", "trunc", "file",
       "ctd_text", "ctd_fit", "ctd_compare", "ctd_table"]
TILT_OUT = ["texts", "summary", "plot", "table"]


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
    assert [tr.name for tr in fig.data] == [f"k={k}" for k in md.ks_for(result)]
    for tr in fig.data:
        k = int(tr.name[2:])
        for t, y, e in zip(tr.x, tr.y, tr.error_y.array):
            p = cell_of(result, t, "none")["metrics"]["pass_at_k"][k - 1]
            assert (y, e) == (p["mean"], p["stderr"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_best_by_k_matches_file(path):
    result = sweep.load_result(path)
    best = md.best_by_k(result)
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
    rows, cols, z = md.heatmap_matrix(result, "pass_at_k", 4)
    filled = sum(v is not None for row in z for v in row)
    done = {(md.row_label(c), c["temperature"]) for c in result["cells"] if c["temperature"] > 0}
    greedy = any(c["temperature"] == 0 for c in result["cells"])
    assert filled == len(done) + (len(md.truncations(result)) if greedy else 0)
    for c in result["cells"]:
        i = rows.index(md.row_label(c))
        assert z[i][cols.index(c["temperature"])] == c["metrics"]["pass_at_k"][3]["mean"]
    fig = mt.heatmap_figure(result, "en", "pass_at_k", 4)
    assert f"{result['cells_done']} of {result['cells_total']} cells" in fig.layout.title.text
    zh = mt.heatmap_figure(result, "zh", "mean_length", 4)
    assert "温度" in zh.layout.xaxis.title.text
    with pytest.raises(Exception, match="unknown metric"):
        md.heatmap_matrix(result, "nope", 1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_table(path):
    result = sweep.load_result(path)
    df = mt.cells_table(result, "en", 8)
    assert list(df.columns)[3:5] == ["pass@1", "pass@8"]
    for row, c in zip(df.itertuples(index=False), result["cells"]):
        assert row[2] == c.get("penalty", "none")
        assert row[3] == c["metrics"]["pass1"] and row[4] == c["metrics"]["pass_at_k"][7]["mean"]
        assert row[6] == c["metrics"]["self_consistency"] and row[7] == c["metrics"]["mean_length"]


def test_bad_name_rejected():
    with pytest.raises(Exception, match="no shipped sweep file named"):
        md.resolve("../../etc/passwd")


def test_shipped_sweep_is_parsed_once_and_shared_read_only():
    import threading
    from types import MappingProxyType

    md.SWEEPS.clear()
    name = FILES[0].name
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(md.load(name)[1])) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(r is seen[0] for r in seen)                      # one parse, shared
    result = seen[0]
    assert isinstance(result, MappingProxyType) and isinstance(result["cells"], tuple)
    with pytest.raises(TypeError):
        result["cells"][0]["metrics"]["pass1"] = 1.0            # nobody can change what others see
    with pytest.raises(AttributeError):
        result["cells"][0]["metrics"]["pass_at_k"].append(None)
    assert md.best_by_k(result) == md.best_by_k(fresh(name))    # and it reads like the file


# --------------------------------------------------------------------------- live tab
def build_app():
    """The tab alone in a small Blocks, with the page's language switch: static labels through
    ``Labels``, then the tab's ``relabel``. Returns the demo and the mounted tab (``ui`` = its parts,
    ``rerender`` = what the switch writes, ``tab`` = the ``TabUI``)."""
    import gradio as gr
    from types import SimpleNamespace

    from decoding_lab.ui.common.sessions import SessionJobs
    from decoding_lab.ui.common.state import Labels, merge_updates
    from decoding_lab.ui.common.tab import ModelPicker, TabContext
    from decoding_lab.ui.multisample import build

    with gr.Blocks() as demo:
        lang_state = gr.State("en")
        lang = gr.Radio(["en", "zh"], value="en", label="Language")
        picker = ModelPicker(gr.Dropdown(["smollm2-135m-instruct"]), gr.Textbox(), gr.Radio(["chat", "raw"]))
        labels = Labels()
        tab = build(TabContext("en", lang_state, SessionJobs(), labels, picker=picker, page=demo))
        mounted = SimpleNamespace(tab=tab, ui=tab.parts, states=tab.states,
                                  rerender=lambda new_lang, *states: merge_updates(labels.updates(new_lang),
                                                                                   tab.relabel(new_lang, *states)))

        def on_language(new_lang, *states):
            return {lang_state: new_lang, **mounted.rerender(new_lang, *states)}

        outputs = list({id(c): c for c in [lang_state, *labels.components(), *tab.views]}.values())
        lang.change(on_language, [lang] + tab.states, outputs, api_name="multisample_set_language")
    return demo, mounted


@pytest.fixture(scope="module")
def app():
    demo, tab = build_app()
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    note_start("app (one tab)")
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
        # shown to 4 decimals (the CSV below keeps every digit)
        assert row[3] == pytest.approx(c["metrics"]["pass1"], abs=1e-4) and row[4] == pytest.approx(
            c["metrics"]["pass_at_k"][k - 1]["mean"], abs=1e-4)
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
    assert upd[tab.ui.file]["label"] == ms_tr("zh", "file")
    assert upd[tab.ui.table]["label"] == ms_tr("zh", "table")
    assert "温度" in upd[tab.ui.passk].layout.xaxis.title.text
    client.predict("en", api_name="/multisample_set_language")
    en = tab.rerender("en", None)
    assert en[tab.ui.file]["label"] == "Sweep result file"


# --------------------------------------------------------------------------- calibrated temperature
from decoding_lab.experiments import ctd_report  # noqa: E402
from decoding_lab.ui.common.state import Labels  # noqa: E402
from decoding_lab.ui.multisample import ctd as ctd_ui  # noqa: E402
from decoding_lab.ui.multisample import layout, tilt_views  # noqa: E402
from decoding_lab.ui.multisample import tilt as tilt_ui  # noqa: E402
from decoding_lab.ui.multisample.strings import tr_tilt  # noqa: E402

CTD = ctd_report.ctd_path_for(FILES[0]) if FILES else None
needs_ctd = pytest.mark.skipif(CTD is None, reason="no shipped CTD file")


@needs_ctd
def test_ctd_figures_match_the_files():
    ctd, result = ctd_report.load_ctd(CTD), sweep.load_result(FILES[0])
    fit = ctd_ui.fit_figure(result, ctd, "en")
    samples, bins, curve = fit.data
    x, y = ctd_report.calibration_samples(result, ctd["calibration_problems"])
    assert list(samples.x) == x and len(samples.y) == ctd["fit"]["samples"]
    assert all(abs(shown - float(v)) <= 0.04 for shown, v in zip(samples.y, y))     # jitter only
    f = ctd["fit"]
    for cx, cy in zip(curve.x, curve.y):
        assert cy == pytest.approx(1 / (1 + math.exp(-(f["alpha"] + f["beta"] * cx))))
    assert sum(bins.customdata[i][0] for i in range(len(bins.x))) == len(x)
    cmp = ctd_ui.compare_figure(ctd, "en")
    assert [tr.name for tr in cmp.data][0] == f"CTD (T = {ctd['ctd_temperature']:g})"
    assert list(cmp.data[0].y) == [r["ctd"] for r in ctd["rows"]]
    assert list(cmp.data[1].y) == [r["grid"] for r in ctd["rows"]] and list(cmp.data[2].y) == [r["oracle"] for r in ctd["rows"]]
    table = ctd_ui.compare_table(ctd, "en")
    rows = {r["k"]: r for r in ctd["rows"]}
    for row in table.itertuples(index=False):
        r = rows[row[0]]
        assert row[1] == round(r["ctd"], 4) and row[2] == r["grid_T_from_calibration"] and row[3] == round(r["grid"], 4)
        assert row[6] == round(r["ctd_minus_grid"]["mean"], 4)


@needs_ctd
def test_ctd_text_states_the_fit_and_the_verdict():
    ctd = ctd_report.load_ctd(CTD)
    text = ctd_ui.summary_markdown(ctd, "en")
    first = ctd["rows"][0]
    assert f"T_ctd = {ctd['ctd_temperature']:g}" in text and f"{ctd['fit']['samples']} samples" in text
    assert f"{first['ctd']:.3f}" in text and f"{first['grid']:.3f}" in text
    assert ("CTD did worse" in text) == (first["ctd"] < first["grid"])
    assert "T_ctd" in ctd_ui.summary_markdown(ctd, "zh") and "校准" in ctd_ui.summary_markdown(ctd, "zh")


@needs_ctd
def test_live_ctd_section(app):
    client, tab = app
    out = show(client, FILES[0].name)
    ctd = ctd_report.load_ctd(CTD)
    assert f"T_ctd = {ctd['ctd_temperature']:g}" in out["ctd_text"]
    fit = out["ctd_fit"]
    fit = json.loads(fit.get("value", fit)["plot"])  # an update that also sets visibility wraps the value
    assert len(fit["data"]) == 3 and fit["data"][2]["mode"] == "lines"
    table = out["ctd_table"]["value"]
    assert [row[0] for row in table["data"]] == [k for k in ctd_ui.KS if k <= ctd["n"]]
    assert tab.ui.ctd.fit.value is not None                       # drawn when the page opens


# --------------------------------------------------------------------------- verifier-tilted sampling
def tilt(client, **kw):
    args = {**tilt_ui.DEFAULTS, **kw}
    return dict(zip(TILT_OUT, client.predict(*[args[k] for k in tilt_ui.KEYS], api_name="/tilt_run")))


def test_tilt_bad_input_is_one_clear_line_and_the_server_goes_on(app):
    client, _ = app
    # refused by Run's validator before anything runs, by name, one line each
    for kw, words in ((dict(eta=-1), "eta must be >= 0, got -1"), (dict(eta=None), "eta is empty"),
                      (dict(seed=-3), "seed must be >= 0")):
        with pytest.raises(ValidationError) as err:
            tilt(client, **kw)
        fields = str(err.value).strip().splitlines()[1:]   # gradio_client: a header, then one line per field
        assert len(fields) == 1 and words in fields[0]
    with pytest.raises(ValidationError, match="top-m must be <= 8, got 50"):   # a slider's range, checked by name
        tilt(client, top_m=50)
    with pytest.raises(ValidationError, match="problem must be one of 0..80, got '99'"):
        tilt(client, problem=99)
    with pytest.raises(ValidationError, match="seed must be a whole number, got 2.5"):   # never rounded
        tilt(client, seed=2.5)
    assert show(client, FILES[0].name)["passk"]["type"] == "plotly"


def test_tilt_preset_fill_validates():
    import gradio as gr
    with gr.Blocks():
        ui = layout.tilt_section("en", Labels())
    upd = tilt_ui.fill(ui, {"eta": 10.0, "problem": 2})
    assert upd[ui.eta] == 10.0 and upd[ui.problem] == 2
    with pytest.raises(SettingsError, match="unknown tilt setting"):
        tilt_ui.fill(ui, {"etaa": 1})
    with pytest.raises(SettingsError, match="top-m"):
        tilt_ui.fill(ui, {"top_m": 0})


@pytest.mark.real
def test_tilt_eta_zero_matches_plain_sampling(app, smollm):
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.stepper import Stepper
    client, _ = app
    out = tilt(client, eta=0, temperature=0.7, seed=1, max_new_tokens=12)
    assert "η = 0" in out["summary"] and "same 12 tokens" in out["summary"]
    problem = tilt_ui.problems()[2]
    core = Stepper.from_prompt(smollm, problem.prompt, True, SamplingSettings(temperature=0.7, seed=1),
                               max_new_tokens=12)
    core.steps(12)
    shown = out["texts"]
    for tok in core.tokens[:3]:
        assert html.escape(smollm.token_str(tok)) in shown
    rows = out["table"]["value"]["data"]
    assert all(row[3] is None for row in rows)                     # V is not computed at eta = 0


@pytest.mark.real
def test_tilt_fixes_plain_greedy_on_2_plus_5(app):
    client, tab = app
    out = tilt(client)                                             # the defaults: problem 2, eta 10, T 0
    plain, tilted = [html.unescape(re.sub("<[^>]+>", "", card)) for card in out["texts"].split("class='tilt-card'")[1:3]]
    assert "2 + 5 = 8" in plain and "✗ wrong" in plain
    assert "The answer is 7." in tilted and "✓ right" in tilted
    assert "best-V candidate" in out["summary"] and "step 0" in out["summary"]
    table = out["table"]["value"]
    assert "(z + ηV)/T" not in table["headers"]                   # greedy: no division by T
    rows = [dict(zip(table["headers"], row)) for row in table["data"]]
    for row in rows:
        assert row["z + ηV"] == pytest.approx(row["z"] + 10.0 * row["V"], abs=2e-3)
    assert sum(row["picked"] == "★" for row in rows) == len({row["step"] for row in rows})
    fig = json.loads(out["plot"]["plot"])
    assert [tr.get("name") for tr in fig["data"]][1:] == ["z (model)", "z + η·V", "picked"]
    zh = tab.rerender("zh", tab.ui.view.value, None)
    assert zh[tab.ui.tilt.eta]["label"] == tr_tilt("zh", "eta")


def test_lessons_point_at_controls_of_this_tab_and_their_tilt_presets_fill():
    from decoding_lab.lessons import load_lessons
    demo, tab = build_app()
    elem_ids = {b.elem_id for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    lessons = [les for les in load_lessons() if les.preset.get("tab") == "multisample"]
    assert any(les.preset.get("tilt") for les in lessons)
    for les in lessons:
        missing = {item["control"] for item in les.look_at} - elem_ids
        assert not missing, f"lesson {les.number} points at {missing}"
        if les.preset.get("tilt"):
            upd = tab.tab.fill(dict(les.preset), "en")               # the tab's lesson fill
            assert set(upd) <= set(tab.tab.fill_outputs)
            assert upd[tab.ui.tilt.problem] in dict((v, k) for k, v in tilt_ui.problem_choices())


def test_stop_requests_hold_only_running_runs():
    from decoding_lab.ui.common.stops import StopRequests
    stops = StopRequests()
    run = stops.start()
    assert not stops.asked(run)
    stops.request(run)
    stops.request("not-a-running-id")                       # ignored: nothing is kept for it
    assert stops.asked(run) and not stops.asked("not-a-running-id")
    stops.end(run)
    assert not stops.asked(run) and not stops._running and not stops._stop


def _run(tokens: list[int], eta: float, stop: str = "end of text", answer: str | None = "7") -> "object":
    from decoding_lab.experiments.tilt_run import Candidate, TiltConfig, TiltRun, TiltStep
    steps = [TiltStep(i, [Candidate(t, f"<{t}>", 1.0, None if eta == 0 else 1.0, 1.0 + eta, None, 1.0)], t, f"<{t}>",
                      None if eta == 0 else t) for i, t in enumerate(tokens)]
    return TiltRun("What is 2 + 5?", "7", TiltConfig(eta=eta), steps, list(tokens), "", answer, answer == "7", True,
                   stop, 1.0, 0)


def test_summary_words_for_stopped_prefix_and_missing_answer():
    plain, stopped = _run([5, 6, 7], 0.0), _run([5, 6], 10.0, "stopped", None)
    text = tilt_views.summary("en", plain, stopped)
    assert "same first 2 tokens" in text and "part at" not in text and "Stop was pressed" in text
    assert "no answer found" in tilt_views.texts_html("en", plain, stopped, 10.0)
    differ = tilt_views.summary("en", plain, _run([5, 9, 7], 10.0))
    assert "part at **step 1**" in differ and "1 of 1" not in differ and "3 of 3" in differ
    assert "同样的 3 个词元" in tilt_views.summary("zh", plain, _run([5, 6, 7], 0.0))
