"""The Temperature-0 tab's event (``determinism_run``) and what a lesson loads into the tab.

The run's inputs become one checked ``GreedyRequest``; user errors reach the visitor as one
toast through ``guarded``."""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any, Iterator

import gradio as gr

from decoding_lab.determinism import LOCAL_VARIANTS, SERVED_VARIANTS, VARIANTS, iter_variants, summarize
from decoding_lab.errors import SettingsError
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.stops import StopRequests
from decoding_lab.ui.common.state import number_input, values_from_settings
from decoding_lab.ui.common.validate import check_choice, choice_check, model_check, number_check, validator, watch
from decoding_lab.ui.determinism.layout import TOKENS
from decoding_lab.ui.determinism.parts import DeterminismParts
from decoding_lab.ui.common.tab import ModelPicker, TabContext, inputs_of, picker_fill, preset_settings
from decoding_lab.ui.determinism.strings import tr
from decoding_lab.ui.determinism.views import progress, render


@dataclass(frozen=True)
class GreedyRequest:
    """One run: the model (Hub id or list choice), the prompt and its format, how many tokens,
    and the numerical paths in the core's order."""

    lang: str
    model: str
    chat: str
    prompt: str
    tokens: int
    variants: tuple[str, ...]

    @staticmethod
    def check_prompt(prompt: Any) -> str:
        if not isinstance(prompt, str) or not prompt.strip():
            raise SettingsError.coded("empty_prompt")
        return prompt

    @staticmethod
    def check_variants(chosen: Any) -> list[str]:
        if not isinstance(chosen, (list, tuple)) or len(chosen) < 2:
            raise SettingsError.coded("two_paths")
        return list(chosen)

    @classmethod
    def from_inputs(cls, v: dict[str, Any]) -> "GreedyRequest":
        """``v``: the event's named inputs (``model``, ``hub``, ``chat``, ``prompt``, ``tokens``,
        ``variants``). Raises ``SettingsError``."""
        cls.check_prompt(v.get("prompt"))
        cls.check_variants(v.get("variants"))
        check_choice("prompt format", v.get("chat"), ("chat", "raw"))
        return cls(lang=v.get("lang") or "en", model=(v.get("hub") or "").strip() or (v.get("model") or ""),
                   chat=v.get("chat") or "", prompt=v["prompt"], tokens=int(number_input("new tokens", v.get("tokens"), *TOKENS, integer=True)),
                   variants=tuple(name for name in VARIANTS if name in v["variants"]))


def paths_for(lm: Any, req: GreedyRequest) -> tuple[tuple[str, ...], str]:
    """(the chosen paths of the model's kind, a note): a served model runs the paths on the server, a
    model in this process the local ones. Paths of the other kind are left out, with a note; a
    served model with fewer than two of its paths chosen runs all of them (the checkboxes start on
    the local paths)."""
    if not lm.caps.shared:
        return req.variants, ""   # the core refuses served paths for it, in one line
    chosen = tuple(v for v in req.variants if v in SERVED_VARIANTS)
    if len(chosen) < 2:
        return SERVED_VARIANTS, tr(req.lang, "kind_all", model=lm.name)
    left_out = [tr(req.lang, v) for v in req.variants if v in LOCAL_VARIANTS]
    if not left_out:
        return chosen, ""
    return chosen, tr(req.lang, "kind_skipped", model=lm.name, where=lm.source, paths=", ".join(left_out))


def wire(ctx: TabContext, ui: DeterminismParts) -> dict[str, Any]:
    """Attach the run button; the model choice is the Explorer's (``ctx.picker``)."""
    p = ctx.picker
    stops = StopRequests()
    checks = {"model": model_check, "chat": choice_check("prompt format", lambda: ("chat", "raw")),
              "prompt": lambda text, _v: GreedyRequest.check_prompt(text),
              "tokens": number_check("new tokens", *TOKENS, integer=True),
              "variants": lambda chosen, _v: GreedyRequest.check_variants(chosen)}
    watch(ctx.lang_state, {"tokens": ui.tokens}, checks)

    def on_run(v: dict) -> Iterator[dict]:
        """Streams: which path is running (the paths take seconds to a minute each), then the result."""
        from decoding_lab.models import get_model
        req = GreedyRequest.from_inputs(v)
        lm = get_model(req.model)
        chat_mode = req.chat == "chat" and lm.has_chat_template
        variants, kind_note = paths_for(lm, req)
        req = replace(req, variants=variants)
        runs = []
        run_id = stops.start()   # Stop ends the run after the path that is running
        try:
            yield {ui.result: progress(req.lang, req.variants, 0), ui.run_id: run_id}
            for run in iter_variants(lm, lm.encode_prompt(req.prompt, chat_mode), req.tokens, req.variants):
                runs.append(run)
                if stops.asked(run_id):
                    break
                if len(runs) < len(req.variants):
                    yield {ui.result: progress(req.lang, req.variants, len(runs))}
        finally:
            stops.end(run_id)
        note = tr(req.lang, "stopped", done=len(runs), n=len(req.variants)) if len(runs) < len(req.variants) else ""
        note = " ".join(x for x in (kind_note, note) if x)
        if len(runs) < 2:   # one path has nothing to be compared with
            yield {ui.result: f"<div class='det-run det-progress'>{html.escape(note + ' ' + tr(req.lang, 'too_few'))}</div>"}
            return
        out = summarize(lm, runs)
        html_out, fig = render(req.lang, out)
        if note:
            html_out = f"<div class='det-run det-progress'>{html.escape(note)}</div>" + html_out
        yield {ui.result: html_out, ui.plot: fig, ui.last: out}

    inputs, names = inputs_of({"lang": ctx.lang_state, "model": p.model, "hub": p.hub, "chat": p.chat,
                               "prompt": ui.prompt, "tokens": ui.tokens, "variants": ui.variants})
    run = ui.run.click(model_event(on_run, names, ctx.jobs), inputs, [ui.result, ui.plot, ui.last, ui.run_id],
                       api_name="determinism_run", concurrency_id="model",  # one model job per tab at a time
                       validator=validator(names, checks))
    def on_stop(run_id: str | None, lang: str) -> Any:
        """Stop ends the run after the path that is running; say so at once, not when it ends."""
        if not stops.ask(run_id):
            return gr.update()
        return f"<div class='det-run det-progress'>{html.escape(tr(lang, 'stopping'))}</div>"

    stop = ui.stop.click(on_stop, [ui.run_id, ctx.lang_state], [ui.result], api_visibility="private",
                         concurrency_limit=None, show_progress="hidden")
    return {"run": run, "stop": stop}


def fill(picker: ModelPicker, ui: DeterminismParts, preset: dict[str, Any], lang: str) -> dict:
    """A lesson's ``[preset]``: the Explorer's model choice and settings (this tab reads that
    model), the prompt and the number of new tokens (``max_new_tokens``)."""
    out = picker_fill(picker, preset)
    if picker.settings:
        values = values_from_settings(preset_settings(preset))
        out.update({comp: values[key] for key, comp in picker.settings.items()})
    out.update({ui.prompt: preset.get("prompt", ""), ui.tokens: int(preset.get("max_new_tokens", 40))})
    return out


def fill_outputs(picker: ModelPicker, ui: DeterminismParts) -> list:
    return [picker.model, picker.hub, picker.chat, *picker.settings.values(), ui.prompt, ui.tokens]
