"""Compare tab: the same model and prompt under 2–4 decoding settings, side by side.

The strategies' streaming forms (``iter_greedy``, ``iter_beam``, ``iter_sample``) are
interleaved one step each, so all columns grow together; Stop cancels the run. Each
output gets its length, mean log-prob, 4-gram repetition rate and distinct-n (from
``decoding_lab.metrics``), and one line on the entropy plot."""

from __future__ import annotations

import html
import time
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pandas as pd

from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common import plots
from decoding_lab.ui.explorer import chat_choices, model_names
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.runtime import gpu
from decoding_lab.ui.common.sessions import SessionJobs, gated, session_state
from decoding_lab.ui.common.controls import param_control
from decoding_lab.ui.common.state import DEFAULTS, Labels, as_number, guarded, values_from_settings, with_params

MAX_COLS = 4
#: Each column's settings: the strategy, every row of the parameter table, the order, the beam knobs.
SETTING_COL_KEYS: tuple[str, ...] = tuple(PARAMS)
COL_KEYS = ("strategy", *SETTING_COL_KEYS, "order", "num_beams", "length_penalty")
#: Only for sampling: greedy and beam search never draw, so these knobs do nothing for them.
SAMPLE_ONLY = ("temperature", "seed", "dynatemp_range", "dynatemp_exponent", "xtc_probability", "xtc_threshold")
PRESET_COLS = [  # what the columns start with: the classic three, plus a hot one
    {"strategy": "greedy", "temperature": 0.0},
    {"strategy": "beam", "num_beams": 4, "length_penalty": 1.0},
    {"strategy": "sample", "temperature": 0.8, "top_p": 0.9},
    {"strategy": "sample", "temperature": 1.3, "top_k": 0},
]
TABLE_KEYS = ("col_setting", "col_len", "col_mean_lp", "col_rep4", "col_distinct1", "col_distinct2")


def strategy_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(lang, "greedy"), "greedy"), (t(lang, "beam"), "beam"), (t(lang, "sample"), "sample")]


def column_settings(v: dict[str, Any]) -> tuple[str, SamplingSettings, dict[str, Any]]:
    """One column's values -> (strategy, settings, strategy kwargs). Raises SettingsError."""
    strategy = v["strategy"]
    if strategy not in ("greedy", "beam", "sample"):
        raise SettingsError(f"strategy must be greedy, beam or sample, got {strategy!r}")
    def num(key: str) -> Any:
        x = as_number(key, v.get(key))  # None -> a clear "is empty" error; whole floats -> int
        return int(x) if key == "num_beams" and isinstance(x, float) and x.is_integer() else x

    values = {k: num(k) for k in SETTING_COL_KEYS if k in v}
    if strategy in ("greedy", "beam"):  # the knobs only sampling uses go back to "off"
        values.update({k: PARAMS[k].default for k in SAMPLE_ONLY})
        values["temperature"] = 0.0
    settings = SamplingSettings(**values, order=v["order"])
    kwargs: dict[str, Any] = {}
    if strategy == "beam":
        kwargs = {"num_beams": num("num_beams"), "length_penalty": float(num("length_penalty"))}
    return strategy, settings, kwargs


def column_label(i: int, strategy: str, s: SamplingSettings, kw: dict[str, Any]) -> str:
    if strategy == "greedy":
        return f"{i + 1}: greedy"
    if strategy == "beam":
        return f"{i + 1}: beam {kw['num_beams']} α={kw['length_penalty']:g}"
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


