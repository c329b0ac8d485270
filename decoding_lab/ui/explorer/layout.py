"""Explorer tab, layout (components only): model and prompt, one control per stage, the stage
order, the step buttons and the views. Handlers live in ``handlers.py``.

``model_names``, ``chat_choices``, ``order_choices``, ``any_hub_id_allowed`` and
``setting_controls`` are also used by the Compare, Beam and Grammar tabs and the page (through
``decoding_lab.ui.explorer``)."""

from __future__ import annotations

import gradio as gr

from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.common.controls import (CheckedDropdown, CheckedNumber, CheckedRadio,  # noqa: F401
                                             CheckedSlider, any_hub_id_allowed, chat_choices, group_keys, model_names, param_control)
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.sessions import session_state
from decoding_lab.ui.common.state import CUSTOM, DEFAULTS, Labels
from decoding_lab.ui.explorer import engines, onboarding, popover
from decoding_lab.ui.explorer.parts import ExplorerParts
from decoding_lab.ui.explorer.request import MAX_STEP_N
from decoding_lab.ui.explorer.strings import tr
from decoding_lab.ui.explorer.views import TABLE_KEYS


def order_choices(lang: str) -> list[tuple[str, str]]:
    return [(p, p) for p in PRESET_ORDERS] + [(t(lang, "custom"), CUSTOM)]


def setting_controls(L: Labels, lang: str = "en", prefix: str = "",
                     boxes: dict[str, gr.Accordion] | None = None) -> dict[str, gr.components.Component]:
    """One control per row of the core's parameter table plus the order, keyed like ``SETTING_KEYS``
    (``prefix`` keeps element ids unique if the set is ever built twice on a page). ``boxes``, when
    given, receives the folded boxes by parameter group ("penalties", "llama"): gradio draws a
    closed box's controls only once it opens, so a refusal beside one of them would go unseen."""
    c: dict[str, gr.components.Component] = {}

    def pairs(keys: list[str]) -> None:  # two controls a row
        for i in range(0, len(keys), 2):
            with gr.Row():
                for key in keys[i:i + 2]:
                    c[key] = param_control(PARAMS[key], L, lang, prefix=prefix)

    c["temperature"] = param_control(PARAMS["temperature"], L, lang, prefix=prefix)
    pairs(group_keys("truncation"))
    with gr.Accordion(t(lang, "penalties_box"), open=False, elem_id=f"{prefix}penalties-box") as acc:
        L(acc, "penalties_box")
        pairs(group_keys("penalties"))
    with gr.Accordion(t(lang, "llama_box"), open=False, elem_id=f"{prefix}llama-box") as acc_llama:
        L(acc_llama, "llama_box")
        pairs(group_keys("llama"))
    if boxes is not None:
        boxes.update(penalties=acc, llama=acc_llama)
    with gr.Row():
        c["order_preset"] = L(CheckedDropdown(order_choices(lang), value=DEFAULTS["order_preset"],
                                          label=t(lang, "order_preset"), info=t(lang, "order_preset_info"),
                                          elem_id=f"{prefix}order-preset"), "order_preset", "choices", order_choices)
        c["seed"] = param_control(PARAMS["seed"], L, lang, prefix=prefix, info=None)
    c["custom_order"] = L(gr.Textbox(DEFAULTS["custom_order"], label=t(lang, "custom_order"),
                                     info=t(lang, "custom_order_info"), elem_id=f"{prefix}custom-order", lines=2),
                          "custom_order")
    return c


