"""Per-session state and the small helpers every tab shares.

Only per-visitor things live here, and they live in ``gr.State`` (one per browser tab):
the Explorer's ``Stepper`` (prompt, KV cache, branches, random generator) and the
language. Models come from ``decoding_lab.models.get_model`` (one shared copy per
process); the stepper holds a reference whose ``__deepcopy__`` keeps it shared.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.params import PARAMS, Param, check_number, format_bias, parse_bias_text
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.i18n import t

CUSTOM = "custom"

#: The settings controls, in the order handlers receive them (also the URL keys): one per row of
#: the core's parameter table, then the order (a preset, or a custom list of stage names).
ORDER_KEYS: tuple[str, ...] = ("order_preset", "custom_order")
SETTING_KEYS: tuple[str, ...] = (*PARAMS, *ORDER_KEYS)


def control_value(p: Param, value: Any) -> Any:
    """A core value as its control shows it (the logit bias is text: ``"12:-100, 7:2"``)."""
    return format_bias(value) if p.kind == "bias" else value


DEFAULTS: dict[str, Any] = {**{k: control_value(p, p.default) for k, p in PARAMS.items()},
                            "order_preset": "transformers", "custom_order": ",".join(PRESET_ORDERS["transformers"])}
INT_KEYS = {k for k, p in PARAMS.items() if p.integer}


def as_number(name: str, value: Any) -> Any:
    """Gradio hands numbers as float or None; the core validates ranges and names the value.
    A key of the parameter table also gets its kind: text for the logit bias, None where the
    table allows it (an empty box), whole floats as int for integer knobs."""
    p = PARAMS.get(name)
    if p is not None and p.kind == "bias":
        return parse_bias_text(value if isinstance(value, str) else format_bias(PARAMS[name].check(value or ())))
    if p is not None and p.kind == "bool":
        return value
    if value is None or value == "":
        if p is not None and p.none_ok:
            return None
        raise SettingsError.coded("empty_number", name=p.label if p else name.replace("_", " "))
    value = _from_text(p.label if p else name.replace("_", " "), value)
    if name in INT_KEYS and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def number_input(label: str, value: Any, lo: float | None = None, hi: float | None = None,
                 integer: bool = False) -> int | float:
    """A tab's own number control (not a row of the parameter table), as the API sent it:
    empty, text, NaN, infinity, a boolean, a fraction for a whole number or a value outside
    ``[lo, hi]`` is refused with one message that names ``label``.

        >>> number_input("N", "12", 1, 64, integer=True)
        12
        >>> number_input("N", 1.5, 1, 64, integer=True)
        Traceback (most recent call last):
        ...
        decoding_lab.errors.SettingsError: N must be a whole number, got 1.5
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        raise SettingsError.coded("empty_number", name=label)
    return check_number(label, _from_text(label, value), lo, hi, integer=integer)


def _from_text(label: str, value: Any) -> Any:
    """A number typed as text becomes a float; other text is refused, naming ``label``."""
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        raise SettingsError.coded("not_a_number", name=label, got=repr(value[:40])) from None


def settings_from_values(v: dict[str, Any]) -> SamplingSettings:
    """UI control values -> validated ``SamplingSettings`` (raises ``SettingsError``). A key
    that is missing keeps its "off" default."""
    preset = (v.get("order_preset") or "transformers").strip()
    order = (v.get("custom_order") or "") if preset == CUSTOM else preset
    return SamplingSettings(**{k: as_number(k, v[k]) for k in PARAMS if k in v}, order=order)


def values_from_settings(s: SamplingSettings) -> dict[str, Any]:
    """The inverse, for "send to Explorer", lesson presets and URL restore:
    ``settings_from_values(values_from_settings(s)) == s`` for every field."""
    preset = s.preset or CUSTOM
    return {**{k: control_value(p, getattr(s, k)) for k, p in PARAMS.items()},
            "order_preset": preset, "custom_order": ",".join(s.order_names)}


# ----------------------------------------------------------------------------- labels
class Labels:
    """Remembers which component shows which string, so a language switch can relabel them.

    ``kind`` is the property to update: ``label`` (with ``info`` if a ``<key>_info`` string
    exists), ``value`` (buttons, markdown) or ``choices`` (a callable lang -> choices)."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, str, str, Any]] = []

    def __call__(self, comp: Any, key: str, kind: str = "label", extra: Any = None) -> Any:
        self.items.append((comp, key, kind, extra))
        return comp

    def updates(self, lang: str) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for comp, key, kind, extra in self.items:
            if kind == "label":
                kw = {"label": t(lang, key)}
                info = t(lang, key + "_info")
                if info != key + "_info":
                    kw["info"] = info
                out[comp] = gr.update(**kw)
            elif kind == "choices":
                out[comp] = gr.update(label=t(lang, key), choices=extra(lang))
                info = t(lang, key + "_info")
                if info != key + "_info":
                    out[comp]["info"] = info
            else:
                out[comp] = gr.update(**{kind: t(lang, key)})
        return out

    def components(self) -> list[Any]:
        return [c for c, *_ in self.items]


def merge_updates(base: dict, more: dict) -> dict:
    """``{**base, **more}`` except that two updates of one component are combined
    (a relabel and a new value must both survive)."""
    out = dict(base)
    for comp, value in more.items():
        old = out.get(comp)
        if isinstance(old, dict) and old.get("__type__") == "update":
            new = value if isinstance(value, dict) and value.get("__type__") == "update" else gr.update(value=value)
            out[comp] = {**old, **new}
        else:
            out[comp] = value
    return out
