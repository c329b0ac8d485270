"""A GGUF model run by llama.cpp's own kernels, behind the same interface as a transformers model.

The transformers backend de-quantises a GGUF to float32 and runs PyTorch; this one hands
the file to llama.cpp, which computes with the quantised weights directly (Q4_1, Q4_K_M …),
as a llama.cpp user's program would. The two give different logits for the same file (the
kernels round differently), which is worth seeing: a greedy answer can change.

The backend (``LlamaCppBackend``, the ``backends.base.Backend`` protocol) holds the weights,
loaded once per process and shared; each cache (``LlamaCppCache``) is its own
``llama_context`` (its own KV cache), so two visitors never share positions. Cropping is
``llama_memory_seq_rm``; a copy builds a new context and re-reads the tokens.

One sequence per cache (``Caps(batch=False)``): batched calls (beam search, many samples at
once) are refused with a message; callers that batch rows (Compare's columns, sweeps) run
them one by one. The tokenizer is the transformers twin's: the same file, so the same ids.

These machines advertise AMX but fault on it, so weights load without llama.cpp's extra
(repacked) buffer types: ``use_extra_bufts = False`` selects its ordinary AVX-512 backend.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import torch

from decoding_lab import limits
from decoding_lab.backends.base import Caps, OneSequenceCache, SilentEngine
from decoding_lab.bundled import BUNDLED
from decoding_lab.backends.loaded import LoadedModel, one_line
from decoding_lab.backends.registry import get_model, register
from decoding_lab.errors import ModelError
from decoding_lab.llamacpp import require

__all__ = ["LlamaCppBackend", "LlamaCppCache", "OwnedContext", "SUFFIX", "load"]

#: A bundled model's name with this suffix runs on llama.cpp: ``smollm2-135m-instruct@llama.cpp``.
SUFFIX = "@llama.cpp"


_ONE_SEQUENCE = ("the llama.cpp backend runs one sequence at a time (no batched beams or samples): "
                 "use the transformers backend (the model without @llama.cpp) for this run")


class LlamaCppBackend(SilentEngine):
    """The weights of one GGUF in llama.cpp, shared read-only by every cache made from it."""

    device = torch.device("cpu")
    caps = Caps(batch=False, exact_logits=True)

    def __init__(self, gguf_path: str, n_ctx: int, n_threads: int | None = None) -> None:
        lib = require()
        from llama_cpp import _internals

        self._internals = _internals
        params = lib.llama_model_default_params()
        params.use_extra_bufts = False  # no AMX / repacked weights (they fault on these VMs)
        try:
            self.model = _internals.LlamaModel(path_model=gguf_path, params=params, verbose=False)
        except (ValueError, OSError) as e:
            raise ModelError(f"llama.cpp could not load {os.path.basename(gguf_path)!r} ({str(e)[:120]})") from None
        self.path = gguf_path
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.model.vocab))
        train_ctx = int(lib.llama_model_n_ctx_train(self.model.model))
        self.n_ctx = int(min(n_ctx, train_ctx) if train_ctx > 0 else n_ctx)
        self.n_threads = int(n_threads or max(1, torch.get_num_threads()))
        # K and V in float16 (llama.cpp's default cache type): 2 x 2 bytes x layers x the KV width
        m = self.model.model
        n_head, n_head_kv = int(lib.llama_model_n_head(m)), int(lib.llama_model_n_head_kv(m))
        kv_width = int(lib.llama_model_n_embd(m)) // max(1, n_head) * n_head_kv
        self.kv_bytes_per_token = 4 * int(lib.llama_model_n_layer(m)) * kv_width
        # Beside its KV cache a context holds a compute buffer for one batch of activations. Read as
        # resident memory per context (four contexts, one process): 14.0 MB for SmolLM2-135M and
        # 20.6-22.7 MB for Gemma 3 270M at 512-token batches, above the KV. The memory budget
        # counts it as 20 float32 activations of width n_embd per batch position (23.6 and 26.2 MB
        # for those two), no less than was measured.
        self.compute_bytes_per_batch_token = 20 * 4 * int(lib.llama_model_n_embd(m))

    def new_cache(self) -> "LlamaCppCache":
        return LlamaCppCache(self)

    def forward(self, input_ids: torch.Tensor, cache: "LlamaCppCache",
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run ``input_ids`` (``[1, n]``) through ``cache``; the logits of the last position, ``[1, V]``."""
        if input_ids.dim() != 2 or input_ids.shape[0] != 1:
            raise ModelError(_ONE_SEQUENCE)
        return torch.from_numpy(cache.feed(input_ids[0].tolist())).view(1, -1)


