"""The Many-samples tab's components: the sweep section (already showing the first shipped file, no
click needed), the calibrated-temperature section and the live tilt section. Every static label is
registered with the page's ``Labels`` under its namespaced key, so the language switch relabels it."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.ui.common.controls import CheckedDropdown, CheckedNumber, CheckedSlider

from decoding_lab.experiments import tilt_run as TR
from decoding_lab.ui.common.sessions import session_state
from decoding_lab.ui.common.state import Labels
from decoding_lab.ui.multisample import ctd, tilt, tilt_views
from decoding_lab.ui.multisample.data import KS, file_names
from decoding_lab.ui.multisample.parts import CtdParts, MultisampleParts, TiltParts
from decoding_lab.ui.multisample.strings import tr, tr_ctd, tr_tilt
from decoding_lab.ui.multisample.views import metric_choices


def build(lang: str, L: Labels, c: dict[str, Any]) -> MultisampleParts:
    """The whole tab: the sweep's controls, figures, table and downloads at the top level, filled from
    ``c`` (``views.content``), then ``.ctd`` and ``.tilt`` for the sections below it."""
    intro = L(gr.Markdown(tr(lang, "intro"), elem_id="ms-intro"), "multisample.intro", "value")
    with gr.Row():
        file = L(gr.Dropdown(file_names(), value=c.get("file"), label=tr(lang, "file"), elem_id="ms-file",
                             scale=2), "multisample.file")
        trunc = L(gr.Dropdown(c.get("trunc_choices", ["none"]), value=c.get("trunc", "none"),
                              label=tr(lang, "trunc"), elem_id="ms-trunc", scale=1), "multisample.trunc")
        metric = L(gr.Dropdown(metric_choices(lang), value="pass_at_k", label=tr(lang, "metric"),
                               elem_id="ms-metric", scale=1), "multisample.metric", "choices", metric_choices)
        k = L(gr.Dropdown(c.get("k_choices", list(KS)), value=c.get("k", 8), label=tr(lang, "k"), elem_id="ms-k",
                          scale=1), "multisample.k")
    status = gr.Markdown(c.get("status", ""), label="status", elem_id="ms-status")
    passk = gr.Plot(c.get("passk"), label="pass@k vs T", elem_id="ms-passk-vs-T", show_label=False)
    with gr.Row():
        with gr.Column():
            best = gr.Plot(c.get("best"), label="best T", elem_id="ms-best-T", show_label=False)
            best_text = gr.Markdown(c.get("best_text", ""), label="best T text", elem_id="ms-best-T-text")
        heatmap = gr.Plot(c.get("heatmap"), label="heatmap", elem_id="ms-heatmap", show_label=False)
    table = L(gr.Dataframe(c.get("table"), label=tr(lang, "table"), elem_id="ms-table", interactive=False),
              "multisample.table")
    command = L(gr.Code(c.get("command", ""), label=tr(lang, "command"), language="shell", elem_id="ms-command",
                        interactive=False), "multisample.command")
    with gr.Row():
        csv = L(gr.File(c.get("csv"), label=tr(lang, "csv"), elem_id="ms-csv", interactive=False),
                "multisample.csv")
        json = L(gr.File(c.get("json"), label=tr(lang, "json"), elem_id="ms-json", interactive=False),
                 "multisample.json")
    view = gr.State(c["view"])     # this visitor's file, k, metric and truncation
    ctd_parts = ctd_section(lang, L, c.get("ctd") or ctd.content(None, None, lang))
    tilt_parts = tilt_section(lang, L)
    return MultisampleParts(intro=intro, file=file, trunc=trunc, metric=metric, k=k, status=status, passk=passk,
                            best=best, best_text=best_text, heatmap=heatmap, table=table, command=command, csv=csv,
                            json=json, view=view, ctd=ctd_parts, tilt=tilt_parts)


def ctd_section(lang: str, L: Labels, c: dict[str, Any]) -> CtdParts:
    """The calibrated-temperature result fitted on the sweep (``c`` from ``ctd.content``)."""
    with gr.Column(elem_id="ms-ctd"):
        text = gr.Markdown(c["text"], elem_id="ms-ctd-text")
        with gr.Row():
            fit = gr.Plot(c["fit"], elem_id="ms-ctd-fit", show_label=False, visible=c["fit"] is not None)
            compare = gr.Plot(c["compare"], elem_id="ms-ctd-compare", show_label=False,
                              visible=c["compare"] is not None)
        table = L(gr.Dataframe(c["table"], label=tr_ctd(lang, "table"), elem_id="ms-ctd-table",
                               interactive=False, visible=c["table"] is not None), "ctd.table")
    return CtdParts(text=text, fit=fit, compare=compare, table=table)


def tilt_section(lang: str, L: Labels) -> TiltParts:
    """The live tilt demo: problem and settings, Run / Stop / two "try" buttons, texts, chart, table."""
    D = tilt.DEFAULTS

    def label(comp: Any, key: str, kind: str = "label") -> Any:
        return L(comp, f"tilt.{key}", kind)

    with gr.Column(elem_id="ms-tilt"):
        head = label(gr.Markdown(tr_tilt(lang, "head"), elem_id="ms-tilt-intro", latex_delimiters=[]), "head", "value")
        with gr.Row():
            problem = label(CheckedDropdown(tilt.problem_choices(), value=D["problem"], label=tr_tilt(lang, "problem"),
                                            elem_id="ms-tilt-problem", scale=2), "problem")
            eta = label(CheckedNumber(D["eta"], label=tr_tilt(lang, "eta"), elem_id="ms-tilt-eta", scale=1), "eta")
            temperature = label(CheckedSlider(0, TR.MAX_T, value=D["temperature"], step=0.05,
                                          label=tr_tilt(lang, "temperature"), elem_id="ms-tilt-T", scale=2),
                                "temperature")
            seed = label(CheckedNumber(D["seed"], step=1, label=tr_tilt(lang, "seed"), elem_id="ms-tilt-seed",
                                       scale=1), "seed")
        with gr.Row():
            top_m = label(CheckedSlider(1, TR.MAX_TOP_M, value=D["top_m"], step=1, label=tr_tilt(lang, "top_m"),
                                    elem_id="ms-tilt-top-m"), "top_m")
            rollout_tokens = label(CheckedSlider(1, TR.MAX_ROLLOUT, value=D["rollout_tokens"], step=1,
                                             label=tr_tilt(lang, "rollout_tokens"), elem_id="ms-tilt-rollout"),
                                   "rollout_tokens")
            max_new_tokens = label(CheckedSlider(1, TR.MAX_NEW_TOKENS, value=D["max_new_tokens"], step=1,
                                             label=tr_tilt(lang, "max_new_tokens"), elem_id="ms-tilt-max-new"),
                                   "max_new_tokens")
        with gr.Row():
            run = label(gr.Button(tr_tilt(lang, "run"), variant="primary", elem_id="ms-tilt-run"), "run", "value")
            stop = label(gr.Button(tr_tilt(lang, "stop"), variant="stop", elem_id="ms-tilt-stop"), "stop", "value")
            try_eta0 = label(gr.Button(tr_tilt(lang, "try_eta0"), size="sm", elem_id="ms-tilt-try-eta0"),
                             "try_eta0", "value")
            try_vg = label(gr.Button(tr_tilt(lang, "try_vg"), size="sm", elem_id="ms-tilt-try-vg"), "try_vg", "value")
        texts = gr.HTML("", elem_id="ms-tilt-texts")
        summary = gr.Markdown("", elem_id="ms-tilt-summary")
        plot = gr.Plot(tilt_views.empty_figure(lang), elem_id="ms-tilt-plot", show_label=False)
        table = label(gr.Dataframe(tilt_views.steps_table(lang, None), label=tr_tilt(lang, "table"),
                                   elem_id="ms-tilt-table", interactive=False, wrap=True, max_height=420), "table")
    last = session_state()          # {"plain": run JSON, "tilted": run JSON, "eta": η} of the last click
    run_id = gr.State(None)         # the id of this tab's latest run, for Stop
    settings = {"problem": problem, "eta": eta, "temperature": temperature, "seed": seed, "top_m": top_m,
                "rollout_tokens": rollout_tokens, "max_new_tokens": max_new_tokens}
    controls = {k: settings[k] for k in tilt.KEYS}   # in the API's order
    return TiltParts(head=head, problem=problem, eta=eta, temperature=temperature, seed=seed, top_m=top_m,
                     rollout_tokens=rollout_tokens, max_new_tokens=max_new_tokens, run=run, stop=stop,
                     try_eta0=try_eta0, try_vg=try_vg, texts=texts, summary=summary, plot=plot, table=table, last=last,
                     run_id=run_id, controls=controls)

