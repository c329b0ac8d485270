"""``LoadedModel``: a backend plus the tokenizer side of one model, as the registry hands it out.

The weights behind ``backend`` are shared read-only by every visitor; what belongs to one
session (a cache, a random generator, the tokens so far) lives in that session's objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from decoding_lab import limits
from decoding_lab.backends.base import Backend, Cache, Caps
from decoding_lab.errors import ModelError

__all__ = ["LoadedModel", "one_line"]


def one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (error messages quote foreign text)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class LoadedModel:
    name: str  # registry name, hub id, ``<bundled>@llama.cpp`` or a served model's name
    backend: Backend  # caches and forwards; shared read-only between users
    tokenizer: PreTrainedTokenizerBase
    vocab_size: int  # logits width; may be larger than len(tokenizer) (padding rows)
    has_chat_template: bool
    source: str  # where the weights came from, for people: "bundled-gguf" | "cache" | "hub" | "llama.cpp" | "remote"
    load_seconds: float
    eos_token_ids: tuple[int, ...]
    #: The engine's own object: the ``PreTrainedModel`` under ``caps.transformers`` (its ``generate``,
    #: a bfloat16 copy), else the backend itself.
    model: Any = None
    _n_tokens: int = field(init=False, repr=False)  # len(tokenizer) takes ~1 ms for Gemma's vocab
    _texts: list[str] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._n_tokens = len(self.tokenizer)
        if self.model is None:
            self.model = self.backend

    # --- the backend's side -----------------------------------------------------------
    @property
    def caps(self) -> Caps:
        return self.backend.caps

    @property
    def device(self) -> torch.device:
        return self.backend.device

    def new_cache(self) -> Cache:
        return self.backend.new_cache()

    @property
    def generation_config(self) -> Any | None:
        """The model's own sampling defaults (transformers' ``GenerationConfig``), which
        transformers' and vLLM's engine defaults start from; None where the engine has none here."""
        return getattr(self.model, "generation_config", None) if self.caps.transformers else None

    def forward(self, input_ids: torch.Tensor, cache: Cache, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.backend.forward(input_ids, cache, attention_mask)

    # --- the tokenizer's side ---------------------------------------------------------
    def token_texts(self) -> list[str]:
        """Every token's text, decoded once per process and shared read-only (DRY's sequence
        breakers are matched against it). Rows past the tokenizer's length are empty."""
        if self._texts is None:
            texts = self.tokenizer.batch_decode([[i] for i in range(self._n_tokens)])
            self._texts = texts + [""] * max(0, int(self.vocab_size) - len(texts))
        return self._texts

    def encode_prompt(self, prompt: str, chat: bool) -> list[int]:
        """Token ids for a prompt. chat=True wraps it as one user turn plus the assistant header."""
        if not isinstance(prompt, str):
            raise ModelError(f"the prompt must be text, got {type(prompt).__name__}")
        limits.check_prompt_text(prompt)  # before the tokenizer spends time on a huge text
        if chat:
            if not self.has_chat_template:
                raise ModelError(f"model {self.name} has no chat template; use raw mode")
            try:  # render to text: the template writes BOS and role markers itself ...
                text = self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
            except Exception as e:  # (some templates reject a lone user turn)
                raise ModelError(f"the chat template of {self.name} failed ({one_line(e, 120)}); use raw mode") from None
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]  # ... so add none twice
        else:  # raw: the tokenizer's own defaults (Gemma prepends <bos>, SmolLM2 adds nothing)
            ids = self.tokenizer(prompt)["input_ids"]
        if not ids:
            raise ModelError.coded("empty_prompt")
        return list(ids)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(list(ids))  # special tokens kept: the lab shows what the model saw

    def token_str(self, token_id: int) -> str:
        """The text of one token (a byte-level piece such as 'Ġthe' comes back as ' the')."""
        if not 0 <= token_id < self._n_tokens:
            return f"<unused {token_id}>"  # a logits row with no tokenizer entry
        return self.tokenizer.decode([token_id])
