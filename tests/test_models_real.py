"""Tests on the real bundled models (GGUF packages installed in the venv). Slow-ish: the first
GGUF conversion takes ~4 s (SmolLM2) and ~12 s (Gemma) on 2 cores (`bench --only gguf`); cached loads a few seconds."""

from __future__ import annotations

import contextlib

import pytest
import torch

from decoding_lab import models as M
from decoding_lab.backends import hf

pytestmark = pytest.mark.real

VOCAB = {"smollm2-135m-instruct": 49152, "gemma-3-270m": 262144}
FIXED_PROMPT = "The quick brown fox jumps over the lazy dog. Once upon a time"


def _installed(name: str) -> bool:
    return {r["name"]: r["installed"] for r in M.list_models()}[name]


@pytest.fixture(scope="session", params=list(VOCAB))
def lm(request) -> M.LoadedModel:
    if not _installed(request.param):
        pytest.skip(f"{request.param}: bundled package not installed ({M.BUNDLED[request.param].install_hint})")
    return M.get_model(request.param)


def _logits(loaded: M.LoadedModel, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return loaded.model(torch.tensor([ids], device=loaded.device)).logits[0].float().cpu()


def _greedy(loaded: M.LoadedModel, ids: list[int], n: int = 12) -> str:
    with torch.inference_mode():
        out = loaded.model.generate(torch.tensor([ids], device=loaded.device), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                    max_new_tokens=n, do_sample=False, pad_token_id=loaded.eos_token_ids[0])
    return loaded.decode(out[0, len(ids):].tolist())


def test_basic_facts(lm):
    assert lm.vocab_size == VOCAB[lm.name]
    assert lm.source in ("bundled-gguf", "cache")
    assert not lm.model.training and lm.model.dtype == torch.float32
    assert lm.eos_token_ids and len(set(lm.eos_token_ids)) == len(lm.eos_token_ids)
    assert _logits(lm, lm.encode_prompt("Hello", chat=False)).shape[-1] == lm.vocab_size
    assert lm.token_str(lm.encode_prompt(" the", chat=False)[-1]).strip() == "the"


def test_chat_templates(lm):
    if lm.name == "smollm2-135m-instruct":
        assert lm.has_chat_template
        ids = lm.encode_prompt("Hi", chat=True)
        assert lm.decode(ids).endswith("<|im_start|>assistant\n")
    else:  # Gemma 3 270M is a base model
        assert not lm.has_chat_template
        with pytest.raises(M.ModelError, match="raw mode"):
            lm.encode_prompt("Hi", chat=True)
        assert lm.encode_prompt("Hi", chat=False)[0] == lm.tokenizer.bos_token_id  # Gemma wants <bos>


def test_capital_of_france(lm):
    if lm.has_chat_template:
        ids = lm.encode_prompt("What is the capital of France?", chat=True)
    else:
        ids = lm.encode_prompt("Q: What is the capital of France?\nA:", chat=False)  # a base model wants a pattern
    assert "Paris" in _greedy(lm, ids)


def test_cache_matches_gguf(lm, monkeypatch):
    """The converted cache reproduces the GGUF load bit for bit (weights, config, tokenizer); that
    load built gguf's tensor-name table once (transformers asks for it once per module)."""
    from decoding_lab.backends import gguf_reading
    tables, real = [], gguf_reading.one_name_map

    @contextlib.contextmanager
    def counted():
        with real() as once:
            tables.append(once)
            yield once
    monkeypatch.setattr(gguf_reading, "one_name_map", counted)
    gguf_model, gguf_tok = hf._load_gguf(*M.BUNDLED[lm.name].locate_gguf())
    info = tables[0].cache_info()
    assert info.misses == 1 and info.hits > 100, info
    gguf = hf.loaded_from(lm.name, gguf_model.eval(), gguf_tok, "bundled-gguf")
    # the fixture's load wrote (or found) the cache; a fixture that found it is already a cache load
    warm = lm if lm.source == "cache" else M.load_model(lm.name)
    assert warm.source == "cache"
    assert gguf_model.config.vocab_size == warm.vocab_size
    assert (warm.eos_token_ids, warm.has_chat_template) == (gguf.eos_token_ids, gguf.has_chat_template)
    assert warm.tokenizer.chat_template == gguf_tok.chat_template
    for chat in ([False, True] if gguf.has_chat_template else [False]):
        assert warm.encode_prompt(FIXED_PROMPT, chat) == gguf.encode_prompt(FIXED_PROMPT, chat)
    ids = gguf.encode_prompt(FIXED_PROMPT, chat=False)
    assert torch.equal(_logits(warm, ids), _logits(gguf, ids))
    assert torch.equal(_logits(lm, ids), _logits(gguf, ids))
