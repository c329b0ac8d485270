"""Refuse a bad value at the control that holds it, before the event runs.

Gradio runs an event's ``validator`` on its inputs first; each ``gr.validate(False, message)``
it returns is painted beside that input (a red line under the box, the box outlined), and the
event does not run, so no output is marked with an error and nothing the visitor had is lost.
The checks are the ones the handlers themselves apply (the parameter table's ``check``,
``state.number_input``), so a value the page refuses here is refused with the same words by
the handler when it comes from the API, where a validator is answered as a plain refusal.

    >>> v = validator(["lang", "top_p"], settings_checks())
    >>> [r["is_valid"] for r in v("en", 0.9)], v("en", 1.5)[1]["message"]
    ([True, True], 'Invalid input: top-p must be <= 1, got 1.5')
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import gradio as gr

from decoding_lab.errors import SettingsError, UserError
from decoding_lab.params import PARAMS
from decoding_lab.ui.common.errors import localised, one_line
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.state import CUSTOM, as_number, number_input

#: name -> check(value, all values by name); raises a ``UserError`` that names the value
Check = Callable[[Any, Mapping[str, Any]], Any]


def choice_values(choices: Sequence[Any] | None) -> list[Any]:
    """The values of a control's choices (plain values, or gradio's (label, value) pairs)."""
    return [c[1] if isinstance(c, (tuple, list)) else c for c in (choices or [])]


def check_choice(label: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices`` (plain values, or (label, value) pairs), else a
    ``SettingsError`` that names the field and lists what it can be."""
    values = choice_values(choices)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and value in values:
        return value
    raise SettingsError.coded("not_a_choice", name=label, choices=", ".join(map(str, values))[:200],
                              got=repr(str(value)[:40]))


#: The knob a stage's "not in this engine's sampler" refusal is shown under: its first row in the
#: parameter table (``dry_multiplier`` for DRY, ``xtc_probability`` for XTC ...).
STAGE_KNOB = {p.stage: p.key for p in reversed(list(PARAMS.values())) if p.stage}


def param_check(key: str) -> Check:
    """A row of the parameter table, as the handlers read it (``state.as_number``); the first knob
    of a stage that is on but has no place in the chosen order (DRY under transformers' order) is
    refused beside itself with the core's words, not after the event as an error on every view.

    >>> v = validator(["dry_multiplier", "order_preset"], settings_checks())
    >>> [r["is_valid"] for r in v(0.8, "transformers")], v(0.8, "transformers")[0]["message"][:63]
    ([False, True], "Invalid input: dry is not in transformers generate()'s sampler;")
    >>> [r["is_valid"] for r in v(0.8, "llama.cpp")]
    [True, True]
    """
    def check(value: Any, values: Mapping[str, Any]) -> Any:
        out = PARAMS[key].check(as_number(key, value))
        stage = PARAMS[key].stage
        if STAGE_KNOB.get(stage) == key:
            _has_a_place(stage, values)
        return out
    return check


def _has_a_place(stage: str, values: Mapping[str, Any]) -> None:
    """Raise the core's ``SettingsError`` when ``stage`` is on but missing from the order the
    values choose. Only this stage's knobs are set, so the refusal is about this stage; a value
    that is not a number, or an order that does not parse, is left to its own check."""
    from decoding_lab.settings import SamplingSettings
    preset = str(values.get("order_preset") or "transformers").strip()
    order = str(values.get("custom_order") or "") if preset == CUSTOM else preset
    try:
        knobs = {k: as_number(k, values[k]) for k, p in PARAMS.items() if p.stage == stage and k in values}
        SamplingSettings(**knobs, order=order)
    except SettingsError as e:
        if str(e).startswith(f"{stage} is not in") or str(e).startswith(f"stage(s) {stage} are on"):
            raise
    except (UserError, ValueError, TypeError):
        return


