"""The temperature-0 paths stop where the text ends: at an end-of-sequence token, which is
kept as the path's last token, on every path (cached, full recompute, batched)."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from decoding_lab.backends.base import Caps, SilentEngine
from decoding_lab.determinism import greedy_variants

VOCAB, EOS = 8, 5


class NextToken(torch.nn.Module):
    """A stand-in model: the next token is always (last token + 1), with a logit margin of 1."""

    device = torch.device("cpu")

    def new_cache(self) -> object:
        return SimpleNamespace()

    def forward(self, input_ids, **kw):
        last = input_ids[:, -1]
        logits = torch.zeros(input_ids.shape[0], 1, VOCAB)
        logits[torch.arange(input_ids.shape[0]), 0, (last + 1) % VOCAB] = 1.0
        return SimpleNamespace(logits=logits)


class NextTokenBackend(SilentEngine):
    """``NextToken`` behind the backend protocol (its cache keeps nothing: each forward reads the last id)."""

    caps = Caps(transformers=True)
    device = torch.device("cpu")

    def __init__(self) -> None:
        self.module = NextToken()

    def new_cache(self) -> object:
        return SimpleNamespace()

    def forward(self, input_ids, cache, attention_mask=None):
        return self.module(input_ids).logits[:, -1]

    def forward_uncached(self, input_ids):
        return self.module(input_ids).logits[:, -1]


def test_every_path_stops_at_its_end_of_sequence_token():
    backend = NextTokenBackend()
    lm = SimpleNamespace(model=backend.module, backend=backend, caps=backend.caps, vocab_size=VOCAB,
                         eos_token_ids=[EOS], name="next-token", token_str=str,
                         decode=lambda ids: " ".join(map(str, ids)))
    out = greedy_variants(lm, [1], 40, ("float32, cached", "float32, full recompute", "batched with a longer prompt"))
    assert [r["tokens"] for r in out["runs"]] == [[2, 3, 4, 5]] * 3      # 40 asked, the text ended at 5
    assert all(r["margins"] == [1.0] * 4 for r in out["runs"])
    assert all(d["step"] is None for d in out["divergence"])


def test_a_model_that_is_not_a_torch_module_is_refused_in_one_line():
    """llama.cpp's kernels or a served model: the paths re-run a transformers model's weights
    (full recompute, a bfloat16 copy, a batch), so the run is refused before any path starts."""
    import pytest

    from decoding_lab.backends.llamacpp import LlamaCppBackend
    from decoding_lab.errors import SettingsError
    lm = SimpleNamespace(caps=LlamaCppBackend.caps, vocab_size=VOCAB, eos_token_ids=[EOS],
                         name="smollm2-135m-instruct@llama.cpp", source="llama.cpp", token_str=str, decode=str)
    with pytest.raises(SettingsError, match="runs on llama.cpp: choose a transformers model"):
        greedy_variants(lm, [1], 4, ("float32, cached", "float32, full recompute"))
