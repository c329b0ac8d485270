"""Beam tab, events: a ``BeamRequest`` built once from the named inputs, beam search streamed
step by step from ``iter_beam`` (Stop cancels it), the hypotheses it found re-ranked under each
α by the core (``rank_hypotheses``), the export, and a lesson's preset filled in."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from decoding_lab.stages import SettingsError
from decoding_lab.strategies.beam import HypothesisRanking, rank_hypotheses
from decoding_lab.ui.beam import views
from decoding_lab.ui.beam.parts import BeamParts
from decoding_lab.ui.beam.plots import ANCESTRY_JS
from decoding_lab.ui.common.errors import guarded
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.tab import TabContext, inputs_of, named
from decoding_lab.ui.common.state import number_input
from decoding_lab.ui.common.controls import model_names
from decoding_lab.ui.common.validate import check_choice, choice_check, number_check, validator, watch
from decoding_lab.ui.beam.layout import BEAMS, MAX_NEW

EARLY_STOPPING: dict[str, bool | str] = {"true": True, "false": False, "never": "never"}  # radio -> iter_beam
MAX_ALPHAS = 8


def parse_alphas(text: str) -> list[float]:
    """``"0, 0.5; 1"`` -> ``[0.0, 0.5, 1.0]``: 1 to 8 numbers between -10 and 10."""
    try:
        alphas = [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise SettingsError(f"α values must be numbers separated by commas, got {text!r}") from None
    if not 1 <= len(alphas) <= MAX_ALPHAS:
        raise SettingsError(f"give between 1 and {MAX_ALPHAS} α values, e.g. 0, 0.5, 1, 2")
    if any(abs(a) > 10 for a in alphas):
        raise SettingsError("α values must lie between -10 and 10")
    return alphas


@dataclass(frozen=True)
class BeamRequest:
    """One beam search, and the α values its hypotheses are re-ranked with."""

    model: str
    prompt: str
    chat: bool
    num_beams: int
    length_penalty: float
    early_stopping: bool | str
    max_new_tokens: int
    alphas: tuple[float, ...]

    @classmethod
    def from_inputs(cls, v: dict[str, Any]) -> "BeamRequest":
        alphas = parse_alphas(v["alphas"])
        if v["length_penalty"] is None or v["num_beams"] is None or v["max_new_tokens"] is None:
            raise SettingsError("beams, α and max new tokens need a value")
        early = EARLY_STOPPING.get(str(v["early_stopping"]).lower())
        if early is None:
            raise SettingsError(f"early stopping must be true, false or never, got {v['early_stopping']!r}")
        check_choice("model", v["model"], model_names())
        check_choice("prompt format", v["chat"], ("chat", "raw"))
        beams = number_input("beams", v["num_beams"], *BEAMS, integer=True)
        max_new = number_input("max new tokens", v["max_new_tokens"], *MAX_NEW, integer=True)
        alpha = number_input("α", v["length_penalty"])
        return cls(v["model"], v["prompt"] or "", v["chat"] == "chat", int(beams), float(alpha), early,
                   int(max_new), tuple(alphas))


@dataclass(frozen=True)
class BeamRun:
    """The tab's state: the last snapshot, its hypotheses ranked under each α, and their texts."""

    result: Any                 # GenerationResult with its beam_tree
    ranking: HypothesisRanking
    texts: tuple[str, ...]      # decoded, EOS left out; one per ranking.hypotheses


def render(p: BeamParts, lang: str, run: BeamRun | None, by: str = "hypothesis") -> dict[Any, Any]:
    """Every view of the tab for ``run``, the tree laid out ``by`` hypothesis or beam slot."""
    if not run:
        return {p.tree: views.empty_tree(lang), p.table: pd.DataFrame(), p.status: ""}
    return {p.tree: views.tree_figure(run.result.beam_tree, lang, by),
            p.table: views.ranking_table(run.ranking, run.texts, lang), p.status: views.status_text(run.result, lang)}


def fill(p: BeamParts, preset: dict[str, Any], lang: str) -> dict[Any, Any]:
    """A lesson's preset in the tab: model, prompt, format, beams, α and length."""
    return {p.model: preset.get("model") or p.model.value, p.prompt: preset.get("prompt", ""),
            p.chat: "chat" if preset.get("chat", True) else "raw", p.beams: int(preset.get("num_beams", 4)),
            p.alpha: float(preset.get("length_penalty", 1.0)), p.max_new: int(preset.get("max_new_tokens", 16))}