def prompt_check(value: Any, values: Mapping[str, Any]) -> Any:
    """A raw prompt (no chat template) must give the model at least one token to continue from:
    an empty one does for a tokenizer that writes a BOS token (Gemma), not for one that does not
    (SmolLM2). Checked on the chosen model when this process already holds it (loading a model is
    the event's work, not a check's); otherwise the event says the same after it starts.

    >>> prompt_check("", {"chat": "chat"}), prompt_check("Hi", {"chat": "raw"})
    ('', 'Hi')
    """
    text = value if isinstance(value, str) else ""
    if values.get("chat") != "raw" or text:
        return value
    from decoding_lab.backends.registry import canonical, loaded_models
    hub = values.get("hub_id", values.get("hub"))
    name = hub.strip() if isinstance(hub, str) and hub.strip() else values.get("model")
    try:
        key = canonical(str(name or ""))
    except UserError:
        return value        # the model's own check names that
    held = {lm.name: lm for lm in loaded_models()}   # a loaded model's name is its canonical key
    if key in held and not held[key].tokenizer("")["input_ids"]:
        raise SettingsError.coded("empty_prompt")
    return value


def _order_check(value: Any, values: Mapping[str, Any]) -> Any:
    if (values.get("order_preset") or "") != CUSTOM:
        return value
    from decoding_lab.settings import SamplingSettings
    return SamplingSettings(order=str(value or "")).order_names


def settings_checks() -> dict[str, Check]:
    """Every decoding setting under its control name, the custom stage order included."""
    return {**{k: param_check(k) for k in PARAMS}, "custom_order": _order_check}


def choice_check(label: str, choices: Callable[[], Sequence[Any]]) -> Check:
    """A dropdown's or radio's value must be one of its choices (``controls.CheckedDropdown``)."""
    def check(value: Any, _values: Mapping[str, Any]) -> Any:
        return check_choice(label, value, choices())
    return check


def model_check(value: Any, values: Mapping[str, Any]) -> Any:
    """The model picker: one of the listed models, unless a Hub id typed beside it wins."""
    from decoding_lab.ui.common.controls import model_names
    hub = values.get("hub_id", values.get("hub"))
    return value if isinstance(hub, str) and hub.strip() else check_choice("model", value, model_names())


def number_check(label: str, lo: float | None = None, hi: float | None = None, integer: bool = False) -> Check:
    """A tab's own number control (``state.number_input``)."""
    return lambda value, _values: number_input(label, value, lo, hi, integer=integer)


def validator(names: Sequence[str], checks: Mapping[str, Check]) -> Callable[..., list[dict]]:
    """The event's validator: its arguments are the event's inputs, in the order of ``names``;
    each input with a check gets its verdict (in the visitor's language, from ``lang``)."""
    names = list(names)

    def validate(*args: Any) -> list[dict]:
        values = dict(zip(names, args))
        lang = values.get("lang") if isinstance(values.get("lang"), str) else "en"
        out = []
        for name in names:
            check = checks.get(name)
            try:
                if check is not None:
                    check(values[name], values)
                out.append(gr.validate(True, ""))
            except UserError as e:
                # gradio shows a refusal as text (never as HTML): what a visitor typed reads as typed
                out.append(gr.validate(False, t(lang, "bad_input", msg=one_line(localised(e, lang)))))
        return out

    return validate


def _checked_nothing(*_values: Any) -> None:
    """The watch event's own work: none (its validator is the point)."""
    return None


def watch(lang_state: Any, controls: Mapping[str, Any], checks: Mapping[str, Check]) -> Any:
    """Check the controls as the visitor changes them: a value out of range is marked beside its
    control at once, not only when a run is asked for (and the mark goes when it is fixed). One
    private event for all of them; each change sends every control's value, so a check that
    reads another control (the custom order reads the preset) sees it."""
    watched = [c for name, c in controls.items() if name in checks]
    if not watched:
        return None
    names = ["lang", *controls]
    return gr.on([c.input for c in watched], _checked_nothing, [lang_state, *controls.values()], None,
                 validator=validator(names, checks), trigger_mode="always_last", show_progress="hidden",
                 api_visibility="private", concurrency_limit=None)
