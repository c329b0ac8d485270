"""Glue for tabs written as separate modules (``lessons_tab``, ``determinism_tab``):
mount them, re-render them on a language switch, and make a lesson's "Load this
experiment" fill the tab it names (model, prompt, settings; the Explorer also runs the
lesson's first steps) and switch to it. Each piece is optional: a missing module leaves
the rest of the app working."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import gradio as gr

from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.sessions import SessionJobs, gated
from decoding_lab.ui.common.state import SETTING_KEYS, guarded, values_from_settings


def _module(name: str) -> Any:
    try:
        return importlib.import_module(f"decoding_lab.ui.{name}")
    except ImportError:
        return None


def mount_determinism(lang: str, lang_state: Any, ex: Any, jobs: SessionJobs | None = None) -> SimpleNamespace | None:
    mod = _module("determinism_tab")
    if mod is None:
        return None
    ui = mod.build(lang)
    mod.wire(ui, lang_state, ex.model, ex.hub, ex.chat, jobs)
    outs = list(mod.rerender(ui, lang, None))
    return SimpleNamespace(ui=ui, states=[ui.last], views=outs,
                           rerender=lambda lang, last: mod.rerender(ui, lang, last))


def mount_multisample(lang: str, lang_state: Any, ex: Any, jobs: SessionJobs | None = None) -> SimpleNamespace | None:
    mod = _module("multisample_tab")
    return None if mod is None else mod.mount(lang, lang_state, ex, jobs)


def mount_grammar(lang: str, lang_state: Any, ex: Any, jobs: SessionJobs | None = None) -> SimpleNamespace | None:
    mod = _module("grammar_tab")
    if mod is None:
        return None
    ui = mod.build(lang)
    mod.wire(ui, lang_state, ex.model, ex.hub, jobs)  # the grammar tab uses the Explorer's model choice
    return SimpleNamespace(ui=ui, states=[ui.session, ui.cmp_last, ui.heal_last], views=list(mod.rerender(ui, lang)),
                           rerender=lambda lang, *states: mod.rerender(ui, lang, *states))


def mount_lessons(lang: str, lang_state: Any) -> SimpleNamespace | None:
    mod = _module("lessons_tab")
    if mod is None:
        return None
    try:
        ui = mod.build(lang)
    except Exception as e:  # a broken lesson file must not take the app down
        gr.Markdown(f"*Lessons unavailable: {e}*")
        return None
    info = mod.wire(ui, lang_state)
    return SimpleNamespace(ui=ui, states=[ui.current, ui.done], views=list(info["outputs"]),
                           rerender=info["rerender"], restore=info.get("restore"))


def _column_values(spec: dict[str, Any]) -> dict[str, Any]:
    """A lesson's compare column -> the Compare tab's column controls."""
    from decoding_lab.settings import SamplingSettings
    s = SamplingSettings.from_json(spec.get("settings", {}))
    order = s.order if isinstance(s.order, str) and s.order in PRESET_ORDERS else "transformers"
    values = values_from_settings(s)
    return {"strategy": spec.get("strategy", "sample"), **{k: values[k] for k in PARAMS}, "order": order,
            "num_beams": spec.get("num_beams", 4), "length_penalty": spec.get("length_penalty", 1.0)}


def wire_lesson_loading(les: SimpleNamespace, lang_state: Any, tabs: Any, ex: Any, ex_events: dict,
                        cmp: Any, beam: Any, det: SimpleNamespace | None, grammar: SimpleNamespace | None = None,
                        jobs: SessionJobs | None = None, multisample: SimpleNamespace | None = None) -> None:
    from decoding_lab.ui import compare, explorer_handlers
    mod = _module("lessons_tab")
    ui = les.ui
    outputs: list[Any] = [tabs, ui.loaded, ex.model, ex.hub, ex.prompt, ex.chat, *ex.settings.values(), ex.share,
                          *ex_events["views_out"]]
    if cmp is not None:
        outputs += [cmp.model, cmp.prompt, cmp.chat, cmp.max_new, cmp.ncols, *[c[k] for c in cmp.cols for k in c]]
    if beam is not None:
        outputs += [beam.model, beam.prompt, beam.chat, beam.beams, beam.alpha, beam.max_new]
    if det is not None:
        outputs += [det.ui.prompt, det.ui.tokens]
    gmod = _module("grammar_tab") if grammar is not None else None
    if grammar is not None:
        outputs += [grammar.ui.kind, grammar.ui.preset, grammar.ui.text, grammar.ui.prompt]
    tilt_ui = getattr(getattr(multisample, "ui", None), "tilt", None)
    if tilt_ui is not None:
        outputs += list(tilt_ui.controls.values())

    @guarded
    def on_load(lang, number):
        lesson = ui.lessons[int(number)]
        p = lesson.preset
        tab = p.get("tab", "explorer")
        model, prompt = p.get("model") or ex.model.value, p.get("prompt", "")
        chat = "chat" if p.get("chat", True) else "raw"
        settings = lesson.settings()
        out: dict[Any, Any] = {ui.loaded: mod.s(lang, "loaded", title=lesson.title.get(lang, lesson.title["en"]),
                                                tab=mod.s(lang, tab))}
        if tab in ("explorer", "determinism", "grammar"):  # these tabs read the Explorer's model choice
            vals = values_from_settings(settings)
            out.update({ex.model: model, ex.hub: "", ex.chat: chat, **{ex.settings[k]: vals[k] for k in SETTING_KEYS}})
        if tab == "explorer":
            out[ex.prompt] = prompt
            session = explorer_handlers.new_session(model, prompt, chat, settings, 20)
            for _ in range(int(p.get("steps", 0))):
                if session.stepper.finished:
                    break
                session.stepper.step()
                explorer_handlers._after_step(session)
            out.update(ex_events["render"](lang, session))
        elif tab == "compare" and cmp is not None:
            columns = [_column_values(c) for c in p.get("compare", [])][: compare.MAX_COLS]
            out.update({cmp.model: model, cmp.prompt: prompt, cmp.chat: chat, cmp.ncols: max(2, len(columns)),
                        cmp.max_new: int(p.get("max_new_tokens", 40))})
            for col, values in zip(cmp.cols, columns):
                out.update({col[k]: values[k] for k in col})
        elif tab == "beam" and beam is not None:
            out.update({beam.model: model, beam.prompt: prompt, beam.chat: chat, beam.beams: int(p.get("num_beams", 4)),
                        beam.alpha: float(p.get("length_penalty", 1.0)), beam.max_new: int(p.get("max_new_tokens", 16))})
        elif tab == "determinism" and det is not None:
            out.update({det.ui.prompt: prompt, det.ui.tokens: int(p.get("max_new_tokens", 40))})
        elif tab == "multisample":
            # the sweep and CTD parts show the shipped results; a lesson may set up the live tilt demo
            if tilt_ui is not None and p.get("tilt"):
                from decoding_lab.ui import tilt_view
                out.update(tilt_view.fill(tilt_ui, dict(p["tilt"])))
        elif tab == "grammar" and grammar is not None:
            # model set above; the lesson's constraint preset and prompt go into the tab
            out.update(gmod.fill(grammar.ui, preset_name=p.get("constraint", "json-person"), prompt=prompt or None))
        else:
            gr.Warning(t(lang, "tab_missing", tab=tab))
            return out
        out[tabs] = gr.Tabs(selected=tab)
        return out

    ui.load.click(gated(on_load, jobs), [lang_state, ui.current], outputs, api_name="lesson_load",
                  concurrency_id="model")
