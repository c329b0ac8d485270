"""llama.cpp's own sampler chain, run on any logits: the ground truth for the llama.cpp presets.

``LlamaCppChain(settings, n_vocab)`` builds the chain llama.cpp's ``common_sampler`` builds
for the same parameters (logit bias, penalties, DRY, top-n-sigma, top-k, typical-p, top-p,
min-p, XTC, temperature in the default order), through the C API: ``llama_sampler_init_*``,
``llama_sampler_chain_add``, ``llama_sampler_accept`` for the history and
``llama_sampler_apply`` on a ``llama_token_data_array``. It stops before the final
``dist`` draw, so what comes back is the distribution llama.cpp would sample from.

Only the ``llama.cpp`` order is meaningful here: llama.cpp's chain order is its own. The
arrays are filled and read through numpy views of the C structs (12 bytes per token:
int32 id, float32 logit, float32 p), so a 262k vocabulary costs milliseconds, not seconds.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from decoding_lab.llamacpp import require

__all__ = ["LlamaCppChain", "LlamaCppResult", "DEFAULT_DRY_BREAKERS"]

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
DEFAULT_DRY_BREAKERS = ("\n", ":", "\"", "*")


@dataclass
class LlamaCppResult:
    """What the chain left: token ids (in llama.cpp's final array order) and their probabilities,
    a softmax over the surviving logits (tokens an earlier sampler set to -inf excluded)."""

    ids: np.ndarray
    logits: np.ndarray
    probs: np.ndarray

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.ids.tolist(), self.probs.tolist()))   # (one conversion, not one per token)


class LlamaCppChain:
    """llama.cpp's sampler chain for ``settings`` (a ``SamplingSettings``; its order is ignored).

    ``vocab`` (a ``llama_vocab`` pointer from a model loaded with ``vocab_only``) is needed
    only for DRY, which must know the token texts to find sequence breakers.
    """

    def __init__(self, settings: Any, n_vocab: int, vocab: Any = None,
                 dry_breakers: Sequence[str] = DEFAULT_DRY_BREAKERS, penalty_last_n: int | None = None) -> None:
        self.lib = require()
        self.n_vocab = int(n_vocab)
        s = settings
        lib = self.lib
        params = lib.llama_sampler_chain_default_params()
        self.chain = lib.llama_sampler_chain_init(params)
        add = lambda smpl: lib.llama_sampler_chain_add(self.chain, smpl)  # noqa: E731
        if s.logit_bias:
            bias = (lib.llama_logit_bias * len(s.logit_bias))(*[lib.llama_logit_bias(int(t), float(b))
                                                                 for t, b in s.logit_bias])
            add(lib.llama_sampler_init_logit_bias(self.n_vocab, len(s.logit_bias), bias))
        last_n = s.penalty_window if penalty_last_n is None else penalty_last_n
        add(lib.llama_sampler_init_penalties(self.n_vocab, last_n, s.repetition_penalty, s.frequency_penalty,
                                             s.presence_penalty))
        if s.dry_multiplier > 0:
            if vocab is None:
                raise ValueError("DRY needs the model's vocabulary (load the GGUF with vocab_only=True)")
            self._breakers = [b.encode() for b in dry_breakers]   # kept alive for the C side
            arr = (ctypes.c_char_p * len(self._breakers))(*self._breakers)
            add(lib.llama_sampler_init_dry(vocab, s.dry_multiplier, s.dry_base, s.dry_allowed_length,
                                           s.dry_penalty_last_n, arr, len(self._breakers)))
        add(lib.llama_sampler_init_top_n_sigma(s.top_n_sigma if s.top_n_sigma > 0 else -1.0))
        add(lib.llama_sampler_init_top_k(s.top_k))
        add(lib.llama_sampler_init_typical(s.typical_p, 0))
        add(lib.llama_sampler_init_top_p(s.top_p, 0))
        add(lib.llama_sampler_init_min_p(s.min_p, 0))
        add(lib.llama_sampler_init_xtc(s.xtc_probability, s.xtc_threshold, 0, int(s.seed or 0)))
        add(lib.llama_sampler_init_temp_ext(s.temperature, s.dynatemp_range, s.dynatemp_exponent))

    def accept(self, token_ids: Sequence[int]) -> None:
        """Feed tokens into the history the penalties and DRY look at (llama-server feeds the
        prompt, then each sampled token)."""
        for t in token_ids:
            self.lib.llama_sampler_accept(self.chain, int(t))

    def apply(self, logits: np.ndarray) -> LlamaCppResult:
        """Run the chain on one row of logits (``[n_vocab]``, float32) and read what is left."""
        lib = self.lib
        z = np.ascontiguousarray(logits, dtype=np.float32).reshape(-1)
        if z.shape[0] != self.n_vocab:
            raise ValueError(f"{z.shape[0]} logits for a vocabulary of {self.n_vocab}")
        data = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        data["id"] = np.arange(self.n_vocab, dtype=np.int32)
        data["logit"] = z
        cur = lib.llama_token_data_array(data.ctypes.data_as(lib.llama_token_data_p), self.n_vocab, -1, False)
        lib.llama_sampler_apply(self.chain, ctypes.byref(cur))
        # The samplers may point ``cur.data`` elsewhere (their own buffer): read through the pointer.
        raw = ctypes.string_at(ctypes.cast(cur.data, ctypes.c_void_p).value, cur.size * _TOKEN_DATA.itemsize)
        out = np.frombuffer(raw, dtype=_TOKEN_DATA).copy()
        alive = np.isfinite(out["logit"])
        ids, kept = out["id"][alive], out["logit"][alive].astype(np.float64)
        p = np.exp(kept - kept.max())
        return LlamaCppResult(ids=ids, logits=out["logit"][alive], probs=p / p.sum())

    def close(self) -> None:
        if getattr(self, "chain", None) is not None:
            self.lib.llama_sampler_free(self.chain)
            self.chain = None

    def __del__(self) -> None:  # pragma: no cover - finaliser
        try:
            self.close()
        except Exception:
            pass
