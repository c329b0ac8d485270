"""The Many-samples tab's events: show a view of a shipped sweep (``multisample_show`` and three private
twins for the other dropdowns), redraw everything in another language, and set up the tilt demo from
a lesson's preset. The sweep part runs no model; the tilt section's events live in ``tilt``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from decoding_lab.errors import UserError
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.errors import guarded, warn
from decoding_lab.ui.common.tab import inputs_of, named
from decoding_lab.ui.multisample import ctd, tilt, tilt_views
from decoding_lab.ui.multisample.data import bad_file, file_names
from decoding_lab.ui.multisample.parts import MultisampleParts
from decoding_lab.ui.multisample.views import content

#: The API parameters of ``multisample_show`` (after the invisible language state).
SHOW_KEYS = ("file", "k", "metric", "trunc")


@dataclass(frozen=True)
class ShowRequest:
    """Which view of which shipped file to show; the file must be one of the shipped ones."""

    lang: str
    file: str
    k: int | None
    metric: str
    truncation: str

    @classmethod
    def from_inputs(cls, values: dict[str, Any]) -> "ShowRequest":
        lang = values.get("lang") or "en"
        file = values.get("file")
        if file not in file_names():
            raise bad_file(file, lang)
        k = values.get("k")
        if k not in (None, ""):
            try:
                k = int(k)
            except (TypeError, ValueError):
                raise SettingsError.coded("not_whole", name="k", got=repr(k)) from None
        return cls(lang, file, k or None, str(values.get("metric") or "pass_at_k"),
                   str(values.get("trunc") or "none"))

    def view(self) -> dict[str, Any]:
        return {"file": self.file, "k": self.k, "metric": self.metric, "truncation": self.truncation}


def sweep_outputs(ui: MultisampleParts) -> list[Any]:
    """What showing a view writes (the order is the API's: status … file, then the CTD section)."""
    return [ui.status, ui.passk, ui.best, ui.best_text, ui.heatmap, ui.table, ui.command, ui.csv, ui.json,
            ui.k, ui.trunc, ui.file, ui.view, *ctd.outputs(ui.ctd)]


def render(ui: MultisampleParts, lang: str, view: dict[str, Any] | None) -> dict:
    """Component -> value/update for ``view`` in ``lang`` (the API's outputs: the table, command and
    downloads come as updates, as they always have)."""
    c = content(lang, view)
    if "passk" not in c:
        return {ui.status: c["status"], ui.view: c["view"]}
    return {**ctd.updates(ui.ctd, c["ctd"], lang), ui.status: c["status"], ui.passk: c["passk"], ui.best: c["best"],
            ui.best_text: c["best_text"], ui.heatmap: c["heatmap"], ui.table: gr.update(value=c["table"]),
            ui.command: gr.update(value=c["command"]), ui.csv: gr.update(value=c["csv"]),
            ui.json: gr.update(value=c["json"]), ui.k: gr.update(choices=c["k_choices"], value=c["k"]),
            ui.trunc: gr.update(choices=c["trunc_choices"], value=c["trunc"]), ui.file: gr.update(value=c["file"]),
            ui.view: c["view"]}


def relabel_views(ui: MultisampleParts) -> list[Any]:
    """Everything ``relabel`` writes (the static labels come back through ``Labels``)."""
    return [ui.status, ui.passk, ui.best, ui.best_text, ui.heatmap, ui.table, ui.command, ui.csv, ui.json,
            *ctd.outputs(ui.ctd), *tilt_views.outputs(ui.tilt)]


def relabel(ui: MultisampleParts, lang: str, view: dict[str, Any] | None = None, tilt_last: dict | None = None) -> dict:
    """Redraw the figures, tables and texts in ``lang`` for the session's ``view`` and last tilted runs."""
    try:
        out = render(ui, lang, view)
    except UserError as e:       # a file that vanished must not break the language switch
        out = {ui.status: str(e)}
    keep = set(relabel_views(ui))
    out = {comp: value for comp, value in out.items() if comp in keep}
    for comp in (ui.passk, ui.best, ui.heatmap, ui.ctd.text, ui.ctd.fit, ui.ctd.compare):
        out.setdefault(comp, None)
    for comp in (ui.status, ui.best_text):
        out.setdefault(comp, "")
    for comp in (ui.table, ui.command, ui.csv, ui.json, ui.ctd.table):
        out.setdefault(comp, gr.update())
    out.update(tilt.relabel(ui.tilt, lang, tilt_last))
    return out


def fill(ui: MultisampleParts, preset: dict[str, Any], lang: str = "en") -> dict:
    """A lesson's preset: the sweep and CTD parts show the shipped results; a ``tilt`` table sets up
    the live tilt demo (raises ``SettingsError`` for an unknown or bad tilt setting)."""
    if preset.get("tilt"):
        return tilt.fill(ui.tilt, dict(preset["tilt"]))
    return {}


def link_restore(ui: MultisampleParts, values: dict[str, Any], lang: str) -> dict:
    """A shared link's sweep view drawn (the dropdowns alone redraw only when a person picks):
    the link's file, k, metric and truncation over the controls' defaults."""
    picked = {k: values[k] for k in ("file", "k", "metric", "trunc") if k in values}
    if not picked:
        return {}
    base = {"file": ui.file.value, "k": ui.k.value, "metric": ui.metric.value, "trunc": ui.trunc.value}
    v = {**base, **picked}
    try:
        req = ShowRequest.from_inputs({"lang": lang, "file": v["file"], "k": v["k"], "metric": v["metric"],
                                       "trunc": v["trunc"]})
    except UserError as e:
        warn(str(e), lang)
        return {}
    return render(ui, req.lang, req.view())


def wire(ui: MultisampleParts, lang_state: Any, jobs: Any = None) -> dict[str, Any]:
    """The dropdowns redraw the sweep; the tilt section wires its own events. Returns the events."""
    @guarded
    def on_show(values: dict[str, Any]) -> dict:
        req = ShowRequest.from_inputs(values)
        return render(ui, req.lang, req.view())

    inputs, names = inputs_of({"lang": lang_state, "file": ui.file, "k": ui.k, "metric": ui.metric,
                               "trunc": ui.trunc})
    handler, outputs = named(on_show, names), sweep_outputs(ui)
    events = {"show": ui.file.input(handler, inputs, outputs, api_name="multisample_show")}
    for key, comp in (("k", ui.k), ("metric", ui.metric), ("truncation", ui.trunc)):
        events[f"show_{key}"] = comp.input(handler, inputs, outputs, api_name=f"multisample_{key}",
                                           api_visibility="private")
    events.update(tilt.wire(ui.tilt, lang_state, jobs))
    return events
