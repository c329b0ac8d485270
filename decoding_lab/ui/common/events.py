"""The one way to wire a model event: ``model_event(fn, names, jobs)``.

A model event (a Step, a Compare run, a beam search, a lesson's experiment, loading a lesson that
prefills) needs the same stack around its handler, from the inside out:

1. ``runtime.gpu``: on a ZeroGPU Space, a GPU is attached for the call (and the sessions it
   touched are parked before it hands anything back); elsewhere nothing;
2. ``errors.guarded``: the core's ``UserError`` becomes one line in the visitor's language;
3. ``tab.named``: gradio's positional inputs arrive as one ``{name: value}`` dict;
4. ``sessions.gated``: one job per tab at a time, and one of the process's model slots (a handler
   that takes its slot itself, after work that needs none, passes ``model_slot=False``).

Registered with ``concurrency_id="model"``. Every such event goes through this helper, and
``tests/test_events.py`` walks the built page and fails on one that does not (it reads the mark
below, which each wrapper copies outward with ``functools.update_wrapper``).

    >>> h = model_event(lambda v: v["a"] + 1, ["a"], None)
    >>> h(1), is_model_event(h)
    (2, True)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from decoding_lab.ui.common.errors import guarded
from decoding_lab.ui.common.runtime import gpu
from decoding_lab.ui.common.sessions import SessionJobs, gated
from decoding_lab.ui.common.tab import named

#: The attribute that says a handler was built by ``model_event``.
MARK = "_decoding_lab_model_event"


def model_event(fn: Callable[..., Any], names: Sequence[str] | None, jobs: SessionJobs | None,
                model_slot: bool = True) -> Callable[..., Any]:
    """``fn`` with the whole stack of a model event (see the module docstring). ``names``: the
    event's input names (``tab.inputs_of``), or None for a handler that takes positional inputs;
    ``jobs``: the tab's job gate (None: no gate and no slot, for a handler that holds its own)."""
    inner = guarded(gpu(fn))
    wrapped = gated(named(inner, names) if names is not None else inner, jobs, model_slot=model_slot)
    setattr(wrapped, MARK, True)
    return wrapped


def is_model_event(fn: Callable[..., Any] | None) -> bool:
    """Whether ``fn`` (a registered handler, possibly wrapped again) came from ``model_event``."""
    return bool(getattr(fn, MARK, False))


def unwrapped_model_events(demo: Any) -> list[str]:
    """The events of ``demo`` (a built ``gr.Blocks``) that run in the model queue
    (``concurrency_id="model"``) but whose handler did not come from ``model_event``: each
    named by its API name (or its handler's name when it has none). Validators run before
    their event, in gradio's own step, and hold no model: they are not counted."""
    bad = []
    for block_fn in demo.fns.values():
        if block_fn.concurrency_id != "model" or getattr(block_fn, "is_validator_function", False):
            continue
        if block_fn.fn is not None and not is_model_event(block_fn.fn):
            bad.append(str(block_fn.api_name or getattr(block_fn.fn, "__name__", "?")))
    return bad
