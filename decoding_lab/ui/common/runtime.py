"""Where the app runs: the model slots every model job takes, an optional ZeroGPU decorator and
the model warm-up.

**Model slots.** ``model_slot()`` takes one of the process's ``DECODING_LAB_CONCURRENCY`` model
slots (a forward pass, a generation, a model load) for all visitors and all tabs together; one
more job waits for a free slot. The slots are shared fairly (``decoding_lab.fair_share``): a
running job lends its slot between forward passes to a waiting job whose client was served
longer ago, one client holds at most ``DECODING_LAB_CLIENT_SLOTS`` of them, and on a public
Space each job has a budget. Every tab's model event takes one through ``sessions.gated``,
which also says whose job it is (the client's address, ``sessions.client_of``). The Grammar
tab is the exception that shows why the slot is ours and not only gradio's queue: its events
compile the constraint first, in the grammar pool (``grammar.compile.bounded``), and take a
model slot only for the model work that follows. A slow grammar then occupies a compile
worker, never a slot another visitor's Step is waiting for.

A job that holds a slot and asks for one again (a handler that calls another) keeps the one it
has; work with no job (the CLI, a warm-up) runs as the local client's.

    >>> share = model_slots()
    >>> with model_slot():
    ...     share.running()
    1
    >>> share.running()
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

from decoding_lab.fair_share import LOCAL, FairShare, current_job, working_for

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


_share: FairShare | None = None
_share_lock = threading.Lock()


def model_slots() -> FairShare:
    """The process's slots, sized and shared by the limits read on first use."""
    global _share
    with _share_lock:
        if _share is None:
            from decoding_lab import limits
            _share = FairShare(limits.current().quota())
        return _share


@contextlib.contextmanager
def model_slot() -> Iterator[None]:
    """``with model_slot():`` around model work (see the module docstring): the slot is held
    for the job this thread works for (``fair_share.working_for``), or for a job of the local
    client when there is none."""
    share = model_slots()
    job = current_job()
    if job is not None:
        with share.hold(job):
            yield
        return
    with share.job(LOCAL) as local, working_for(local), share.hold(local):
        yield


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
    """``on_model`` for a generator: the slot (and GPU) is held while each of ``fn``'s items is
    computed, not while the page draws it, and the generator is closed when the consumer
    finishes or drops the iterator (a cancelled stream)."""
    items = _gpu_iterate(fn, *args, **kw)
    try:
        while True:
            with model_slot():
                try:
                    item = next(items)
                except StopIteration:
                    return
            yield item
    finally:
        items.close()


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
