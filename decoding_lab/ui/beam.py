"""Beam tab: watch beam search keep, prune and finish hypotheses (streamed step by step
from ``iter_beam``), then see how the length penalty α would rank the hypotheses it
found: score = sum log p / length ** α."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pandas as pd

from decoding_lab.stages import SettingsError
from decoding_lab.ui.common import plots
from decoding_lab.ui.explorer import chat_choices, model_names
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.plots_beam import beam_tree_chart
from decoding_lab.ui.common.runtime import gpu
from decoding_lab.ui.common.sessions import SessionJobs, gated, session_state
from decoding_lab.ui.common.state import Labels, guarded, with_params


def ended_candidates(tree: Any) -> list[dict[str, Any]]:
    """Every candidate that ended inside the top ``num_beams`` (finished or rejected), with
    its token path, length and raw score (sum of log-probs): the hypotheses α chooses among."""
    out = []
    for s, step in enumerate(tree.steps):
        for j, c in enumerate(step.candidates):
            if c.status in ("finished", "rejected"):
                tokens = (tree.path(s - 1, c.parent) if s > 0 else []) + [c.token_id]
                out.append({"step": s, "candidate": j, "tokens": tokens, "length": len(tokens), "raw": c.score,
                            "eos": c.eos})
    return out


def parse_alphas(text: str) -> list[float]:
    try:
        alphas = [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise SettingsError(f"α values must be numbers separated by commas, got {text!r}") from None
    if not 1 <= len(alphas) <= 8:
        raise SettingsError("give between 1 and 8 α values, e.g. 0, 0.5, 1, 2")
    if any(abs(a) > 10 for a in alphas):
        raise SettingsError("α values must lie between -10 and 10")
    return alphas


def alpha_ranking(hyps: list[dict[str, Any]], alphas: list[float]) -> tuple[list[list[Any]], dict[float, int]]:
    """Rows [text, length, sum log p, 'score (#rank)' per α] and the winner's row per α.

    The ranking is the record's own arithmetic (raw score / length ** α); note that a
    different α would also have changed which beams the search kept."""
    winners: dict[float, int] = {}
    ranks: dict[float, list[int]] = {}
    for a in alphas:
        scores = [h["raw"] / (h["length"] ** a) for h in hyps]
        order = sorted(range(len(hyps)), key=lambda i: -scores[i])
        ranks[a] = [order.index(i) + 1 for i in range(len(hyps))]
        if order:
            winners[a] = order[0]
    rows = []
    for i, h in enumerate(hyps):
        text = h["text"].replace("\n", "↵") + ("" if h["eos"] else " ✂")  # ✂: cut by max new tokens
        row = [text, h["length"], round(h["raw"], 3)]
        for a in alphas:
            mark = " ★" if winners.get(a) == i else ""
            row.append(f"{h['raw'] / h['length'] ** a:.3f} (#{ranks[a][i]}){mark}")
        rows.append(row)
    return rows, winners


def build_and_wire(L: Labels, lang_state: Any, ex: Any, lang: str = "en",
                   jobs: SessionJobs | None = None) -> SimpleNamespace:
    ui = SimpleNamespace()
    ui.result = session_state()  # {"result": GenerationResult, "hyps": [...], "alphas": [...]}
    L(gr.Markdown(t(lang, "beam_intro")), "beam_intro", "value")
    with gr.Row():
        ui.model = L(gr.Dropdown(model_names(), value=model_names()[0], label=t(lang, "model"), elem_id="beam-model",
                                 scale=1), "model")
        ui.prompt = L(gr.Textbox("What is the capital of France?", label=t(lang, "prompt"), lines=2,
                                 elem_id="beam-prompt", scale=3), "prompt")
        ui.chat = L(gr.Radio(chat_choices(lang), value="chat", label=t(lang, "chat"), elem_id="beam-chat", scale=1),
                    "chat", "choices", chat_choices)
    with gr.Row():
        ui.beams = L(gr.Slider(1, 8, value=4, step=1, label=t(lang, "num_beams"), elem_id="beam-k"), "num_beams")
        ui.alpha = L(gr.Number(1.0, step=0.1, label=t(lang, "length_penalty"), elem_id="beam-alpha"), "length_penalty")
        ui.early = L(gr.Radio([("False", "false"), ("True", "true"), ("never", "never")], value="false",
                              label=t(lang, "early_stopping"), elem_id="beam-early"), "early_stopping")
        ui.max_new = L(gr.Slider(2, 64, value=16, step=1, label=t(lang, "max_new_tokens"), elem_id="beam-max-new"),
                       "max_new_tokens")
        ui.alphas = L(gr.Textbox("-1, 0, 0.5, 1, 2", label=t(lang, "beam_alphas"), elem_id="beam-alphas"),
                      "beam_alphas")
    with gr.Row():
        ui.run = L(gr.Button(t(lang, "beam_run"), variant="primary", elem_id="beam-run"), "beam_run", "value")
        ui.stop = L(gr.Button(t(lang, "stop"), variant="stop", elem_id="beam-stop"), "stop", "value")
    ui.status = gr.Markdown("", elem_id="beam-status")
    ui.tree = gr.Plot(plots.empty_figure(lang, "beam_intro", 300), elem_id="beam-chart", show_label=False)
    ui.note = L(gr.Markdown(t(lang, "beam_note")), "beam_note", "value")
    ui.table = L(gr.Dataframe(label=t(lang, "beam_ranking"), interactive=False, elem_id="beam-table", wrap=True),
                 "beam_ranking")
    with gr.Row():
        ui.export = L(gr.Button(t(lang, "export"), elem_id="beam-export"), "export", "value")
        ui.files = L(gr.File(label=t(lang, "export_files"), file_count="multiple", interactive=False,
                             elem_id="beam-files", visible=False), "export_files")

    def render(lang: str, state: dict | None) -> dict:
        if not state:
            return {ui.tree: plots.empty_figure(lang, "beam_intro", 300), ui.table: pd.DataFrame(), ui.status: ""}
        res, hyps, alphas = state["result"], state["hyps"], state["alphas"]
        tree = res.beam_tree
        rows, _ = alpha_ranking(hyps, alphas)
        headers = [t(lang, "col_hyp"), t(lang, "col_len_tok"), t(lang, "col_sum_lp")] + \
                  [t(lang, "col_alpha", a=a) for a in alphas]
        return {ui.tree: beam_tree_chart(tree, lang), ui.table: pd.DataFrame(rows, columns=headers),
                ui.status: render_status(lang, state)}

    def render_status(lang: str, state: dict) -> str:
        res = state["result"]
        tree = res.beam_tree
        return t(lang, "beam_status", steps=len(tree.steps), hyps=len(tree.hypotheses),
                 reason=t(lang, f"reason_{tree.stop_reason}") if tree.stop_reason else "…", text=res.text.replace("\n", "↵") if res.done else "…")

    @guarded
    @gpu
    def on_run(lang, state, model, prompt, chat, beams, alpha, early, max_new, alphas_text):
        from decoding_lab.models import get_model
        from decoding_lab.strategies import iter_beam
        alphas = parse_alphas(alphas_text)
        if alpha is None or beams is None or max_new is None:
            raise SettingsError("beams, α and max new tokens need a value")
        early_stopping = {"true": True, "false": False, "never": "never"}.get(str(early).lower())
        if early_stopping is None:
            raise SettingsError(f"early stopping must be true, false or never, got {early!r}")
        lm = get_model(model)
        ids = lm.encode_prompt(prompt or "", chat == "chat")
        last_full = 0.0
        for res in iter_beam(lm, ids, None, num_beams=int(beams), length_penalty=float(alpha),
                             early_stopping=early_stopping, max_new_tokens=int(max_new)):
            hyps = ended_candidates(res.beam_tree)
            for h in hyps:
                toks = h["tokens"][:-1] if h["eos"] else h["tokens"]
                h["text"] = lm.decode(toks)
            state = {"result": res, "hyps": hyps, "alphas": alphas}
            now = time.perf_counter()
            if res.done or now - last_full >= 1.0:  # redraw the tree at most once a second
                last_full = now
                yield {**render(lang, state), ui.result: state}
            else:
                yield {ui.status: render_status(lang, state), ui.result: state}

    @guarded
    def on_export(lang, state):
        from decoding_lab.ui.common.export import write_files
        if not state:
            raise SettingsError("nothing to export yet: run beam search first")
        table = render("en", state)[ui.table]
        payload = {**state["result"].to_json(), "alpha_ranking": {"alphas": state["alphas"], "rows": table.values.tolist()}}
        files = write_files("beam", payload, list(table.columns), table.values.tolist())
        return {ui.files: gr.update(value=files, visible=True)}

    with_params(on_run, ["lang", "state", "model", "prompt", "chat", "num_beams", "length_penalty", "early_stopping",
                         "max_new_tokens", "alphas"])
    on_run = gated(on_run, jobs)  # one model job per tab at a time
    run_ev = ui.run.click(on_run, [lang_state, ui.result, ui.model, ui.prompt, ui.chat, ui.beams, ui.alpha, ui.early,
                                   ui.max_new, ui.alphas], [ui.tree, ui.table, ui.status, ui.result],
                          api_name="beam_run", concurrency_id="model", show_progress="minimal")
    ui.stop.click(None, None, None, cancels=[run_ev], api_visibility="private")
    ui.export.click(on_export, [lang_state, ui.result], [ui.files], api_name="beam_export")
    ui.states = [ui.result]
    ui.views = [ui.tree, ui.table, ui.status]
    ui.rerender = render
    return ui
