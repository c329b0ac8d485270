"""The Beam tab's components by name (its ``TabUI``'s ``parts``), filled by ``layout.build_layout``."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from decoding_lab.ui.common.controls import CheckedDropdown, CheckedNumber, CheckedRadio, CheckedSlider


@dataclass(slots=True)
class BeamParts:
    """Every component of the Beam tab, in page order (the run's state first)."""

    result: gr.State             # the last run: a handlers.BeamRun
    model: CheckedDropdown
    prompt: gr.Textbox
    chat: CheckedRadio
    beams: CheckedSlider
    alpha: CheckedNumber         # the search's length penalty
    early: CheckedRadio          # early stopping: "false", "true" or "never"
    max_new: CheckedSlider
    alphas: gr.Textbox           # the α values the hypotheses are re-ranked with
    run: gr.Button
    stop: gr.Button
    status: gr.Markdown
    by: CheckedRadio             # the tree laid out by "hypothesis" or by beam "slot"
    tree: gr.Plot
    note: gr.Markdown
    table: gr.Dataframe
    export: gr.Button
    files: gr.File
