"""A GGUF model run by llama.cpp's own kernels, behind the same interface as a transformers model.

The transformers backend de-quantises a GGUF to float32 and runs PyTorch; this one hands
the file to llama.cpp, which computes with the quantised weights directly (Q4_1, Q4_K_M …),
as a llama.cpp user's program would. The two give different logits for the same file (the
kernels round differently), which is worth seeing: a greedy answer can change.

The stepper talks to a model through four calls (``decoding_lab.forward``): make a cache,
run tokens through it, crop it, copy it. Here the model object (``LlamaCppKernels``) holds
the weights, loaded once per process and shared; each cache (``LlamaCppCache``) is its own
``llama_context`` (its own KV cache), so two visitors never share positions. Cropping is
``llama_memory_seq_rm``; a copy builds a new context and re-reads the tokens.

One sequence per cache: batched calls (beam search, many samples at once) are refused with
a message; the stepper, greedy and Temperature-0 paths work one sequence at a time anyway.

These machines advertise AMX but fault on it, so weights load without llama.cpp's extra
(repacked) buffer types: ``use_extra_bufts = False`` selects its ordinary AVX-512 kernels.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from decoding_lab.llamacpp import require
from decoding_lab.forward import OneSequenceCache
from decoding_lab.errors import ModelError

__all__ = ["LlamaCppKernels", "LlamaCppCache", "SUFFIX"]

#: A model name ending in this runs on llama.cpp: ``smollm2-135m-instruct@llama.cpp``.
SUFFIX = "@llama.cpp"


_ONE_SEQUENCE = ("the llama.cpp backend runs one sequence at a time (no batched beams or samples): "
                 "use the transformers backend (the model without @llama.cpp) for this run")


@dataclass
class _Output:  # what a transformers forward returns, as far as decoding_lab.forward reads it
    logits: torch.Tensor


class LlamaCppKernels:
    """The weights of one GGUF in llama.cpp, shared read-only by every cache made from it."""

    device = torch.device("cpu")
    config = None  # no transformers config: decoding_lab.forward asks this object for caches
    one_sequence = True      # one row per cache: batched callers go row by row (forward.one_sequence)

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
        self.generation_config = None  # a GGUF carries no generation_config

    def new_cache(self) -> "LlamaCppCache":
        return LlamaCppCache(self)

    def __call__(self, input_ids: torch.Tensor, cache: "LlamaCppCache", **_: Any) -> _Output:
        """Run ``input_ids`` (``[1, n]``) through ``cache``; logits of the last position only."""
        if input_ids.dim() != 2 or input_ids.shape[0] != 1:
            raise ModelError(_ONE_SEQUENCE)
        logits = cache.feed(input_ids[0].tolist())
        return _Output(logits=torch.from_numpy(logits).view(1, 1, -1))

    def eval(self) -> "LlamaCppKernels":  # the transformers model protocol, as far as it is used
        return self


class LlamaCppCache(OneSequenceCache):
    """One KV cache: a llama_context of its own, plus the tokens it holds."""

    ONE_SEQUENCE_MESSAGE = _ONE_SEQUENCE

    def __init__(self, kernels: LlamaCppKernels) -> None:
        lib = require()
        self.kernels = kernels
        self.lib = lib
        params = lib.llama_context_default_params()
        params.n_ctx = kernels.n_ctx
        params.n_batch = min(512, kernels.n_ctx)
        params.n_ubatch = params.n_batch
        params.n_threads = params.n_threads_batch = kernels.n_threads
        params.n_seq_max = 1
        try:
            self.ctx = kernels._internals.LlamaContext(model=kernels.model, params=params, verbose=False)
        except ValueError as e:
            raise ModelError(f"llama.cpp could not make a context ({e})") from None
        self.batch = kernels._internals.LlamaBatch(n_tokens=params.n_batch, embd=0, n_seq_max=1, verbose=False)
        self.tokens: list[int] = []

    # --- the DynamicCache methods decoding_lab.forward uses ---------------------------
    def get_seq_length(self) -> int:
        return len(self.tokens)

    def crop(self, length: int) -> None:
        if not 0 <= length <= len(self.tokens):
            raise ValueError(f"cannot crop a cache of {len(self.tokens)} positions to {length}")
        self.ctx.kv_cache_seq_rm(0, length, -1)
        self.tokens = self.tokens[:length]

    def __deepcopy__(self, memo: dict) -> "LlamaCppCache":
        twin = LlamaCppCache(self.kernels)
        if self.tokens:
            twin.feed(list(self.tokens))
        return twin

    # --- running tokens ---------------------------------------------------------------
    def feed(self, ids: list[int]) -> np.ndarray:
        """Append ``ids`` to the cache (in chunks of n_batch); the float32 logits after the last."""
        if not ids:
            raise ModelError("nothing to run through the model")
        if len(self.tokens) + len(ids) > self.kernels.n_ctx:
            raise ModelError(f"the llama.cpp context holds {self.kernels.n_ctx} tokens; this run needs "
                             f"{len(self.tokens) + len(ids)}")
        bad = [t for t in ids if not 0 <= int(t) < self.kernels.n_vocab]
        if bad:
            raise ModelError(f"token id {bad[0]} is outside the vocabulary ({self.kernels.n_vocab})")
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
                                     shape=(self.kernels.n_vocab,)).copy()


def load_kernels(gguf_path: str, n_ctx: int) -> LlamaCppKernels:
    return LlamaCppKernels(gguf_path, n_ctx=n_ctx)

