"""The Temperature-0 tab's components by name (its ``TabUI``'s ``parts``), filled by ``layout.layout``."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from decoding_lab.ui.common.controls import CheckedSlider


@dataclass(slots=True)
class DeterminismParts:
    """Every component of the Temperature-0 tab, in page order (its model choice is the Explorer's)."""

    intro: gr.Markdown
    prompt: gr.Textbox
    tokens: CheckedSlider
    variants: gr.CheckboxGroup   # the numerical paths to run
    run: gr.Button
    stop: gr.Button
    run_id: gr.State             # this tab's latest run, for Stop (``common.stops``)
    result: gr.HTML
    plot: gr.Plot
    last: gr.State               # the last run's result (texts, divergences, margins)
