"""The Compare tab's components by name (its ``TabUI``'s ``parts``), filled by ``layout.build_layout``."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from decoding_lab.ui.common.controls import CheckedDropdown, CheckedRadio, CheckedSlider


@dataclass(slots=True)
class CompareParts:
    """Every component of the Compare tab, in page order. Per column ``i`` (``MAX_COLS`` of them, those
    past ``ncols`` hidden): ``cols[i]``, its controls keyed like ``layout.COL_KEYS``; ``notes[i]``, why
    a greedy or beam column has no sampling controls; ``outs[i]``, its output; ``sends[i]``, its
    "send to the Explorer" button; ``groups[i]``, the column itself."""

    results: gr.State            # [(label, GenerationResult)] of the last run
    request: gr.State            # the CompareRequest of the last run: what an export says was run
    model: CheckedDropdown
    prompt: gr.Textbox
    chat: CheckedRadio
    ncols: CheckedSlider
    max_new: CheckedSlider
    run: gr.Button
    stop: gr.Button
    cols: list[dict[str, gr.components.Component]]
    notes: list[gr.Markdown]
    outs: list[gr.HTML]
    sends: list[gr.Button]
    groups: list[gr.Column]
    entropy: gr.Plot
    table: gr.Dataframe
    export: gr.Button
    files: gr.File
