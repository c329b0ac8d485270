"""Backends: the engines that turn token ids into next-token logits.

* ``base``     — the protocol (``Backend``, ``Cache``, ``LanguageModel``) and ``Caps``, the flags
  callers read instead of asking which engine they hold.
* ``loaded``   — ``LoadedModel``: a backend plus the tokenizer side of one model.
* ``registry`` — name → backend resolution and the process-wide shared copies (``get_model``).
* ``hf``       — transformers in this process (any Hub id, the bundled GGUFs de-quantised).
* ``llamacpp`` — the bundled GGUFs on llama.cpp's own kernels (``<name>@llama.cpp``).
* ``remote``   — a configured server over HTTP (``remote:<endpoint>``).

Importing this package registers every backend. A new one is a module that calls
``registry.register`` and a line below.
"""

from decoding_lab.backends.base import Backend, Cache, Caps, LanguageModel
from decoding_lab.backends.loaded import LoadedModel
from decoding_lab.backends.registry import canonical, freeze_loading, get_model, load_model, register, registered
from decoding_lab.backends import hf, llamacpp, remote  # noqa: F401  (each registers itself)

__all__ = ["Backend", "Cache", "Caps", "LanguageModel", "LoadedModel", "canonical", "freeze_loading", "get_model",
           "load_model", "register", "registered"]
