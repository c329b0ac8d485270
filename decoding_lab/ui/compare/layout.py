"""Compare tab, components only: the model and prompt, 2–4 columns of decoding settings (one
control per row of the core's parameter table, plus the strategy, the stage order and the beam
knobs), each column's output, the entropy plot, the comparison table and the export."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.common import plots
from decoding_lab.ui.common.controls import CheckedDropdown, CheckedRadio, CheckedSlider, param_control
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.sessions import session_state
from decoding_lab.ui.common.state import DEFAULTS, Labels
from decoding_lab.ui.common.tab import TabContext
from decoding_lab.ui.common.controls import model_prompt_row
from decoding_lab.ui.compare.parts import CompareParts
from decoding_lab.ui.compare.strings import tr
from decoding_lab.ui.compare.views import output_html, table_headers

#: New tokens per column at most: the slider's maximum, and the API's (``request.CompareRequest``).
MAX_NEW_TOKENS = 256
MAX_COLS = 4
#: Each column's settings: the strategy, every row of the parameter table, the order, the beam knobs.
SETTING_COL_KEYS: tuple[str, ...] = tuple(PARAMS)
COL_KEYS = ("strategy", *SETTING_COL_KEYS, "order", "num_beams", "length_penalty")
#: Only for sampling. Greedy and beam search never draw, and here they follow transformers'
#: ``generate(do_sample=False)``, which skips every "warper": temperature (and its dynamic
#: range), truncation (top-k, top-p, min-p, typical-p, top-n-sigma), XTC and the seed. What is
#: left for them are the processors that change scores the same way whether or not one draws:
#: penalties, n-gram blocking, DRY, logit bias. These controls hide for greedy and beam columns,
#: and ``ColumnSpec`` sets them back to "off" there, so a hidden value can never act.
SAMPLE_ONLY: tuple[str, ...] = tuple(k for k, p in PARAMS.items()
                                     if p.group == "truncation" or k == "seed"
                                     or p.stage in ("temperature", "xtc", "top-n-sigma"))
PRESET_COLS = [  # what the columns start with: the classic three, plus a hot one
    {"strategy": "greedy", "temperature": 0.0},
    {"strategy": "beam", "num_beams": 4, "length_penalty": 1.0},
    {"strategy": "sample", "temperature": 0.8, "top_p": 0.9},
    {"strategy": "sample", "temperature": 1.3, "top_k": 0},
]


def strategy_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(lang, "greedy"), "greedy"), (t(lang, "beam"), "beam"), (t(lang, "sample"), "sample")]


def build_layout(ctx: TabContext) -> CompareParts:
    """The tab's components, laid out inside the current ``gr.Tab``; nothing is wired here.

    ``cols[i]`` is column i's ``{key of COL_KEYS: control}``; ``notes[i]`` the line that says why a
    greedy or beam column has no sampling controls; ``outs``, ``sends`` and ``groups`` are its
    output box, its "send to the Explorer" button and its column (hidden past ``ncols``)."""
    L, lang = ctx.labels, ctx.lang
    cols: list[dict[str, gr.components.Component]] = []
    notes: list[gr.Markdown] = []
    outs: list[gr.HTML] = []
    sends: list[gr.Button] = []
    groups: list[gr.Column] = []
    results = session_state()  # [(label, GenerationResult)] of the last run
    request = session_state()  # the CompareRequest of the last run: what an export says was run
    L(gr.Markdown(t(lang, "cmp_intro")), "cmp_intro", "value")
    model, prompt, chat = model_prompt_row(L, lang, "cmp-", "Write one sentence about the sea.")
    with gr.Row():
        # min_width: on a phone the row wraps instead of squeezing a label to one character a line
        ncols = L(CheckedSlider(2, MAX_COLS, value=3, step=1, label=t(lang, "cmp_columns"), elem_id="cmp-ncols",
                                min_width=200), "cmp_columns")
        max_new = L(CheckedSlider(4, MAX_NEW_TOKENS, value=40, step=1, label=t(lang, "max_new_tokens"), elem_id="cmp-max-new",
                                  min_width=200), "max_new_tokens")
        run = L(gr.Button(t(lang, "cmp_run"), variant="primary", elem_id="cmp-run"), "cmp_run", "value")
        stop = L(gr.Button(t(lang, "stop"), variant="stop", elem_id="cmp-stop"), "stop", "value")
    with gr.Row(equal_height=False):
        for i in range(MAX_COLS):
            with gr.Column(visible=i < 3, elem_classes=["cmp-col"], min_width=240) as group:
                col = _column(L, lang, i)
                notes.append(col.pop("not_sampling"))  # a note, not a setting: kept out of COL_KEYS
                cols.append(col)
                outs.append(gr.HTML(output_html("", None, lang), elem_id=f"cmp{i}-output"))
                sends.append(L(gr.Button(t(lang, "cmp_send"), size="sm", elem_id=f"cmp{i}-send"), "cmp_send",
                               "value"))
            groups.append(group)
    entropy = gr.Plot(plots.empty_figure(lang, "cmp_waiting", 260), elem_id="cmp-entropy-chart", show_label=False)
    table = L(gr.Dataframe(headers=table_headers(lang), label=t(lang, "cmp_table"), interactive=False,
                           elem_id="cmp-table"), "cmp_table")
    with gr.Row():
        export = L(gr.Button(t(lang, "export"), elem_id="cmp-export"), "export", "value")
        files = L(gr.File(label=t(lang, "export_files"), file_count="multiple", interactive=False,
                          elem_id="cmp-files", visible=False), "export_files")
    return CompareParts(results=results, request=request, model=model, prompt=prompt, chat=chat, ncols=ncols,
                        max_new=max_new, run=run, stop=stop, cols=cols, notes=notes, outs=outs, sends=sends,
                        groups=groups, entropy=entropy, table=table, export=export, files=files)


def _column(L: Labels, lang: str, i: int) -> dict[str, Any]:
    """Column ``i``'s controls, keyed like ``COL_KEYS``, with its preset values."""
    p = {**DEFAULTS, "order": "transformers", "num_beams": 4, "length_penalty": 1.0, **PRESET_COLS[i]}
    c = {"strategy": L(CheckedRadio(strategy_choices(lang), value=p["strategy"], label=t(lang, "cmp_strategy"),
                                elem_id=f"cmp{i}-strategy"), "cmp_strategy", "choices", strategy_choices)}
    c["not_sampling"] = L(gr.Markdown(tr(lang, "not_sampling"), elem_id=f"cmp{i}-not-sampling",
                                      visible=p["strategy"] != "sample"), "compare.not_sampling", "value")
    c.update(_setting_controls(L, lang, i, p))
    c["order"] = L(CheckedDropdown(list(PRESET_ORDERS), value=p["order"], label=t(lang, "order_preset"),
                               elem_id=f"cmp{i}-order", min_width=100), "order_preset")
    with gr.Row():
        c["num_beams"] = L(gr.Number(p["num_beams"], precision=0, label=t(lang, "num_beams"), elem_id=f"cmp{i}-beams",
                                     min_width=80, visible=p["strategy"] == "beam"), "num_beams")
        c["length_penalty"] = L(gr.Number(p["length_penalty"], step=0.1, label=t(lang, "length_penalty"),
                                          elem_id=f"cmp{i}-alpha", min_width=80, visible=p["strategy"] == "beam"),
                                "length_penalty")
    return c


