"""Controls built from the core's parameter table.

``param_control`` turns one ``decoding_lab.params.Param`` into a gradio component: a
slider when the table gives a range a slider can show, a number box for whole numbers and
unbounded knobs, a checkbox for a yes/no option and a text box for the logit bias. The
Explorer and every Compare column are loops over the table, so a new row appears in both
without another edit, with the same range the core enforces."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.params import PARAMS, Param, params_of
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.state import Labels, control_value


# ----------------------------------------------------------------------------- raw values
# Gradio's own Slider, Number, Dropdown and Radio check a value while they read the inputs,
# before the handler and before an event's validator run: what an API caller sends there ("abc",
# null, NaN, Infinity, 1.5 for a whole number, a choice that is not offered) fails inside gradio
# with a generic error ("Value inf is greater than maximum value 2.0", a bare "400 Bad Request"
# when a validator is attached, or no message at all), or is silently rounded. These hand the
# value on as sent; the event's validator (``common.validate``) and the handler's request check
# it and name the field. ``is_template`` is how gradio's own templates reuse a component's front
# end: the browser shows the ordinary slider, box, list and radio, with their ranges and choices.
class _AsSent:
    """Mixin: the component's value reaches the validator and the handler unchecked."""

    is_template = True

    def get_block_name(self) -> str:
        """The gradio component it reuses in the browser (gradio reads the first base class)."""
        return next(c for c in type(self).__mro__ if c.__module__.startswith("gradio.")).__name__.lower()

    def preprocess(self, payload: Any) -> Any:
        return payload


class CheckedSlider(_AsSent, gr.Slider):
    """``gr.Slider`` whose value reaches the handler unchecked (see above)."""


class CheckedNumber(_AsSent, gr.Number):
    """``gr.Number`` whose value reaches the handler unchecked and unrounded (see above)."""


class CheckedDropdown(_AsSent, gr.Dropdown):
    """``gr.Dropdown`` whose value reaches the validator and the handler unchecked (see above)."""


class CheckedRadio(_AsSent, gr.Radio):
    """``gr.Radio`` whose value reaches the validator and the handler unchecked (see above)."""


def elem_id(p: Param, prefix: str = "") -> str:
    """``top-p`` for a stage's first knob (the stage's own name), ``xtc-threshold`` for the others."""
    first = bool(p.stage) and params_of(p.stage)[0] is p
    return prefix + (p.stage if first else p.key.replace("_", "-"))


def has_info(lang: str, key: str) -> bool:
    return t(lang, key + "_info") != key + "_info"


def param_control(p: Param, L: Labels, lang: str, value: Any = None, prefix: str = "", box: bool = False,
                  **kw: Any) -> Any:
    """One control for ``p``, labelled through ``L`` so a language switch relabels it. ``box``
    asks for a number box even where a slider fits (Compare's narrow columns).

    Number boxes carry no gradio minimum/maximum, and both kinds pass the value on as sent
    (``CheckedSlider``, ``CheckedNumber``): the core's check refuses an out-of-range or
    non-numeric value with a message that names the knob and its bound, where gradio would
    say only "Value 1.5 is greater than maximum value 1.0"."""
    value = control_value(p, p.default) if value is None else value
    common: dict[str, Any] = {"label": t(lang, p.key), "elem_id": elem_id(p, prefix), **kw}
    if has_info(lang, p.key) and kw.get("info", True) is not None:
        common["info"] = t(lang, p.key + "_info")
    common = {k: v for k, v in common.items() if v is not None}
    if p.kind == "bool":
        comp = gr.Checkbox(value=bool(value), **common)
    elif p.kind == "bias":
        comp = gr.Textbox(value or "", max_lines=1, **common)
    elif p.slider_range is not None and not box:
        lo, hi = p.slider_range
        comp = CheckedSlider(lo, hi, value=value, step=p.step, **common)
    else:
        # No precision=0 for whole numbers either: gradio would round 1.5 to 2 before we see it;
        # the core refuses a fraction with "top-k must be a whole number, got 1.5" instead.
        comp = CheckedNumber(value, precision=None, step=p.step if not p.integer else 1, **common)
    return L(comp, p.key)


def group_keys(group: str) -> list[str]:
    return [k for k, p in PARAMS.items() if p.group == group]


# ----------------------------------------------------------------------------- model and prompt
def model_names() -> list[str]:
    """Every name the backends offer a menu (``backends.registry.offered_names``): the bundled models,
    the Hub ids of ``DECODING_LAB_ALLOWED_MODELS``, the bundled files on llama.cpp's kernels
    (``name@llama.cpp``, where llama-cpp-python is installed) and the configured servers (``remote:<name>``)."""
    from decoding_lab.backends import registry
    return registry.offered_names()


def any_hub_id_allowed() -> bool:
    from decoding_lab import limits
    lim = limits.current()
    return not lim.public or "*" in lim.allowed_models


def chat_choices(lang: str) -> list[tuple[str, str]]:
    return [(t(lang, "chat_choice"), "chat"), (t(lang, "raw_choice"), "raw")]


def model_prompt_row(L: Labels, lang: str, prefix: str,
                     prompt: str) -> tuple[CheckedDropdown, gr.Textbox, CheckedRadio]:
    """The model list, the prompt box and the prompt format in one row (Compare and Beam have
    their own; the Explorer's is its picker). Element ids: ``<prefix>model``, ``-prompt``, ``-chat``.
    The model and the format reach the handler unchecked: its request checks them by name."""
    with gr.Row():
        model = L(CheckedDropdown(model_names(), value=model_names()[0], label=t(lang, "model"), elem_id=f"{prefix}model",
                                  scale=1, min_width=240), "model")   # a model name fits beside the list's arrow
        box = L(gr.Textbox(prompt, label=t(lang, "prompt"), lines=2, elem_id=f"{prefix}prompt", scale=3), "prompt")
        chat = L(CheckedRadio(chat_choices(lang), value="chat", label=t(lang, "chat"), elem_id=f"{prefix}chat", scale=1),
                 "chat", "choices", chat_choices)
    return model, box, chat

