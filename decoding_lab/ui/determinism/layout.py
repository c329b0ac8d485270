"""The Temperature-0 tab's components. Static labels go through ``L`` (``ctx.labels``) under
``determinism.<key>``; the result and the chart are ``relabel``'s."""

from __future__ import annotations

import gradio as gr

from decoding_lab.determinism import LOCAL_VARIANTS, SERVED_VARIANTS
from decoding_lab.llamacpp import available as llamacpp_available
from decoding_lab.ui.common.sessions import session_state
from decoding_lab.ui.common.state import Labels
from decoding_lab.ui.common.controls import CheckedSlider
from decoding_lab.ui.determinism.parts import DeterminismParts
from decoding_lab.ui.determinism.strings import tr

TOKENS = (5, 80)      # new tokens a run may write on each path (the slider and the request check)

DEFAULT_PROMPT = "Write a long story about a dog named Max."


def variant_choices(lang: str) -> list[tuple[str, str]]:
    """(shown name, the core's name) for each path; the paths on a server where one is configured."""
    from decoding_lab.backends.remote import PREFIX
    from decoding_lab.ui.common.controls import model_names
    served = SERVED_VARIANTS if any(name.startswith(PREFIX) for name in model_names()) else ()
    return [(tr(lang, name), name) for name in LOCAL_VARIANTS + served]


def layout(L: Labels, lang: str) -> DeterminismParts:
    intro = L(gr.Markdown(tr(lang, "intro"), elem_id="det-intro"), "determinism.intro", "value")
    with gr.Row():
        prompt = L(gr.Textbox(DEFAULT_PROMPT, label=tr(lang, "prompt"), lines=2, elem_id="det-prompt", scale=3),
                   "determinism.prompt")
        tokens = L(CheckedSlider(*TOKENS, value=40, step=1, label=tr(lang, "tokens"), elem_id="det-tokens", scale=1),
                   "determinism.tokens")
    on = [v for v in LOCAL_VARIANTS if "llama.cpp" not in v or llamacpp_available()]  # that path needs llama-cpp-python
    variants = L(gr.CheckboxGroup(variant_choices(lang), value=on, label=tr(lang, "variants"),
                                  elem_id="det-variants"), "determinism.variants", "choices", variant_choices)
    with gr.Row():
        run = L(gr.Button(tr(lang, "run"), variant="primary", elem_id="determinism-run", scale=4),
                "determinism.run", "value")
        stop = L(gr.Button(tr(lang, "stop"), variant="stop", elem_id="determinism-stop", scale=1),
                 "determinism.stop", "value")
    run_id = gr.State(None)   # this tab's latest run, for Stop (``common.stops``)
    result = gr.HTML("", elem_id="det-result")
    plot = gr.Plot(None, elem_id="det-margins", show_label=False)
    last = session_state()  # the last run's result (texts, divergences, margins)
    return DeterminismParts(intro=intro, prompt=prompt, tokens=tokens, variants=variants, run=run, stop=stop,
                            run_id=run_id, result=result, plot=plot, last=last)
