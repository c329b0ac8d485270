"""Where the app runs: the model slots every model job takes, an optional ZeroGPU decorator and
the model warm-up.

**Model slots.** ``model_slot()`` is a process-wide counter of model jobs (a forward pass, a
generation, a model load): at most ``DECODING_LAB_CONCURRENCY`` hold one at once, for all
visitors and all tabs together; one more waits for a free slot. Every tab's model event takes
one through ``sessions.gated`` for its whole run. The Grammar tab is the exception that shows
why the slot is ours and not only gradio's queue: its events compile the constraint first, in
the grammar pool (``grammar.compile.bounded``), and take a model slot only for the model work
that follows. A slow grammar then occupies a compile worker, never a slot another visitor's
Step is waiting for.

The slots are not reentrant: a job that holds one must not ask for a second (the handlers
never nest; a nested call would wait for itself once every slot is taken).

    >>> slots = ModelSlots(1)
    >>> with slots.hold():
    ...     slots.running()
    1
    >>> slots.running()
    0

**ZeroGPU.** On a Hugging Face ZeroGPU Space the ``spaces`` package is present and ``@gpu``
asks for a GPU slice for the duration of the call; anywhere else it does nothing."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Callable, Iterator

log = logging.getLogger(__name__)

try:  # pragma: no cover - only on Spaces
    import spaces  # type: ignore

    gpu: Callable = spaces.GPU
except ImportError:
    def gpu(fn: Callable) -> Callable:
        return fn


class ModelSlots:
    """``hold()``: wait for one of ``n`` slots and keep it for the block (released on any exit,
    and from any thread: a streamed job may end on another worker thread than it began)."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"model slots: need at least 1, got {n}")
        self.n = n
        self._free = threading.Semaphore(n)
        self._lock = threading.Lock()
        self._running = 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self._free.acquire()
        with self._lock:
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
            self._free.release()

    def running(self) -> int:
        """Slots held now (for tests and logs)."""
        with self._lock:
            return self._running


_slots: ModelSlots | None = None
_slots_lock = threading.Lock()


def model_slots() -> ModelSlots:
    """The process's slots, sized from ``DECODING_LAB_CONCURRENCY`` on first use."""
    global _slots
    with _slots_lock:
        if _slots is None:
            from decoding_lab import limits
            _slots = ModelSlots(limits.current().concurrency)
        return _slots


def model_slot() -> contextlib.AbstractContextManager:
    """``with model_slot():`` around model work (see the module docstring)."""
    return model_slots().hold()


def _call(fn: Callable, *args: Any, **kw: Any) -> Any:
    return fn(*args, **kw)


_gpu_call = gpu(_call)  # decorated once, at import: ZeroGPU wants its functions known at start-up


def on_model(fn: Callable, *args: Any, **kw: Any) -> Any:
    """``fn(*args, **kw)`` holding a model slot (and, on ZeroGPU, a GPU): the model part of a
    handler whose other part (compiling a grammar) needs neither."""
    with model_slot():
        return _gpu_call(fn, *args, **kw)


def _iterate(fn: Callable, *args: Any, **kw: Any) -> Iterator[Any]:
    yield from fn(*args, **kw)


_gpu_iterate = gpu(_iterate)   # ZeroGPU's decorator takes generator functions too


def on_model_iter(fn: Callable, *args: Any, **kw: Any) -> Iterator[Any]:
    """``on_model`` for a generator: the slot (and GPU) is held while ``fn``'s items are read,
    and released when the consumer finishes or drops the iterator (a cancelled stream)."""
    with model_slot():
        yield from _gpu_iterate(fn, *args, **kw)


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