def output_html(label: str, result: Any, lang: str) -> str:
    if result is None:
        return f"<div class='cmp-out empty'>{html.escape(t(lang, 'cmp_waiting'))}</div>"
    seq = result.best
    m = metrics_row(seq)
    stats = (f"{t(lang, 'col_len')} {m['len']} · {t(lang, 'col_mean_lp')} {_fmt(m['mean_lp'])} · "
             f"{t(lang, 'col_rep4')} {_fmt(m['rep4'])} · distinct-2 {_fmt(m['d2'])}")
    text = html.escape(seq.text).replace("\n", "<br>")
    tail = "" if result.done else " <span class='cmp-cursor'>▌</span>"
    return (f"<div class='cmp-out'><div class='cmp-label'>{html.escape(label)}</div>"
            f"<div class='cmp-text'>{text}{tail}</div><div class='cmp-stats'>{stats}</div></div>")


def build_and_wire(L: Labels, lang_state: Any, ex: Any, lang: str = "en",
                   jobs: SessionJobs | None = None) -> SimpleNamespace:
    ui = SimpleNamespace(cols=[], outs=[], sends=[], groups=[])
    ui.results = session_state()  # [(label, GenerationResult)] of the last run
    L(gr.Markdown(t(lang, "cmp_intro")), "cmp_intro", "value")
    with gr.Row():
        ui.model = L(gr.Dropdown(model_names(), value=model_names()[0], label=t(lang, "model"), elem_id="cmp-model",
                                 scale=1), "model")
        ui.prompt = L(gr.Textbox("Write one sentence about the sea.", label=t(lang, "prompt"), lines=2,
                                 elem_id="cmp-prompt", scale=3), "prompt")
        ui.chat = L(gr.Radio(chat_choices(lang), value="chat", label=t(lang, "chat"), elem_id="cmp-chat", scale=1),
                    "chat", "choices", chat_choices)
    with gr.Row():
        ui.ncols = L(gr.Slider(2, MAX_COLS, value=3, step=1, label=t(lang, "cmp_columns"), elem_id="cmp-ncols"),
                     "cmp_columns")
        ui.max_new = L(gr.Slider(4, 256, value=40, step=1, label=t(lang, "max_new_tokens"), elem_id="cmp-max-new"),
                       "max_new_tokens")
        ui.run = L(gr.Button(t(lang, "cmp_run"), variant="primary", elem_id="cmp-run"), "cmp_run", "value")
        ui.stop = L(gr.Button(t(lang, "stop"), variant="stop", elem_id="cmp-stop"), "stop", "value")
    with gr.Row(equal_height=False):
        for i in range(MAX_COLS):
            p = {**DEFAULTS, "order": "transformers", "num_beams": 4, "length_penalty": 1.0, **PRESET_COLS[i]}
            with gr.Column(visible=i < 3, elem_classes=["cmp-col"], min_width=240) as group:
                c = {"strategy": L(gr.Radio(strategy_choices(lang), value=p["strategy"], label=t(lang, "cmp_strategy"),
                                            elem_id=f"cmp{i}-strategy"), "cmp_strategy", "choices", strategy_choices)}
                c.update(_setting_controls(L, lang, i, p))
                c["order"] = L(gr.Dropdown(list(PRESET_ORDERS), value=p["order"], label=t(lang, "order_preset"),
                                           elem_id=f"cmp{i}-order", min_width=100), "order_preset")
                with gr.Row():
                    c["num_beams"] = L(gr.Number(p["num_beams"], precision=0,
                                                 label=t(lang, "num_beams"), elem_id=f"cmp{i}-beams", min_width=80,
                                                 visible=p["strategy"] == "beam"),
                                       "num_beams")
                    c["length_penalty"] = L(gr.Number(p["length_penalty"], step=0.1, label=t(lang, "length_penalty"),
                                                      elem_id=f"cmp{i}-alpha", min_width=80,
                                                      visible=p["strategy"] == "beam"), "length_penalty")
                out = gr.HTML(output_html("", None, lang), elem_id=f"cmp{i}-output")
                send = L(gr.Button(t(lang, "cmp_send"), size="sm", elem_id=f"cmp{i}-send"), "cmp_send", "value")
            ui.cols.append(c)
            ui.outs.append(out)
            ui.sends.append(send)
            ui.groups.append(group)
    ui.entropy = gr.Plot(plots.empty_figure(lang, "cmp_waiting", 260), elem_id="cmp-entropy-chart", show_label=False)
    ui.table = L(gr.Dataframe(headers=[t(lang, k) for k in TABLE_KEYS], label=t(lang, "cmp_table"), interactive=False,
                              elem_id="cmp-table"), "cmp_table")
    with gr.Row():
        ui.export = L(gr.Button(t(lang, "export"), elem_id="cmp-export"), "export", "value")
        ui.files = L(gr.File(label=t(lang, "export_files"), file_count="multiple", interactive=False,
                             elem_id="cmp-files", visible=False), "export_files")
    _wire(ui, lang_state, ex, jobs)
    ui.states = [ui.results]
    ui.views = [*ui.outs, ui.entropy, ui.table]
    ui.rerender = lambda lang, results: render(ui, lang, results or [], int(len(results or [])))
    return ui


