"""A tiny random-weight causal LM: a real transformers backend (``backends.hf.HFBackend``) behind
the ``backends.base.LanguageModel`` protocol, with a one-token-per-character tokenizer.

Fast tests run the real stepper, KV cache and strategies on it in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from decoding_lab.backends.base import Cache, Caps
from decoding_lab.backends.hf import HFBackend


@dataclass
class TinyLM:
    model: LlamaForCausalLM
    vocab_size: int
    name: str = "tiny-random-llama"
    has_chat_template: bool = False
    eos_token_ids: tuple[int, ...] = (1,)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    backend: HFBackend = field(init=False)

    def __post_init__(self) -> None:
        self.backend = HFBackend(self.model)

    @property
    def caps(self) -> Caps:
        return self.backend.caps

    def new_cache(self) -> Cache:
        return self.backend.new_cache()

    def forward(self, input_ids: torch.Tensor, cache: Cache, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.backend.forward(input_ids, cache, attention_mask)

    def encode_prompt(self, prompt: str, chat: bool = False) -> list[int]:
        # One token per character, shifted past the special ids 0 and 1.
        return [2 + (ord(c) % (self.vocab_size - 2)) for c in prompt]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.token_str(i) for i in ids)

    def token_str(self, token_id: int) -> str:
        return f"<{token_id}>"

    def token_texts(self) -> list[str]:
        return [self.token_str(i) for i in range(self.vocab_size)]


def make_tiny_lm(vocab_size: int = 96, seed: int = 0, eos: tuple[int, ...] = (1,)) -> TinyLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=0, eos_token_id=list(eos), pad_token_id=0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    # Random init gives nearly uniform logits; scale the head so distributions have shape.
    with torch.no_grad():
        model.lm_head.weight.mul_(40.0)
    return TinyLM(model=model, vocab_size=vocab_size, eos_token_ids=eos)
