"""The Explorer tab's components by name (its ``TabUI.parts``), filled by ``layout.layout``, and
the first-visit strip's (``onboarding.strip``). Kept apart from ``layout`` so that ``views``,
``engines`` and ``onboarding``, which ``layout`` imports, can name these types too."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from decoding_lab.ui.common.controls import CheckedDropdown, CheckedNumber, CheckedRadio, CheckedSlider


@dataclass(slots=True)
class OnboardingParts:
    """The first-visit strip: three lines on how to read the screen, "Show me a cut", "Start with
    the lessons", "Got it"."""

    text: gr.Markdown
    show: gr.Button
    hide: gr.Button
    lessons: gr.Button


@dataclass(slots=True)
class ExplorerParts:
    """Every component of the Explorer tab, in page order (the two states first)."""

    session: gr.State            # the visitor's ExplorerSession (stepper, KV cache); expires when idle
    started: gr.State            # did this tab ever have a session (never expires)
    # the model picker
    model: CheckedDropdown
    hub: gr.Textbox
    prompt: gr.Textbox
    chat: CheckedRadio
    # the decoding stages: one control per key of ``SETTING_KEYS``
    settings: dict[str, gr.components.Component]
    boxes: dict[str, gr.Accordion]   # the folded boxes of settings, by parameter group ("penalties", "llama")
    engine_defaults: gr.Dropdown
    engine_note: gr.Markdown
    top_n: CheckedSlider
    # the main column
    onboard: OnboardingParts
    status: gr.Markdown
    replay_more: gr.Button       # "Replay the other N steps" of a long shared link (hidden otherwise)
    step: gr.Button
    n_steps: CheckedNumber
    step_n: gr.Button
    play: gr.Button
    stop: gr.Button
    undo: gr.Button
    reset: gr.Button
    gen_label: gr.Markdown
    gen: gr.HTML
    alt_pick: gr.Textbox         # hidden: a popover's "step:token_id"
    alt_force: gr.Button         # hidden: presses for ``alt_pick``
    dist: gr.Plot
    log_y: gr.Checkbox
    candidates: gr.Dropdown
    force: gr.Button
    branches: gr.Dropdown
    restore: gr.Button
    replay: gr.Textbox           # hidden: a shared link's steps
    click_token: gr.Textbox      # hidden: the token id of a clicked bar
    click_force: gr.Button       # hidden: presses for ``click_token``
    funnel: gr.Plot
    entropy: gr.Plot
    orders_btn: gr.Button        # "This step under each engine order"
    orders: gr.Markdown          # its table (orders.py); cleared by every redraw
    numbers_label: gr.Markdown
    numbers: gr.Markdown
    table: gr.Dataframe
    export: gr.Button
    files: gr.File
    share: gr.Textbox