def _free_context(lib: Any, ctx: Any, _model: Any) -> None:
    lib.llama_free(ctx)


class OwnedContext:
    """A ``llama_context`` freed the moment its cache is dropped.

    llama-cpp-python's own ``LlamaContext`` puts its ``close`` on the *model's* exit stack (so
    that a context is freed before its model), which keeps every context the model ever made
    alive until the model itself closes: a server that makes a context per visitor, or per
    parked-and-rebuilt cache, would keep them all (about 67 MB each for a 2,304-token context of
    the bundled 135M model). This one frees its context when it is garbage-collected or closed;
    it holds the backend, so the model outlives it, and ``weakref.finalize`` runs before the
    interpreter tears the model down at exit."""

    def __init__(self, lib: Any, backend: "LlamaCppBackend", params: Any) -> None:
        ctx = lib.llama_init_from_model(backend.model.model, params)
        if not ctx:
            raise ModelError("llama.cpp could not make a context (out of memory?)")
        self.lib, self.backend, self.ctx = lib, backend, ctx
        self.memory = lib.llama_get_memory(ctx)
        # the finalizer holds the model too, so the weights are never freed before this context
        self._free = weakref.finalize(self, _free_context, lib, ctx, backend.model)

    def decode(self, batch: Any) -> None:
        rc = self.lib.llama_decode(self.ctx, batch.batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        return bool(self.lib.llama_memory_seq_rm(self.memory, seq_id, p0, p1))

    def close(self) -> None:
        """Free the context now (the finalizer runs once; later calls do nothing)."""
        self._free()


class LlamaCppCache(OneSequenceCache):
    """One KV cache: a llama_context of its own, plus the tokens it holds."""

    ONE_SEQUENCE_MESSAGE = _ONE_SEQUENCE

    #: a context starts with room for what its first feed needs plus this much, rounded up to a
    #: multiple of ``CTX_STEP``; a feed that needs more moves the tokens to a context twice as large
    CTX_STEP = 256

    def __init__(self, backend: LlamaCppBackend) -> None:
        self.backend = backend
        self.lib = require()
        self.ctx: Any = None     # made by the first feed, sized to it (``_make_room``)
        self.batch: Any = None
        self.n_ctx = 0
        self.tokens: list[int] = []

    def _new_context(self, n_ctx: int) -> tuple[Any, Any]:
        params = self.lib.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = min(512, n_ctx)
        params.n_ubatch = params.n_batch
        params.n_threads = params.n_threads_batch = self.backend.n_threads
        params.n_seq_max = 1
        ctx = OwnedContext(self.lib, self.backend, params)
        batch = self.backend._internals.LlamaBatch(n_tokens=params.n_batch, embd=0, n_seq_max=1, verbose=False)
        return ctx, batch

    def _make_room(self, needed: int) -> None:
        """A context that holds ``needed`` tokens. A context allocates its whole KV cache when it is
        made (``n_ctx`` x layers x 2 x KV width), so it starts sized to the first feed and grows by
        doubling: the tokens already in it move over as saved KV state, not recomputed, so the
        logits are the very ones a large context would have given."""
        if needed > self.backend.n_ctx:
            raise ModelError(f"the llama.cpp context holds {self.backend.n_ctx} tokens; this run needs {needed}")
        if self.ctx is not None and needed <= self.n_ctx:
            return
        size = max(self.CTX_STEP, 2 * self.n_ctx, -(-(needed + self.CTX_STEP) // self.CTX_STEP) * self.CTX_STEP)
        size = min(size, self.backend.n_ctx)
        ctx, batch = self._new_context(size)
        if self.ctx is not None and self.tokens:
            lib, src = self.lib, self.ctx.ctx
            n = int(lib.llama_state_seq_get_size(src, 0))
            buf = (ctypes.c_uint8 * n)()
            if int(lib.llama_state_seq_get_data(src, buf, n, 0)) != n or \
                    int(lib.llama_state_seq_set_data(ctx.ctx, buf, n, 0)) != n:
                raise ModelError("llama.cpp could not move the KV cache into a larger context")
        if self.ctx is not None:
            self.ctx.close()     # the smaller context's memory goes back now, not at the next collection
        self.ctx, self.batch, self.n_ctx = ctx, batch, size

    def nbytes(self) -> int:
        """The context's memory: its ``n_ctx`` KV cells at the model's bytes per token, plus the
        compute buffer for one batch (``LlamaCppBackend.compute_bytes_per_batch_token``)."""
        if self.ctx is None:
            return 0
        return self.n_ctx * self.backend.kv_bytes_per_token + \
            self.batch._n_tokens * self.backend.compute_bytes_per_batch_token

    # --- the cache protocol (backends.base.Cache) -------------------------------------
    def get_seq_length(self) -> int:
        return len(self.tokens)

    def crop(self, length: int) -> None:
        if not 0 <= length <= len(self.tokens):
            raise ValueError(f"cannot crop a cache of {len(self.tokens)} positions to {length}")
        if self.ctx is not None:
            self.ctx.kv_cache_seq_rm(0, length, -1)
        self.tokens = self.tokens[:length]

    def __deepcopy__(self, memo: dict) -> "LlamaCppCache":
        twin = LlamaCppCache(self.backend)
        if self.tokens:
            twin.feed(list(self.tokens))
        return twin

    # --- running tokens ---------------------------------------------------------------
    def feed(self, ids: list[int]) -> np.ndarray:
        """Append ``ids`` to the cache (in chunks of n_batch); the float32 logits after the last."""
        if not ids:
            raise ModelError("nothing to run through the model")
        bad = [t for t in ids if not 0 <= int(t) < self.backend.n_vocab]
        if bad:
            raise ModelError(f"token id {bad[0]} is outside the vocabulary ({self.backend.n_vocab})")
        self._make_room(len(self.tokens) + len(ids))
        step = self.batch._n_tokens
        for start in range(0, len(ids), step):
            chunk = [int(t) for t in ids[start:start + step]]
            self.batch.set_batch(chunk, n_past=len(self.tokens), logits_all=False)
            try:
                self.ctx.decode(self.batch)
            except RuntimeError as e:
                raise ModelError(f"llama.cpp failed to run the model ({e})") from None
            self.tokens.extend(chunk)
        ptr = self.lib.llama_get_logits_ith(self.ctx.ctx, -1)
        return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                     shape=(self.backend.n_vocab,)).copy()


def _claims(name: str) -> str | None:
    if not name.lower().endswith(SUFFIX):
        return None
    base = name[: -len(SUFFIX)].strip().lower()
    if base not in BUNDLED:
        raise ModelError(f"only the bundled GGUF models ({', '.join(BUNDLED)}) run on llama.cpp here; "
                         f"{one_line(base, 80)!r} has no GGUF file")
    return base + SUFFIX


def load(key: str, device: str | None = None, **_: Any) -> LoadedModel:
    """The bundled GGUF in llama.cpp, with the tokenizer of its transformers twin (same file,
    so the same token ids). Needs llama-cpp-python; without it, a one-line message."""
    start = time.perf_counter()
    spec = BUNDLED[key[: -len(SUFFIX)]]
    found = spec.locate_gguf()
    if found is None:
        raise ModelError(f"the GGUF of {spec.name} is not installed ({spec.install_hint})")
    twin = get_model(spec.name)
    lim = limits.current()
    backend = LlamaCppBackend(str(Path(found[0]) / found[1]), n_ctx=lim.max_prompt_tokens + lim.max_new_tokens + 8)
    if backend.n_vocab != twin.vocab_size:
        raise ModelError(f"llama.cpp sees {backend.n_vocab} tokens in {spec.name}, transformers {twin.vocab_size}")
    return LoadedModel(name=key, backend=backend, tokenizer=twin.tokenizer, vocab_size=backend.n_vocab,
                       has_chat_template=twin.has_chat_template, source="llama.cpp",
                       load_seconds=time.perf_counter() - start, eos_token_ids=twin.eos_token_ids)


def _offers() -> list[str]:
    """The installed bundled GGUFs on llama.cpp's kernels, where llama-cpp-python is installed."""
    from decoding_lab.llamacpp import available
    if not available():
        return []
    return [name + SUFFIX for name, spec in BUNDLED.items() if importlib.util.find_spec(spec.package) is not None]


register("llama.cpp", _claims, load, offers=_offers)

