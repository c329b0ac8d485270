"""Where the app runs: an optional ZeroGPU decorator and the model warm-up.

On a Hugging Face ZeroGPU Space the ``spaces`` package is present and ``@gpu`` asks
for a GPU slice for the duration of the call; anywhere else it does nothing."""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger(__name__)

try:  # pragma: no cover - only on Spaces
    import spaces  # type: ignore

    gpu: Callable = spaces.GPU
except ImportError:
    def gpu(fn: Callable) -> Callable:
        return fn


def warm_up(name: str | None = None) -> threading.Thread:
    """Load the default model in the background so the first visitor does not wait for it."""

    def load() -> None:
        from decoding_lab.models import DEFAULT_MODEL, get_model
        try:
            get_model(name or DEFAULT_MODEL)
        except Exception as e:  # the page still works; the first Step reports the error
            log.warning("warm-up of %s failed: %s", name or DEFAULT_MODEL, e)

    th = threading.Thread(target=load, name="decoding-lab-warm-up", daemon=True)
    th.start()
    return th
