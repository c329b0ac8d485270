"""The Gradio app. ``build_demo()`` (in ``page``) assembles one ``gr.Tab`` per tab package:

* ``explorer``: step a live model token by token
* ``lessons``: the guided lessons, and loading their experiments into the other tabs
* ``compare``: 2–4 decoding settings side by side
* ``beam``: the beam tree and the length penalty
* ``grammar``: grammar-constrained decoding and token healing
* ``multisample``: pass@k, votes, sweeps, calibrated and verifier-tilted temperature
* ``determinism``: why temperature 0 is not a promise of determinism

Every tab package exports ``build(ctx) -> TabUI`` (``common.tab``); ``common`` holds what they
share (strings, controls built from the parameter table, sessions, plots, share links).
Launch options (css, theme, head, sessions kept, the gate in front of gradio) come from
``launch_kwargs()``, queue options from ``queue_kwargs()``. Importing this package builds nothing: the page is imported on first use.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Gradio's queue summarises its event log (a pandas DataFrame of up to 10,000 events, grouped,
# with percentiles) after *every* event, for a monitoring page this app does not use: the
# cost grows with uptime, on the same cores as the model. Summarise every 500 events, keep 1,000.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "500")
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")

from decoding_lab.ui.common.sessions import queue_kwargs  # noqa: E402


def build_demo(lang: str = "en") -> Any:
    from decoding_lab.ui.page import build_demo as build
    return build(lang)


def launch_kwargs() -> dict[str, Any]:
    """The page's launch options, and the door in front of gradio (``common.gate``: request
    bodies capped, event starts per client rate-limited)."""
    from decoding_lab.ui.common.gate import middleware
    from decoding_lab.ui.page import launch_kwargs as kwargs
    return {**kwargs(), "app_kwargs": {"middleware": middleware()}}


__all__ = ["build_demo", "launch_kwargs", "queue_kwargs"]
