"""The one protocol every tab follows.

A tab is a package under ``decoding_lab/ui/`` whose ``build(ctx)`` lays out its components
inside the current ``gr.Tab``, wires its events and returns a ``TabUI``:

* ``states``: its per-visitor ``gr.State`` objects, handed to ``relabel`` on a language switch;
* ``views``: every component ``relabel`` writes;
* ``relabel(lang, *states) -> {component: value}``: redraw in another language (labels come
  back through ``ctx.labels``; this is for what is drawn from state: figures, tables, texts);
* ``fill(preset, lang) -> {component: value}``: a lesson's preset set into the tab (model,
  prompt, settings …), and ``fill_outputs``, every component ``fill`` may write;
* ``events``: the events other parts of the page may chain or cancel;
* ``link``: the controls a share link carries (``common.tablink``).

Lesson loading is then "find the tab by name, call its ``fill``"; the page knows nothing of
any tab's insides.

Handlers take one dict of named inputs (``named``), never a positional tuple sliced by
position, so reordering a layout cannot bind a value to the wrong parameter, and the API
page shows the names.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from decoding_lab.ui.common.sessions import SessionJobs
from decoding_lab.ui.common.state import Labels


@dataclass
class ModelPicker:
    """The Explorer's model, Hub id and prompt-format components, which several tabs read, and
    its prompt and settings controls, which "send to Explorer" writes."""

    model: Any
    hub: Any
    chat: Any
    prompt: Any = None
    settings: dict[str, Any] = field(default_factory=dict)   # key of SETTING_KEYS -> control


@dataclass
class TabContext:
    lang: str                 # the language the page is first built in
    lang_state: Any           # gr.State with the visitor's language
    jobs: SessionJobs         # at most N model jobs per browser tab
    labels: Labels            # static labels, relabelled on a language switch
    picker: ModelPicker | None = None   # set once the Explorer has built it
    page: Any = None          # the gr.Blocks, for page-load events (a tab restoring browser state)
    tabs: Any = None          # the page's gr.Tabs, for an event that opens another tab


@dataclass
class TabUI:
    name: str
    states: list[Any] = field(default_factory=list)
    views: list[Any] = field(default_factory=list)
    relabel: Callable[..., dict] | None = None
    fill: Callable[[dict, str], dict] | None = None
    fill_outputs: list[Any] = field(default_factory=list)
    events: dict[str, Any] = field(default_factory=dict)
    parts: Any = None          # the tab's own components, for tests and for the page
    # the controls a share link carries, by name (``common.tablink``); ``link_restore(values, lang)``
    # adds what setting them alone does not redraw (a chart, a control's interactivity), into
    # ``link_restore_outputs``
    link: dict[str, Any] = field(default_factory=dict)
    link_restore: Callable[[dict[str, Any], str], dict] | None = None
    link_restore_outputs: list[Any] = field(default_factory=list)
    relabel_private: bool = False   # relabel reads a BrowserState: wire it as a private follow-up event
    # called with the event that redrew this tab after a language switch, for what must come after it
    relabelled: Callable[[Any], Any] | None = None


def named(fn: Callable[[dict[str, Any]], Any], names: Sequence[str]) -> Callable:
    """A gradio handler whose inputs arrive as one dict ``{name: value}``.

    Gradio passes inputs by position, in the order of the event's ``inputs`` list; this wrapper
    zips them with ``names`` (written next to that list, from the same source) and calls
    ``fn(values)``. Its signature lists the names, so ``gradio_client`` and the API page show
    ``temperature`` rather than ``param_6``. Generator handlers stream as before.

        >>> h = named(lambda v: v["b"] - v["a"], ["a", "b"])
        >>> h(1, 5), list(inspect.signature(h).parameters)
        (4, ['a', 'b'])
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate input names: {names}")

    if inspect.isgeneratorfunction(fn):
        def gen(*args: Any) -> Any:
            yield from fn(_zip(names, args))
        wrapper: Callable = gen
    else:
        def call(*args: Any) -> Any:
            return fn(_zip(names, args))
        wrapper = call
    functools.update_wrapper(wrapper, fn)
    del wrapper.__wrapped__  # type: ignore[attr-defined]  # gradio must read *this* signature
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    wrapper.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {}
    return wrapper


def _zip(names: list[str], args: tuple) -> dict[str, Any]:
    if len(args) != len(names):
        raise TypeError(f"expected {len(names)} inputs ({', '.join(names)}), got {len(args)}")
    return dict(zip(names, args))


def inputs_of(components: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """``{name: component}`` -> (the event's inputs list, the names ``named`` zips them with)."""
    return list(components.values()), list(components)


def preset_settings(preset: dict[str, Any]) -> Any:
    """A lesson preset's ``settings`` table as ``SamplingSettings`` (raises ``SettingsError``)."""
    from decoding_lab.settings import SamplingSettings
    return SamplingSettings.from_json(dict(preset.get("settings", {})))


def picker_fill(picker: ModelPicker, preset: dict[str, Any]) -> dict[Any, Any]:
    """What a lesson preset sets in the shared model picker: model, an empty Hub box, the prompt
    format (a preset without a model keeps the one chosen)."""
    out: dict[Any, Any] = {picker.hub: "", picker.chat: "chat" if preset.get("chat", True) else "raw"}
    if preset.get("model"):
        out[picker.model] = preset["model"]
    return out
