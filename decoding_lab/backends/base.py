"""The model seam: what a backend is, what it can do, and what its caches answer.

Every model the lab runs (transformers in process, llama.cpp's own kernels, a server over HTTP)
is a **backend**: an object that makes KV caches and runs token ids through one, returning the
float32 logits of the last position. That is the whole contract (gpt-fast's ``model(x, input_pos)``
plus ``setup_caches``); everything above it (the decode loops, the stepper, the experiments) asks
the backend for a cache and a forward and never which library sits behind it.

What differs between backends is said once, in ``Caps``, and callers read the flag instead of a
model name, a suffix or ``hasattr``:

    >>> Caps(batch=False, exact_logits=False, engine_picks=True).whole_samples
    False

A ``LanguageModel`` is what callers hold (``lm``): a backend plus the tokenizer side (encode,
decode, end-of-sequence ids). ``backends.loaded.LoadedModel`` is the one the registry hands out;
the tests' tiny random model is another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

import torch

from decoding_lab.errors import ModelError

__all__ = ["Caps", "Cache", "Backend", "LanguageModel", "OneSequenceCache", "cache_length", "crop_cache"]


@dataclass(frozen=True)
class Caps:
    """What a backend can do. Each flag names a question a caller would otherwise answer by
    looking at the backend's name."""

    batch: bool = True            # several rows in one forward (beams, n samples, Compare's columns)
    exact_logits: bool = True     # the forward returns the true logits over the whole vocabulary
    #                               (False: filled in from a top-N report, so some numbers are bounds)
    engine_picks: bool = False    # the engine picks its own token at every forward (a server), and
    #                               ``Backend.step_report`` sets that pick beside ours
    whole_samples: bool = False   # the engine can draw whole samples itself (``strategies.engine_samples``)
    transformers: bool = False    # ``lm.model`` is a transformers ``PreTrainedModel``: its own
    #                               ``generate``, a bfloat16 copy and the no-cache paths are available
    bfloat16: bool = False        # the weights may be run in bfloat16 (a CUDA device)
    cuda: bool = False            # the forward runs on a CUDA GPU
    shared: bool = False          # the engine serves other clients too: their requests may share the batch
    #                               of ours (``Backend.continue_greedily`` adds such requests on purpose)


@runtime_checkable
class Cache(Protocol):
    """A KV cache, as the decode loops use it (``transformers.DynamicCache`` is one)."""

    def get_seq_length(self) -> int: ...

    def crop(self, length: int) -> None: ...

    def batch_repeat_interleave(self, rows: int) -> None: ...

    def batch_select_indices(self, indices: torch.Tensor) -> None: ...

    def reorder_cache(self, parents: torch.Tensor) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """The engine side of a model: caches and forwards, nothing about text."""

    caps: Caps
    device: torch.device

    def new_cache(self) -> Cache:
        """An empty cache for one batch of rows."""
        ...

    def forward(self, input_ids: torch.Tensor, cache: Cache, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run ``input_ids`` ``[rows, n]`` through ``cache`` (extending it in place); the float32
        logits of the last position, ``[rows, vocab]``."""
        ...

    def tell_engine(self, cache: Cache, settings: Any) -> None:
        """Under ``caps.engine_picks``: the settings the engine should pick its own token with at
        the next forward on ``cache``. Other backends ignore it."""
        ...

    def step_report(self, cache: Cache, p_final: torch.Tensor, greedy: bool) -> dict[str, Any] | None:
        """What the engine said about the logits ``cache`` last produced (its top-N, its own pick,
        what it kept beside ``p_final``, ours), as JSON; None for a backend that says nothing."""
        ...


@runtime_checkable
class LanguageModel(Protocol):
    """What a decode loop holds: a backend and the tokenizer side of one model."""

    name: str
    vocab_size: int                     # logits width; may exceed the tokenizer's length
    eos_token_ids: tuple[int, ...]
    has_chat_template: bool
    device: torch.device

    @property
    def caps(self) -> Caps: ...

    @property
    def backend(self) -> Backend: ...

    def new_cache(self) -> Cache: ...

    def forward(self, input_ids: torch.Tensor, cache: Cache,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor: ...

    def encode_prompt(self, prompt: str, chat: bool) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_str(self, token_id: int) -> str: ...

    def token_texts(self) -> list[str]: ...


class SilentEngine:
    """The two engine calls for a backend whose engine neither picks nor reports (mix it in)."""

    def tell_engine(self, cache: Cache, settings: Any) -> None:
        return None

    def step_report(self, cache: Cache, p_final: torch.Tensor, greedy: bool) -> dict[str, Any] | None:
        return None


class OneSequenceCache:
    """The batch methods of a cache that holds one sequence (llama.cpp's, a server's): one row is
    fine, more is refused with ``ONE_SEQUENCE_MESSAGE`` (the subclass's words for its backend).
    Such a backend says ``Caps(batch=False)``, and callers that batch rows go one by one."""

    ONE_SEQUENCE_MESSAGE = "this backend runs one sequence at a time"

    def _one(self, rows: int) -> None:
        if rows != 1:
            raise ModelError(self.ONE_SEQUENCE_MESSAGE)

    def batch_repeat_interleave(self, rows: int) -> None:
        self._one(int(rows))

    def batch_select_indices(self, indices: Sequence[int]) -> None:
        self._one(len(indices))

    def reorder_cache(self, parents: Sequence[int]) -> None:
        self._one(2 if [int(i) for i in parents] != [0] else 1)


def cache_length(cache: Cache) -> int:
    return int(cache.get_seq_length())


def cache_bytes(cache: Cache | None) -> int:
    """Bytes a cache holds on its device: its own ``nbytes()`` if it has one (a llama.cpp context, a
    server's cache), else the key and value tensors of a transformers ``DynamicCache`` (``layers``
    in recent versions, ``key_cache`` / ``value_cache`` in older ones). 0 for no cache."""
    if cache is None:
        return 0
    own = getattr(cache, "nbytes", None)
    if callable(own):
        return int(own())
    tensors: list[Any] = []
    for layer in getattr(cache, "layers", None) or []:
        tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
    if not tensors:
        tensors = [*(getattr(cache, "key_cache", None) or []), *(getattr(cache, "value_cache", None) or [])]
    return sum(t.nelement() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def crop_cache(cache: Cache, length: int) -> bool:
    """Shorten the cache to ``length`` positions in place. Returns False when this cache
    type cannot be cropped (the caller then re-prefills)."""
    try:
        cache.crop(length)
    except (NotImplementedError, ValueError, AttributeError, TypeError):
        return False
    return cache_length(cache) == length
