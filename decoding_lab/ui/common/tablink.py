"""A tab's setup in the share link: ``?compare={"prompt":"…","c2.temperature":1.2}``.

Each tab names the controls a link carries (``TabUI.link``, name -> component). While the
visitor works, a browser-only event (no server call) writes the values that differ from the
tab's defaults into the address bar under the tab's id (``writer_js``); opening the link sets
them back (``restore``). A value from a link is checked like one typed at the control: a number
must be finite and inside the control's range (the parameter table's own check where the name
is one of its rows), a choice must be one the control offers, a text is cut at ``MAX_TEXT``.
A bad value or an unknown name is skipped with a note; the rest is restored.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

import gradio as gr

from decoding_lab.errors import SettingsError
from decoding_lab.params import PARAMS
from decoding_lab.ui.common.validate import check_choice, choice_values

MAX_TEXT = 4000      # a prompt or a grammar in a link
MAX_LINK = 16_000    # the whole JSON of one tab


def defaults(link: Mapping[str, Any]) -> dict[str, Any]:
    """The values the controls were built with: what a link leaves out."""
    return {name: _jsonable(comp.value) for name, comp in link.items()}


def _jsonable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


def writer_js(key: str, link: Mapping[str, Any]) -> str:
    """The event's browser function: its arguments are the controls' values, in ``link``'s order;
    the ones that differ from the defaults go into ``?key=`` (the key goes when none differ)."""
    names = json.dumps(list(link))
    base = json.dumps(defaults(link))
    return (f"(...v) => {{ const names = {names}, base = {base}, out = {{}};"
            " names.forEach(function (n, i) { if (JSON.stringify(v[i]) !== JSON.stringify(base[n])) out[n] = v[i]; });"
            f" if (window.dlSetPage) window.dlSetPage({{{json.dumps(key)}: Object.keys(out).length ?"
            " JSON.stringify(out) : null}); return []; }")


def wire_writer(key: str, link: Mapping[str, Any]) -> None:
    """Every change of a linked control rewrites the tab's part of the address bar."""
    comps = list(link.values())
    gr.on([c.change for c in comps], None, comps, None, js=writer_js(key, link), api_visibility="private")


#: The controls whose value a link can carry (not a note, a chart or a table).
SETTABLE = (gr.Slider, gr.Number, gr.Dropdown, gr.Radio, gr.Checkbox, gr.CheckboxGroup, gr.Textbox, gr.Code)


def settable(comp: Any) -> bool:
    return isinstance(comp, SETTABLE)


def _choices(comp: Any) -> list[Any]:
    return choice_values(getattr(comp, "choices", None))


def _text_of(name: str, value: str) -> str:
    """``value`` if it can travel to a browser: a lone surrogate (``\\ud800`` in a link's JSON)
    cannot be encoded as UTF-8, and echoing it back would break the page's event stream."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SettingsError(f"{name}: character {e.start + 1} is a lone surrogate, not text") from None
    return value


def check_value(name: str, comp: Any, value: Any) -> Any:
    """``value`` for ``comp`` if a person could have set it there, else ``SettingsError``."""
    if isinstance(value, str):
        value = _text_of(name, value)
    if isinstance(comp, (gr.Slider, gr.Number)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SettingsError(f"{name}: {value!r} is not a number")
        key = name.rsplit(".", 1)[-1]
        if key in PARAMS:          # the parameter table's own range and message, under the link's name
            try:
                return PARAMS[key].check(value)
            except SettingsError as e:
                raise SettingsError(f"{name}: {e}") from None
        lo, hi = getattr(comp, "minimum", None), getattr(comp, "maximum", None)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise SettingsError(f"{name}: {value:g} is outside {lo:g} … {hi:g}")
        whole = getattr(comp, "precision", None) == 0 or (
            isinstance(comp, gr.Slider) and float(comp.step).is_integer() and float(comp.minimum).is_integer())
        if whole and not float(value).is_integer():
            raise SettingsError(f"{name}: {value!r} is not a whole number")
        return int(value) if whole else value
    if isinstance(comp, gr.CheckboxGroup):
        if not isinstance(value, list) or any(v not in _choices(comp) for v in value):
            raise SettingsError(f"{name}: {str(value)[:60]!r} is not among the choices")
        return value
    if isinstance(comp, gr.Checkbox):
        if not isinstance(value, bool):
            raise SettingsError(f"{name}: {value!r} is not true or false")
        return value
    if isinstance(comp, (gr.Dropdown, gr.Radio)):
        if getattr(comp, "allow_custom_value", False):
            return value
        return check_choice(name, value, _choices(comp))
    if isinstance(comp, (gr.Textbox, gr.Code)):
        if not isinstance(value, str):
            raise SettingsError(f"{name}: not a text")
        return value[:MAX_TEXT]
    raise SettingsError(f"{name}: this control cannot be set from a link")


def restore(key: str, link: Mapping[str, Any], text: str) -> tuple[dict[str, Any], list[str]]:
    """({name: value}, notes) from the tab's part of a link; a bad part is skipped with a note."""
    if len(text) > MAX_LINK:
        return {}, [f"{key}: the setup in the link is longer than {MAX_LINK} characters; not restored"]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):   # RecursionError: nested deeper than Python's stack
        return {}, [f"{key}: the setup in the link is not readable; not restored"]
    if not isinstance(data, dict):
        return {}, [f"{key}: the setup in the link is not readable; not restored"]
    out: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in data.items():
        comp = link.get(name)
        if comp is not None and isinstance(value, (list, dict)) and not isinstance(comp, gr.CheckboxGroup):
            notes.append(f"{key}: {name}: a list or an object is not a value of this control; kept the default")
            continue
        if comp is None:
            notes.append(f"{key}: {str(name)[:40]!r} is not a setting of this tab; skipped")
            continue
        try:
            out[name] = check_value(name, comp, value)
        except SettingsError as e:
            notes.append(f"{key}: {e}; kept the default")
    return out, notes