def fill_outputs(p: BeamParts) -> list[Any]:
    return [p.model, p.prompt, p.chat, p.beams, p.alpha, p.max_new]


def wire(ctx: TabContext, p: BeamParts) -> dict[str, Any]:
    """Wire the tab's events; returns the ones the page may chain or cancel."""
    # α and the α list, checked beside their controls as they are typed (``common.validate``)
    checks = {"model": choice_check("model", model_names), "chat": choice_check("prompt format", lambda: ("chat", "raw")),
              "num_beams": number_check("beams", *BEAMS, integer=True), "length_penalty": number_check("α"),
              "early_stopping": choice_check("early stopping", lambda: tuple(EARLY_STOPPING)),
              "max_new_tokens": number_check("max new tokens", *MAX_NEW, integer=True),
              "alphas": lambda text, _v: parse_alphas(text), "by": choice_check("layout", lambda: ("hypothesis", "slot"))}
    watch(ctx.lang_state, {"num_beams": p.beams, "length_penalty": p.alpha, "max_new_tokens": p.max_new,
                           "alphas": p.alphas}, checks)

    def on_run(v: dict[str, Any]):
        from decoding_lab.models import get_model
        from decoding_lab.strategies import iter_beam
        lang, req = v["lang"], BeamRequest.from_inputs(v)
        lm = get_model(req.model)
        ids = lm.encode_prompt(req.prompt, req.chat)
        decoded: dict[tuple[int, int], str] = {}  # (step, candidate) -> text: a hypothesis is decoded once
        last_full = 0.0
        for res in iter_beam(lm, ids, None, num_beams=req.num_beams, length_penalty=req.length_penalty,
                             early_stopping=req.early_stopping, max_new_tokens=req.max_new_tokens):
            ranking = rank_hypotheses(res.beam_tree, req.alphas)
            for h in ranking.hypotheses:
                if (h.step, h.candidate) not in decoded:
                    decoded[h.step, h.candidate] = lm.decode(h.token_ids[:-1] if h.eos else h.token_ids)
            run = BeamRun(res, ranking, tuple(decoded[h.step, h.candidate] for h in ranking.hypotheses))
            now = time.perf_counter()
            if res.done or now - last_full >= 1.0:  # redraw the tree at most once a second
                last_full = now
                yield {**render(p, lang, run, v["by"]), p.result: run}
            else:
                yield {p.status: views.status_text(res, lang), p.result: run}

    inputs, names = inputs_of({"lang": ctx.lang_state, "state": p.result, "model": p.model, "prompt": p.prompt,
                               "chat": p.chat, "num_beams": p.beams, "length_penalty": p.alpha,
                               "early_stopping": p.early, "max_new_tokens": p.max_new, "alphas": p.alphas,
                               "by": p.by})
    run_ev = p.run.click(model_event(on_run, names, ctx.jobs),  # one model job per tab at a time
                         inputs, [p.tree, p.table, p.status, p.result], api_name="beam_run", concurrency_id="model",
                         show_progress="minimal", validator=validator(names, checks))
    p.stop.click(None, None, None, cancels=[run_ev], api_visibility="private")

    def on_layout(v: dict[str, Any]) -> Any:
        # the same run, laid out again: no model work
        run = v["state"]
        return views.tree_figure(run.result.beam_tree, v["lang"], v["by"]) if run else views.empty_tree(v["lang"])

    inputs, names = inputs_of({"lang": ctx.lang_state, "state": p.result, "by": p.by})
    p.by.change(named(on_layout, names), inputs, [p.tree], api_name="beam_layout")
    p.tree.change(None, None, None, js=ANCESTRY_JS, api_visibility="private")  # hover lights up a node's path

    @guarded
    def on_export(v: dict[str, Any]) -> dict[Any, Any]:
        from decoding_lab.ui.common.export import write_files
        run: BeamRun | None = v["state"]
        if not run:
            raise SettingsError("nothing to export yet: run beam search first")
        table = views.ranking_table(run.ranking, run.texts, "en")
        payload = {**run.result.to_json(),
                   "alpha_ranking": {"alphas": list(run.ranking.alphas), "rows": table.values.tolist()}}
        files = write_files("beam", payload, list(table.columns), table.values.tolist())
        return {p.files: gr.update(value=files, visible=True)}

    inputs, names = inputs_of({"lang": ctx.lang_state, "state": p.result})
    export_ev = p.export.click(named(on_export, names), inputs, [p.files], api_name="beam_export")
    return {"run": run_ev, "export": export_ev}