def layout(L: Labels, lang: str = "en") -> ExplorerParts:
    """Lay out the Explorer tab; returns its components by name (the ``TabUI``'s ``parts``)."""
    from decoding_lab.models import DEFAULT_MODEL

    session = session_state()  # the visitor's stepper (and KV cache); expires when idle
    # Did this tab ever have a session? (tiny, never expires): so an expired one can say so.
    started = gr.State(False)
    # On a phone the columns stack; CSS (assets/app.css, "Explorer: phone") puts the main one first.
    with gr.Row(equal_height=False, elem_id="explorer-row"):
        with gr.Column(scale=1, min_width=330, elem_classes=["controls"], elem_id="explorer-controls"):
            with gr.Accordion(t(lang, "model_box"), open=True) as acc:
                L(acc, "model_box")
                model = L(CheckedDropdown(model_names(), value=DEFAULT_MODEL, label=t(lang, "model"), elem_id="model",
                                      allow_custom_value=False), "model")
                # A public deployment lists its allowed Hub models in the dropdown: no free-text box.
                hub = L(gr.Textbox("", label=t(lang, "hub_id"), info=t(lang, "hub_id_info"), elem_id="hub-id",
                                   max_lines=1, visible=any_hub_id_allowed()), "hub_id")
                prompt = L(gr.Textbox("What is the capital of France?", label=t(lang, "prompt"), lines=3,
                                      elem_id="prompt"), "prompt")
                chat = L(CheckedRadio(chat_choices(lang), value="chat", label=t(lang, "chat"), elem_id="chat-mode"),
                         "chat", "choices", chat_choices)
            with gr.Accordion(t(lang, "stages_box"), open=True) as acc2:
                L(acc2, "stages_box")
                boxes: dict[str, gr.Accordion] = {}
                settings = setting_controls(L, lang, boxes=boxes)
                engine_defaults, engine_note = engines.controls(L, lang)
                top_n = L(CheckedSlider(5, 60, value=20, step=1, label=t(lang, "top_n"), elem_id="top-n"), "top_n")
        with gr.Column(scale=3, min_width=480, elem_id="explorer-main"):
            onboard = onboarding.strip(L, lang)   # first visit only (see onboarding.py)
            status = gr.Markdown(t(lang, "no_session"), elem_id="status")
            # a long shared link replays its first steps only; this asks for the rest (views.replay_more_button)
            replay_more = gr.Button("", visible=False, variant="primary", size="sm", elem_id="replay-rest-btn")
            with gr.Row(elem_classes=["step-buttons"]):
                step = L(gr.Button(t(lang, "step"), variant="primary", elem_id="step-btn", scale=2), "step", "value")
                n_steps = L(CheckedNumber(8, step=1, minimum=1, maximum=MAX_STEP_N, label=t(lang, "n_steps"),
                                          elem_id="n-steps", min_width=70, scale=1), "n_steps")
                step_n = L(gr.Button(t(lang, "step_n"), elem_id="step-n-btn", scale=1), "step_n", "value")
                play = L(gr.Button(t(lang, "play"), elem_id="play-btn", scale=1), "play", "value")
                stop = L(gr.Button(t(lang, "stop"), variant="stop", elem_id="stop-btn", scale=1), "stop", "value")
                undo = L(gr.Button(t(lang, "undo"), elem_id="undo-btn", scale=1), "undo", "value")
                reset = L(gr.Button(t(lang, "reset"), elem_id="reset-btn", scale=1), "reset", "value")
            gen_label = L(gr.Markdown(f"**{t(lang, 'generated')}**"), "generated_md", "value")
            gen = gr.HTML("", elem_id="generated-text", js_on_load=popover.POPOVER_JS)
            # Clicking an alternative in a token's popover writes "step:token_id" here and presses the button.
            alt_pick = gr.Textbox("", visible="hidden", elem_id="alt-pick-box")
            alt_force = gr.Button("force-at", visible="hidden", elem_id="alt-pick-btn")
            # The Explorer's three charts start empty (no figure): plotly's script then loads with the
            # first step, not with the page (a page start's script time 2.0-2.1 s instead of 2.6-3.2 s,
            # scripts/page_start_profile.py --pages 5); the line above the buttons says to press Step.
            dist = gr.Plot(None, elem_id="dist-chart", show_label=False)
            log_y = L(gr.Checkbox(False, label=tr(lang, "log_view"), elem_id="log-view"), "explorer.log_view")
            with gr.Row():
                candidates = L(gr.Dropdown([], value=None, label=t(lang, "candidates"), elem_id="candidates",
                                           scale=3), "candidates")
                force = L(gr.Button(t(lang, "force"), elem_id="force-btn", scale=1), "force", "value")
                branches = L(gr.Dropdown([], value=None, label=t(lang, "branches"), elem_id="branches", scale=3),
                             "branches")
                restore = L(gr.Button(t(lang, "restore"), elem_id="restore-btn", scale=1), "restore", "value")
            # Clicking a bar of the chart writes its token id here and presses the hidden button.
            replay = gr.Textbox("", visible="hidden", elem_id="explorer-replay")   # a shared link's steps
            click_token = gr.Textbox("", visible="hidden", elem_id="force-token-box")
            click_force = gr.Button("force-click", visible="hidden", elem_id="force-token-btn")
            with gr.Row():
                funnel = gr.Plot(None, elem_id="funnel-chart", show_label=False)
                entropy = gr.Plot(None, elem_id="entropy-chart", show_label=False)
            # the step on screen redone under each engine's order, side by side (orders.py)
            orders_btn = L(gr.Button(tr(lang, "orders_btn"), size="sm", elem_id="orders-btn"), "explorer.orders_btn",
                           "value")
            orders = gr.Markdown("", elem_id="orders-table")
            with gr.Row():
                with gr.Column(scale=2):
                    numbers_label = L(gr.Markdown(f"**{t(lang, 'numbers')}**"), "numbers_md", "value")
                    numbers = gr.Markdown("", elem_id="numbers")
                with gr.Column(scale=3):
                    table = L(gr.Dataframe(headers=[t(lang, k) for k in TABLE_KEYS], label=t(lang, "history"),
                                           interactive=False, elem_id="step-table", max_height=320), "history")
            with gr.Accordion(t(lang, "export_box"), open=False) as acc3:
                L(acc3, "export_box")
                with gr.Row():
                    export = L(gr.Button(t(lang, "export"), elem_id="export-btn"), "export", "value")
                    files = L(gr.File(label=t(lang, "export_files"), file_count="multiple", interactive=False,
                                      elem_id="export-files", visible=False), "export_files")
                share = L(gr.Textbox("", label=t(lang, "share"), elem_id="share-query", buttons=["copy"],
                                     interactive=False), "share")
    return ExplorerParts(session=session, started=started, model=model, hub=hub, prompt=prompt, chat=chat,
                         settings=settings, boxes=boxes, engine_defaults=engine_defaults, engine_note=engine_note, top_n=top_n,
                         onboard=onboard, status=status, replay_more=replay_more, step=step, n_steps=n_steps, step_n=step_n, play=play,
                         stop=stop, undo=undo, reset=reset, gen_label=gen_label, gen=gen, alt_pick=alt_pick,
                         alt_force=alt_force, dist=dist, log_y=log_y, candidates=candidates, force=force,
                         branches=branches, restore=restore, replay=replay, click_token=click_token,
                         click_force=click_force, funnel=funnel, entropy=entropy, orders_btn=orders_btn, orders=orders,
                         numbers_label=numbers_label,
                         numbers=numbers, table=table, export=export, files=files, share=share)
