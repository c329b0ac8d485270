"""Which language models the lab can use: the names a user may type, resolved by the backends.

* a bundled name (``smollm2-135m-instruct``, ``gemma-3-270m``) or a Hub id ``owner/name``:
  transformers in this process (``backends.hf``, which says how a name is found: converted
  cache, bundled GGUF, Hub);
* ``<bundled name>@llama.cpp``: the same GGUF on llama.cpp's kernels (``backends.llamacpp``);
* ``remote:<endpoint>``: a server the deployment configured (``backends.remote``).

Every failure is a one-line ``ModelError``. ``get_model`` shares one copy per process.
"""

from __future__ import annotations

from decoding_lab.backends import LoadedModel, canonical, freeze_loading, get_model, load_model
from decoding_lab.bundled import BUNDLED, DEFAULT_MODEL, ModelSpec
from decoding_lab.backends.hf import list_models, resolve_device, resolve_dtype
from decoding_lab.backends.llamacpp import SUFFIX as LLAMACPP_SUFFIX
from decoding_lab.errors import ModelError
from decoding_lab.remote.config import PREFIX as REMOTE_PREFIX

__all__ = ["BUNDLED", "DEFAULT_MODEL", "LLAMACPP_SUFFIX", "REMOTE_PREFIX", "LoadedModel", "ModelError", "ModelSpec",
           "canonical", "freeze_loading", "get_model", "list_models", "load_model", "resolve_device",
           "resolve_dtype"]