def _setting_controls(L: Labels, lang: str, i: int, p: dict[str, Any]) -> dict[str, Any]:
    """Column ``i``'s settings controls, one per row of the parameter table: the common knobs
    in view, the rest in a closed "more" box. Sampling-only knobs hide for greedy and beam.

    Temperature is a slider with the Explorer's range (the parameter table's ``ui_lo``/``ui_hi``),
    so one range holds everywhere and a setting sent to the Explorer shows there as it is; the
    other knobs are number boxes, which fit a narrow column."""
    c: dict[str, Any] = {}
    sampling = p["strategy"] == "sample"
    for key in SETTING_COL_KEYS:
        if PARAMS[key].compare:
            c[key] = param_control(PARAMS[key], L, lang, p[key], prefix=f"cmp{i}-", box=key != "temperature",
                                   info=None, min_width=80, visible=sampling or key not in SAMPLE_ONLY)
    with gr.Accordion(t(lang, "cmp_more"), open=False) as acc:
        L(acc, "cmp_more")
        for key in SETTING_COL_KEYS:
            if not PARAMS[key].compare:
                c[key] = param_control(PARAMS[key], L, lang, p[key], prefix=f"cmp{i}-", box=True, info=None,
                                       visible=sampling or key not in SAMPLE_ONLY)
    return c
