"""The Grammar tab's components by name (its ``TabUI``'s ``parts``), filled by ``layout.layout``. Kept
apart from ``layout`` so that ``views``, which ``layout`` imports, can name the type too."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from decoding_lab.ui.common.controls import CheckedDropdown, CheckedNumber, CheckedRadio, CheckedSlider


@dataclass(slots=True)
class GrammarParts:
    """Every component of the Grammar tab, in page order, then its four states (its model choice is
    the Explorer's)."""

    intro: gr.Markdown
    # the constraint and the prompt
    kind: CheckedRadio           # "preset" or a constraint kind
    preset: CheckedDropdown
    text: gr.Textbox             # the constraint's source
    prompt: gr.Textbox
    chat: CheckedRadio
    temperature: CheckedSlider
    seed: CheckedNumber
    max_tokens: CheckedSlider
    # "Step through"
    sec_step: gr.Markdown
    step: gr.Button
    step_n: gr.Button
    n_steps: CheckedSlider
    reset: gr.Button
    status: gr.Markdown
    generated: gr.HTML
    trace: gr.Plot
    forbidden: gr.Dataframe
    timing: gr.Markdown
    # "Constrained vs free"
    sec_compare: gr.Markdown
    cmp_intro: gr.Markdown
    cmp_n: CheckedSlider
    cmp_tokens: CheckedSlider
    cmp_run: gr.Button
    cmp_stop: gr.Button
    cmp_run_id: gr.State         # the running comparison's id, for Stop (``common.stops``)
    cmp_summary: gr.Markdown
    cmp_view: gr.HTML
    # "Token healing"
    sec_heal: gr.Markdown
    heal_intro: gr.Markdown
    heal_prefix: gr.Textbox
    heal_run: gr.Button
    heal_summary: gr.Markdown
    heal_without: gr.Dataframe
    heal_with: gr.Dataframe
    # per visitor
    session: gr.State            # the visitor's GrammarSession (expires when idle)
    started: gr.State            # "this tab had a session" (never expires)
    cmp_last: gr.State           # the last ConstrainedVsFree
    heal_last: gr.State          # the last HealingDemo