def _setting_controls(L: Labels, lang: str, i: int, p: dict[str, Any]) -> dict[str, Any]:
    """Column ``i``'s settings controls, one per row of the parameter table: the common knobs
    in view, the rest in a closed "more" box. Sampling-only knobs hide for greedy and beam."""
    c: dict[str, Any] = {}
    sampling = p["strategy"] == "sample"
    for key in SETTING_COL_KEYS:
        if PARAMS[key].compare:
            c[key] = param_control(PARAMS[key], L, lang, p[key], prefix=f"cmp{i}-", box=True, info=None, min_width=80,
                                   visible=sampling or key not in SAMPLE_ONLY)
    with gr.Accordion(t(lang, "cmp_more"), open=False) as acc:
        L(acc, "cmp_more")
        for key in SETTING_COL_KEYS:
            if not PARAMS[key].compare:
                c[key] = param_control(PARAMS[key], L, lang, p[key], prefix=f"cmp{i}-", box=True, info=None,
                                       visible=sampling or key not in SAMPLE_ONLY)
    return c


def render(ui: SimpleNamespace, lang: str, results: list, ncols: int) -> dict:
    out: dict[Any, Any] = {}
    for i in range(MAX_COLS):
        label, res = results[i] if i < len(results) else ("", None)
        out[ui.outs[i]] = output_html(label, res, lang) if i < max(ncols, len(results)) else output_html("", None, lang)
    done = [(label, r) for label, r in results if r is not None]
    series = [(label, r.best.entropies) for label, r in done]
    out[ui.entropy] = plots.entropy_traces(series, lang) if series else plots.empty_figure(lang, "cmp_waiting", 260)
    rows = []
    for label, r in done:
        m = metrics_row(r.best)
        rows.append([label, m["len"], _r(m["mean_lp"]), _r(m["rep4"]), _r(m["d1"]), _r(m["d2"])])
    headers = [t(lang, k) for k in TABLE_KEYS]
    out[ui.table] = pd.DataFrame(rows, columns=headers)
    return out


def _r(x: Any) -> Any:
    return None if x is None else round(float(x), 4)


