"""Thin helpers around a causal LM's forward pass with a KV cache.

The prompt is *prefilled* once (one forward over all prompt tokens fills the cache);
each later token costs one forward over a single position that reads the cache.
``crop_cache`` rewinds a cache to an earlier length so that a step can be redone
bit-for-bit along the same code path.
"""

from __future__ import annotations


import torch
from transformers import DynamicCache, PreTrainedModel

from decoding_lab.errors import ModelError


def new_cache(model: PreTrainedModel) -> DynamicCache:
    """An empty KV cache. A model object that makes its own caches (the llama.cpp backend,
    ``decoding_lab.llamacpp.backend``) is asked for one; its caches answer ``crop``,
    ``get_seq_length`` and ``deepcopy`` like a ``DynamicCache``."""
    if hasattr(model, "new_cache"):
        return model.new_cache()
    return DynamicCache(config=model.config)


@torch.inference_mode()
def forward(model: PreTrainedModel, input_ids: torch.Tensor, cache: DynamicCache,
            attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Run ``input_ids`` ``[batch, n]`` through the model, extending ``cache`` in place.
    Returns the float32 logits of the last position, ``[batch, vocab]``."""
    out = model(input_ids=input_ids.to(model.device), cache=cache, use_cache=True,
                attention_mask=attention_mask, logits_to_keep=1)
    return out.logits[:, -1, :].float()


class OneSequenceCache:
    """The batch methods of a cache that holds one sequence (llama.cpp's, a server's): one row is
    fine, more is refused with ``ONE_SEQUENCE_MESSAGE`` (the subclass's words for its backend)."""

    ONE_SEQUENCE_MESSAGE = "this backend runs one sequence at a time"

    def _one(self, rows: int) -> None:
        if rows != 1:
            raise ModelError(self.ONE_SEQUENCE_MESSAGE)

    def batch_repeat_interleave(self, rows: int) -> None:
        self._one(int(rows))

    def batch_select_indices(self, indices: object) -> None:
        self._one(len(indices))  # type: ignore[arg-type]

    def reorder_cache(self, parents: object) -> None:
        self._one(2 if [int(i) for i in parents] != [0] else 1)  # type: ignore[union-attr]


def one_sequence(model: object) -> bool:
    """True for a backend that runs one sequence per cache (llama.cpp's, a remote server's):
    callers that batch rows (Compare's columns) run them one by one instead."""
    return bool(getattr(model, "one_sequence", False))


def cache_length(cache: DynamicCache) -> int:
    return int(cache.get_seq_length())


def crop_cache(cache: DynamicCache, length: int) -> bool:
    """Shorten the cache to ``length`` positions in place. Returns False when this cache
    type cannot be cropped (the caller then re-prefills)."""
    try:
        cache.crop(length)
    except (NotImplementedError, ValueError, AttributeError, TypeError):
        return False
    return cache_length(cache) == length

