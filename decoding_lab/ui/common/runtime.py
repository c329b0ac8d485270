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

**ZeroGPU.** On a Hugging Face ZeroGPU Space (``SPACES_ZERO_GPU`` set, the ``spaces`` package
present) a GPU is attached to a ``@spaces.GPU`` function for the duration of one call only.
ZeroGPU expects the weights to be moved to CUDA in the main process at start-up (it records the
move and makes it real inside each call), so ``start_up`` loads every model the deployment serves
before the page opens and then refuses to load others (``models.freeze_loading``), rather than
load one inside a call, where ZeroGPU gives no such guarantee. A visitor's KV cache is made inside a call and
would be left on a released GPU, so ``gpu`` parks every session a call touched when it returns
(and before each item a streaming call yields): the cache is dropped and the tensors the views
need move to the CPU; the next Step rebuilds the cache with one prefill (``Stepper.park``). On a
dedicated-GPU Space ``spaces.GPU`` does nothing and nothing is parked; off Spaces ``gpu`` is
the function itself. The ZeroGPU path cannot run on these machines: ``tests/test_zerogpu.py``
checks the parking and the start-up rules with a stand-in for ``spaces``."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import threading
from typing import Any, Callable, Iterator

log = logging.getLogger(__name__)

try:  # pragma: no cover - only on Spaces
    import spaces  # type: ignore
except ImportError:
    spaces = None


def on_zerogpu() -> bool:
    """True on a ZeroGPU Space (the variable its runtime sets, and its package present)."""
    return spaces is not None and bool(os.environ.get("SPACES_ZERO_GPU"))


def park_sessions(*objects: Any) -> int:
    """Park every stepper held by ``objects`` (a session, a dict of outputs or inputs, a stepper);
    returns how many were parked."""
    from decoding_lab.stepper import Stepper
    seen: set[int] = set()
    for obj in objects:
        for value in (obj.values() if isinstance(obj, dict) else [obj]):
            stepper = value if isinstance(value, Stepper) else getattr(value, "stepper", None)
            if isinstance(stepper, Stepper) and id(stepper) not in seen:
                seen.add(id(stepper))
                stepper.park()
    return len(seen)


def parking(fn: Callable) -> Callable:
    """``fn`` that parks the sessions in its arguments and results before it hands anything back."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kw: Any) -> Iterator[Any]:
            for item in fn(*args, **kw):
                park_sessions(*args, *kw.values(), item)
                yield item
        return stream

    @functools.wraps(fn)
    def call(*args: Any, **kw: Any) -> Any:
        try:
            result = fn(*args, **kw)
        finally:
            park_sessions(*args, *kw.values())
        park_sessions(result)
        return result
    return call


def gpu(fn: Callable) -> Callable:
    """A model job: on ZeroGPU, run with a GPU attached and park the sessions it touched; on a
    dedicated-GPU Space, ``spaces.GPU`` (a no-op there); elsewhere ``fn`` itself."""
    if spaces is None:
        return fn
    return spaces.GPU(parking(fn)) if on_zerogpu() else spaces.GPU(fn)  # pragma: no cover - only on Spaces


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


def start_up() -> None:
    """Before the page opens: on ZeroGPU, load every model the deployment serves (on CUDA, in this
    main process, as ZeroGPU expects) and then allow no other; elsewhere, warm the default model
    up in the background."""
    if not on_zerogpu():
        warm_up()
        return
    preload_models()


def preload_models() -> list[str]:
    """Load the bundled models, the allow-listed Hub ids and the configured servers now, then
    freeze loading (``models.freeze_loading``). A model that fails to load is logged and left out."""
    from decoding_lab import limits
    from decoding_lab.models import BUNDLED, freeze_loading, get_model
    from decoding_lab.remote.config import endpoints
    os.environ.setdefault("DECODING_LAB_DEVICE", "cuda")
    names = [*BUNDLED, *(m for m in limits.current().allowed_models if m != "*")]
    try:
        names += [e.model_name for e in endpoints()]
    except Exception as e:  # a broken endpoint list: the bundled models still serve
        log.error("%s", e)
    loaded = []
    for name in names:
        try:
            get_model(name)
            loaded.append(name)
        except Exception as e:
            log.warning("start-up load of %s failed: %s", name, e)
    freeze_loading("on this ZeroGPU Space the models are loaded when it starts; "
                   f"these are served: {', '.join(loaded) or 'none'}")
    return loaded


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