def _wire(ui: SimpleNamespace, lang_state: Any, ex: Any, jobs: SessionJobs | None) -> None:
    col_inputs = [c[k] for c in ui.cols for k in COL_KEYS]
    n_keys = len(COL_KEYS)

    @guarded
    @gpu
    def on_run(lang, results, model, prompt, chat, ncols, max_new, *cols):
        from decoding_lab.models import get_model
        from decoding_lab.strategies import ITER_STRATEGIES
        ncols = int(ncols)
        if not 2 <= ncols <= MAX_COLS:
            raise SettingsError(f"columns must be between 2 and {MAX_COLS}, got {ncols}")
        if max_new is None or not 1 <= float(max_new) <= 512:
            raise SettingsError(f"max new tokens must be between 1 and 512, got {max_new!r}")
        specs = [column_settings(dict(zip(COL_KEYS, cols[i * n_keys:(i + 1) * n_keys]))) for i in range(ncols)]
        lm = get_model(model)
        ids = lm.encode_prompt(prompt or "", chat == "chat")
        gens, labels = [], []
        for i, (strategy, settings, kw) in enumerate(specs):
            gens.append(ITER_STRATEGIES[strategy](lm, ids, settings, max_new_tokens=int(max_new), **kw))
            labels.append(column_label(i, strategy, settings, kw))
        current: list = [(label, None) for label in labels]
        last_full = 0.0
        while any(g is not None for g in gens):
            for i, g in enumerate(gens):  # one step of every running strategy, in turn
                if g is None:
                    continue
                try:
                    current[i] = (labels[i], next(g))
                except StopIteration:
                    gens[i] = None
                    continue
                if current[i][1].done:
                    gens[i] = None
            # texts after every round; the plot and table at most once a second (and at the end)
            now = time.perf_counter()
            if all(g is None for g in gens) or now - last_full >= 1.0:
                last_full = now
                yield {**render(ui, lang, current, ncols), ui.results: list(current)}
            else:
                yield {**{ui.outs[i]: output_html(label, res, lang) for i, (label, res) in enumerate(current)},
                       ui.results: list(current)}

    def on_strategy(strategy):
        """Show only the knobs the chosen strategy uses."""
        return [*(gr.update(visible=strategy == "sample") for _ in SAMPLE_ONLY), gr.update(visible=strategy == "beam"),
                gr.update(visible=strategy == "beam")]

    for i, c in enumerate(ui.cols):
        c["strategy"].change(on_strategy, [c["strategy"]], [*(c[k] for k in SAMPLE_ONLY), c["num_beams"],
                                                             c["length_penalty"]],
                             api_name=f"compare_strategy_{i}", api_visibility="private")

    def on_ncols(n):
        return {g: gr.update(visible=i < int(n)) for i, g in enumerate(ui.groups)}

    @guarded
    def on_export(lang, results):
        from decoding_lab.ui.common.export import write_files
        if not results:
            raise SettingsError("nothing to export yet: run a comparison first")
        payload = {"runs": [{"label": label, **r.to_json()} for label, r in results if r is not None]}
        table = render(ui, "en", results, len(results))[ui.table]
        files = write_files("compare", payload, list(table.columns), table.values.tolist())
        return {ui.files: gr.update(value=files, visible=True)}

    names = ["lang", "results", "model", "prompt", "chat", "ncols", "max_new_tokens",
             *[f"c{i}_{k}" for i in range(MAX_COLS) for k in COL_KEYS]]
    with_params(on_run, names)
    on_run = gated(on_run, jobs)  # one model job per tab at a time
    run_ev = ui.run.click(on_run, [lang_state, ui.results, ui.model, ui.prompt, ui.chat, ui.ncols, ui.max_new,
                                   *col_inputs], [*ui.outs, ui.entropy, ui.table, ui.results], api_name="compare_run",
                          concurrency_id="model", show_progress="minimal")
    ui.stop.click(None, None, None, cancels=[run_ev], api_visibility="private")
    ui.ncols.change(on_ncols, [ui.ncols], ui.groups, api_name="compare_columns")
    ui.export.click(on_export, [lang_state, ui.results], [ui.files], api_name="compare_export")

    for i, send in enumerate(ui.sends):
        def on_send(lang, *vals, i=i):
            strategy, settings, _ = column_settings(dict(zip(COL_KEYS, vals)))
            v = values_from_settings(settings)
            gr.Info(t(lang, "cmp_sent", i=i + 1))
            return {ex.settings[k]: v[k] for k in ex.settings}
        with_params(on_send, ["lang", *COL_KEYS])
        send.click(guarded(on_send), [lang_state, *[ui.cols[i][k] for k in COL_KEYS]], list(ex.settings.values()),
                   api_name=f"compare_send_{i}")
