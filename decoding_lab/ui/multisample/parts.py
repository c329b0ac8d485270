"""The Many-samples tab's components by name (its ``TabUI``'s ``parts``), filled by ``layout.build``:
the sweep's at the top level, ``.ctd`` and ``.tilt`` for the two sections below it. Kept apart from
``layout`` so that ``ctd``, ``tilt`` and ``tilt_views``, which ``layout`` imports, can name them too."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from decoding_lab.ui.common.controls import CheckedDropdown, CheckedNumber, CheckedSlider


@dataclass(slots=True)
class CtdParts:
    """The calibrated-temperature section (``layout.ctd_section``; ``ctd.updates`` fills it)."""

    text: gr.Markdown
    fit: gr.Plot
    compare: gr.Plot
    table: gr.Dataframe


@dataclass(slots=True)
class TiltParts:
    """The live verifier-tilted section (``layout.tilt_section``; ``tilt`` wires it)."""

    head: gr.Markdown
    problem: CheckedDropdown
    eta: CheckedNumber
    temperature: CheckedSlider
    seed: CheckedNumber
    top_m: CheckedSlider
    rollout_tokens: CheckedSlider
    max_new_tokens: CheckedSlider
    run: gr.Button
    stop: gr.Button
    try_eta0: gr.Button
    try_vg: gr.Button
    texts: gr.HTML
    summary: gr.Markdown
    plot: gr.Plot
    table: gr.Dataframe
    last: gr.State               # {"plain": run JSON, "tilted": run JSON, "eta": η} of the last click
    run_id: gr.State             # the id of this tab's latest run, for Stop
    #: the settings controls above, keyed and ordered like ``tilt.KEYS`` (``tilt_run``'s parameters)
    controls: dict[str, gr.components.Component]


@dataclass(slots=True)
class MultisampleParts:
    """The whole tab: the sweep's controls, figures, table and downloads, then the two sections."""

    intro: gr.Markdown
    file: gr.Dropdown
    trunc: gr.Dropdown
    metric: gr.Dropdown
    k: gr.Dropdown
    status: gr.Markdown
    passk: gr.Plot
    best: gr.Plot
    best_text: gr.Markdown
    heatmap: gr.Plot
    table: gr.Dataframe
    command: gr.Code
    csv: gr.File
    json: gr.File
    view: gr.State               # this visitor's file, k, metric and truncation
    ctd: CtdParts
    tilt: TiltParts
