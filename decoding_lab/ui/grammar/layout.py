"""The Grammar tab's components: the constraint and prompt, "Step through", "Constrained vs
free" and "Token healing". Static labels go through ``L`` (``ctx.labels``) under their
``grammar.<key>``, so the page's language switch relabels them; what is drawn from a run is
``relabel``'s (``views``)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.grammar import PRESETS, preset_prompt
from decoding_lab.params import PARAMS
from decoding_lab.ui.common.controls import CheckedDropdown, CheckedNumber, CheckedRadio, CheckedSlider
from decoding_lab.ui.common.sessions import session_state
from decoding_lab.ui.common.state import Labels
from decoding_lab.ui.grammar.parts import GrammarParts
from decoding_lab.ui.grammar.session import CMP_N, CMP_TOKENS, DEFAULT_PRESET, N_STEPS, STEP_TOKENS
from decoding_lab.ui.grammar.strings import chat_choices, kind_choices, tr
from decoding_lab.ui.grammar.views import forbidden_table, generated_html, healing_views, preset_source, trace_figure

HEAL_PREFIX = '{"name": "'


def layout(L: Labels, lang: str) -> GrammarParts:
    """Every component of the tab, in page order, as ``parts``."""

    def label(comp, key: str, kind: str = "label", extra=None):
        return L(comp, f"grammar.{key}", kind, extra)

    first = DEFAULT_PRESET
    intro = label(gr.Markdown(tr(lang, "intro"), elem_id="grammar-intro"), "intro", "value")
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            kind = label(CheckedRadio(kind_choices(lang), value="preset", label=tr(lang, "kind"), elem_id="grammar-kind"),
                         "kind", "choices", kind_choices)
            preset = label(CheckedDropdown(list(PRESETS), value=first, label=tr(lang, "preset"),
                                       elem_id="grammar-preset"), "preset")
            text = label(gr.Textbox(preset_source(first), label=tr(lang, "text"), info=tr(lang, "text_info"),
                                    lines=6, max_lines=10, interactive=False, elem_id="grammar-text"), "text")
        with gr.Column(scale=1, min_width=320):
            prompt = label(gr.Textbox(preset_prompt(first), label=tr(lang, "prompt"), lines=3,
                                      elem_id="grammar-prompt"), "prompt")
            chat = label(CheckedRadio(chat_choices(lang), value="chat", label=tr(lang, "chat"), elem_id="grammar-chat"),
                         "chat", "choices", chat_choices)
            with gr.Row():
                temperature = label(CheckedSlider(*PARAMS["temperature"].slider_range, value=0.7, step=0.05,
                                                  label=tr(lang, "temperature"),
                                                  info=tr(lang, "temperature_info"),
                                                  elem_id="grammar-temperature"), "temperature")
                seed = label(CheckedNumber(0, step=1, label=tr(lang, "seed"), elem_id="grammar-seed",
                                           min_width=90), "seed")
            max_tokens = label(CheckedSlider(*STEP_TOKENS, value=96, step=1, label=tr(lang, "max_tokens"),
                                             info=tr(lang, "max_tokens_info"), elem_id="grammar-max-tokens"),
                               "max_tokens")

    sec_step = label(gr.Markdown(tr(lang, "sec_step")), "sec_step", "value")
    with gr.Row(equal_height=True):
        step = label(gr.Button(tr(lang, "step"), variant="primary", elem_id="grammar-step-btn", min_width=90),
                     "step", "value")
        step_n = label(gr.Button(tr(lang, "step_n"), elem_id="grammar-step-n-btn", min_width=90), "step_n", "value")
        n_steps = label(CheckedSlider(*N_STEPS, value=10, step=1, label=tr(lang, "n_steps"),
                                      elem_id="grammar-n-steps", scale=2), "n_steps")
        reset = label(gr.Button(tr(lang, "reset"), elem_id="grammar-reset-btn", min_width=90), "reset", "value")
    status = gr.Markdown("", elem_id="grammar-status")
    generated = label(gr.HTML(generated_html(lang, None), label=tr(lang, "gen_label"), elem_id="grammar-generated"),
                      "gen_label")
    with gr.Row():
        with gr.Column(scale=3, min_width=360):
            trace = gr.Plot(trace_figure(lang, None), show_label=False, elem_id="grammar-trace")
        with gr.Column(scale=2, min_width=280):
            forbidden = label(gr.Dataframe(forbidden_table(lang, None), label=tr(lang, "forbidden_label"),
                                           interactive=False, wrap=True, max_height=300,
                                           elem_id="grammar-forbidden"), "forbidden_label")
            timing = gr.Markdown("", elem_id="grammar-timing")

    sec_compare = label(gr.Markdown(tr(lang, "sec_compare")), "sec_compare", "value")
    cmp_intro = label(gr.Markdown(tr(lang, "cmp_intro")), "cmp_intro", "value")
    with gr.Row(equal_height=True):
        cmp_n = label(CheckedSlider(*CMP_N, value=3, step=1, label=tr(lang, "cmp_n"), elem_id="grammar-cmp-n"),
                      "cmp_n")
        cmp_tokens = label(CheckedSlider(*CMP_TOKENS, value=80, step=1, label=tr(lang, "cmp_tokens"),
                                         elem_id="grammar-cmp-tokens"), "cmp_tokens")
        cmp_run = label(gr.Button(tr(lang, "cmp_run"), variant="primary", elem_id="grammar-cmp-btn"),
                        "cmp_run", "value")
        cmp_stop = label(gr.Button(tr(lang, "cmp_stop"), elem_id="grammar-cmp-stop"), "cmp_stop", "value")
    cmp_run_id = gr.State(None)    # the running comparison's id, for Stop (``common.stops``)
    cmp_summary = gr.Markdown("", elem_id="grammar-compare-summary")
    cmp_view = gr.HTML("", elem_id="grammar-compare")

    sec_heal = label(gr.Markdown(tr(lang, "sec_heal")), "sec_heal", "value")
    heal_intro = label(gr.Markdown(tr(lang, "heal_intro")), "heal_intro", "value")
    with gr.Row(equal_height=True):
        heal_prefix = label(gr.Textbox(HEAL_PREFIX, label=tr(lang, "heal_prefix"), elem_id="grammar-heal-prefix",
                                       scale=2), "heal_prefix")
        heal_run = label(gr.Button(tr(lang, "heal_run"), elem_id="grammar-heal-btn", scale=1), "heal_run", "value")
    heal_summary = gr.Markdown("", elem_id="grammar-heal-summary")
    _, without, with_h = healing_views(lang, None)
    with gr.Row():
        heal_without = label(gr.Dataframe(without, label=tr(lang, "heal_without"), interactive=False,
                                          elem_id="grammar-heal-without"), "heal_without")
        heal_with = label(gr.Dataframe(with_h, label=tr(lang, "heal_with"), interactive=False,
                                       elem_id="grammar-heal-with"), "heal_with")

    session = session_state()   # the visitor's GrammarSession; these three expire when idle
    started = gr.State(False)   # a few bytes that never expire: "this tab had a session" (expiry says so)
    cmp_last = session_state()  # the last ConstrainedVsFree
    heal_last = session_state()  # the last HealingDemo
    return GrammarParts(intro=intro, kind=kind, preset=preset, text=text, prompt=prompt, chat=chat,
                        temperature=temperature, seed=seed, max_tokens=max_tokens, sec_step=sec_step, step=step,
                        step_n=step_n, n_steps=n_steps, reset=reset, status=status, generated=generated, trace=trace,
                        forbidden=forbidden, timing=timing, sec_compare=sec_compare, cmp_intro=cmp_intro, cmp_n=cmp_n,
                        cmp_tokens=cmp_tokens, cmp_run=cmp_run, cmp_stop=cmp_stop, cmp_run_id=cmp_run_id,
                        cmp_summary=cmp_summary, cmp_view=cmp_view, sec_heal=sec_heal, heal_intro=heal_intro,
                        heal_prefix=heal_prefix, heal_run=heal_run, heal_summary=heal_summary,
                        heal_without=heal_without, heal_with=heal_with, session=session, started=started,
                        cmp_last=cmp_last, heal_last=heal_last)


def view_components(ui: GrammarParts) -> list[Any]:
    """Everything ``relabel`` redraws from the tab's states."""
    return [ui.status, ui.generated, ui.trace, ui.forbidden, ui.timing, ui.cmp_summary, ui.cmp_view,
            ui.heal_summary, ui.heal_without, ui.heal_with]
