"""Which backend serves a model name, and the process-wide cache of loaded models.

Each backend module registers itself (as lm-evaluation-harness's ``@register_model`` does):
a ``claims`` function that says whether a name is its own (and returns its canonical key),
and a ``load`` function. Names are tried against every backend in registration order, the
fallback (transformers, which reads any Hub id) last:

* ``smollm2-135m-instruct@llama.cpp`` → llama.cpp (``backends.llamacpp``)
* ``remote:<endpoint>``               → a configured server (``backends.remote``)
* a bundled name or ``owner/name``    → transformers (``backends.hf``)

A fourth backend is one module that calls ``register``, plus its line in
``backends/__init__.py``; nothing else names backends.

Weights are read-only once loaded, so all users share one copy. One lock per name: two users
asking for the same model wait for a single load, while different models may load side by side.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from decoding_lab.backends.loaded import LoadedModel, one_line
from decoding_lab.errors import ModelError

__all__ = ["Registration", "register", "registered", "offered_names", "canonical", "load_model", "get_model", "freeze_loading",
           "loaded_models"]


@dataclass(frozen=True)
class Registration:
    name: str                                      # "transformers", "llama.cpp", "remote"
    claims: Callable[[str], str | None]            # a name -> its canonical key, or None if not this backend's
    load: Callable[..., LoadedModel]               # (key, device=None, cache_dir=None) -> a fresh model
    fallback: bool = False                         # tried last; may raise ModelError on a malformed name
    offers: Callable[[], list[str]] | None = None  # the names a model menu lists for it (None: none)


_BACKENDS: list[Registration] = []


def register(name: str, claims: Callable[[str], str | None], load: Callable[..., LoadedModel],
             fallback: bool = False, offers: Callable[[], list[str]] | None = None) -> Registration:
    """Add a backend (idempotent by name: re-importing a module replaces its entry)."""
    entry = Registration(name, claims, load, fallback, offers)
    _BACKENDS[:] = [b for b in _BACKENDS if b.name != name] + [entry]
    return entry


def registered() -> list[str]:
    return [b.name for b in sorted(_BACKENDS, key=lambda b: b.fallback)]


def offered_names() -> list[str]:
    """Every name a model menu lists: the fallback's (transformers: the bundled models and the
    allow-listed Hub ids) first, then each backend's in registration order, each name once."""
    out: list[str] = []
    for entry in sorted(_BACKENDS, key=lambda b: not b.fallback):
        for name in entry.offers() if entry.offers is not None else []:
            if name not in out:
                out.append(name)
    return out


def _resolve(name_or_id: object) -> tuple[Registration, str]:
    if name_or_id is not None and not isinstance(name_or_id, str):
        raise ModelError(f"a model name must be text, got {type(name_or_id).__name__}")
    text = (name_or_id or "").strip()
    for entry in sorted(_BACKENDS, key=lambda b: b.fallback):  # stable: registration order, fallback last
        key = entry.claims(text)
        if key is not None:
            return entry, key
    raise ModelError(f"no backend serves the model name {one_line(text, 80)!r} "
                     f"(backends: {', '.join(registered()) or 'none registered'})")


def canonical(name_or_id: object) -> str:
    """The key a name loads under (``Gemma-3-270M`` → ``gemma-3-270m``), checked by its backend
    before any file or network access."""
    return _resolve(name_or_id)[1]


def load_model(name_or_id: str, device: str | None = None, **options: Any) -> LoadedModel:
    """Load a fresh copy (slow). Most callers want ``get_model``, which shares one copy."""
    entry, key = _resolve(name_or_id)
    return entry.load(key, device=device, **options)


_LOADED: dict[str, LoadedModel] = {}
_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()
_FROZEN: list[str] = []  # set once by freeze_loading: why no further model may load


def freeze_loading(reason: str) -> None:
    """From now on ``get_model`` serves only the models already loaded; any other is refused
    with ``reason`` (ZeroGPU: weights must reach CUDA at start-up, ``ui.common.runtime``)."""
    with _GUARD:
        _FROZEN[:] = [reason]


def loaded_models() -> list[LoadedModel]:
    """The models this process holds now."""
    with _GUARD:
        return list(_LOADED.values())


def get_model(name_or_id: str) -> LoadedModel:
    """The shared copy of a model, loaded on first use."""
    key = canonical(name_or_id)
    with _GUARD:
        if key in _LOADED:
            return _LOADED[key]
        if _FROZEN:
            raise ModelError(f"{key!r} cannot be loaded now: {_FROZEN[0]}")
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _GUARD:
            if key in _LOADED:  # loaded by another thread while we waited
                return _LOADED[key]
        loaded = load_model(key)
        with _GUARD:
            _LOADED[key] = loaded
    return loaded
