"""Beam tab, components only: the model and prompt, the search's knobs (beams, α, early
stopping, length), the α values to re-rank with, the tree, the ranking table and the export."""

from __future__ import annotations

import gradio as gr

from decoding_lab.ui.beam.parts import BeamParts
from decoding_lab.ui.beam.strings import tr
from decoding_lab.ui.beam.views import empty_tree
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.sessions import session_state
from decoding_lab.ui.common.tab import TabContext
from decoding_lab.ui.common.controls import CheckedNumber, CheckedRadio, CheckedSlider, model_prompt_row

BEAMS = (1, 8)        # beams a run may keep (the slider and the request check)
MAX_NEW = (2, 64)     # new tokens a run may write


def layout_choices(lang: str) -> list[tuple[str, str]]:
    return [(tr(lang, "by_hypothesis"), "hypothesis"), (tr(lang, "by_slot"), "slot")]


def early_choices(lang: str) -> list[tuple[str, str]]:
    """transformers' ``early_stopping`` values, each with what it does."""
    return [(tr(lang, "early_false"), "false"), (tr(lang, "early_true"), "true"), (tr(lang, "early_never"), "never")]


def build_layout(ctx: TabContext) -> BeamParts:
    """The tab's components, laid out inside the current ``gr.Tab``; nothing is wired here."""
    L, lang = ctx.labels, ctx.lang
    result = session_state()  # the last run: a handlers.BeamRun
    L(gr.Markdown(t(lang, "beam_intro")), "beam_intro", "value")
    model, prompt, chat = model_prompt_row(L, lang, "beam-", "What is the capital of France?")
    with gr.Row():
        beams = L(CheckedSlider(*BEAMS, value=4, step=1, label=t(lang, "num_beams"), elem_id="beam-k"), "num_beams")
        alpha = L(CheckedNumber(1.0, step=0.1, label=t(lang, "length_penalty"), elem_id="beam-alpha"), "length_penalty")
        early = L(CheckedRadio(early_choices(lang), value="false", label=t(lang, "early_stopping"),
                           elem_id="beam-early"), "early_stopping", "choices", early_choices)
        max_new = L(CheckedSlider(*MAX_NEW, value=16, step=1, label=t(lang, "max_new_tokens"), elem_id="beam-max-new"),
                    "max_new_tokens")
        alphas = L(gr.Textbox("-1, 0, 0.5, 1, 2", label=t(lang, "beam_alphas"), elem_id="beam-alphas"),
                   "beam_alphas")
    with gr.Row():
        run = L(gr.Button(t(lang, "beam_run"), variant="primary", elem_id="beam-run"), "beam_run", "value")
        stop = L(gr.Button(t(lang, "stop"), variant="stop", elem_id="beam-stop"), "stop", "value")
    status = gr.Markdown("", elem_id="beam-status")
    by = L(CheckedRadio(layout_choices(lang), value="hypothesis", label=tr(lang, "layout"), info=tr(lang, "layout_info"),
                    elem_id="beam-layout"), "beam.layout", "choices", layout_choices)
    tree = gr.Plot(empty_tree(lang), elem_id="beam-chart", show_label=False)
    note = L(gr.Markdown(t(lang, "beam_note")), "beam_note", "value")
    table = L(gr.Dataframe(label=t(lang, "beam_ranking"), interactive=False, elem_id="beam-table", wrap=True),
              "beam_ranking")
    with gr.Row():
        export = L(gr.Button(t(lang, "export"), elem_id="beam-export"), "export", "value")
        files = L(gr.File(label=t(lang, "export_files"), file_count="multiple", interactive=False,
                          elem_id="beam-files", visible=False), "export_files")
    return BeamParts(result=result, model=model, prompt=prompt, chat=chat, beams=beams, alpha=alpha, early=early,
                     max_new=max_new, alphas=alphas, run=run, stop=stop, status=status, by=by, tree=tree, note=note,
                     table=table, export=export, files=files)
