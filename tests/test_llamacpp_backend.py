"""The llama.cpp backend: both bundled GGUF models stepped by llama.cpp's own kernels.

Checks what a user relies on: greedy steps are llama.cpp's argmax, rewinding and branching
reproduce the same logits, a copied cache is independent, batched calls and names without a
GGUF are refused with one line, and the same file gives a different greedy answer than the
transformers float32 path (the Temperature-0 tab's "same file, two engines")."""

from __future__ import annotations

import copy
import gc
import weakref

import pytest
import torch

from decoding_lab.determinism import greedy_variants
from decoding_lab.errors import ModelError
from decoding_lab.models import get_model
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper

pytestmark = pytest.mark.real
GREEDY = SamplingSettings(temperature=0.0)


@pytest.fixture(scope="module", params=["smollm2-135m-instruct", "gemma-3-270m"])
def on_llamacpp(request):
    return get_model(request.param + "@llama.cpp")


def test_steps_are_llamacpp_argmax_and_rewind_reproduces_them(on_llamacpp):
    lm = on_llamacpp
    assert lm.source == "llama.cpp" and lm.vocab_size > 1000
    st = Stepper.from_prompt(lm, "The capital of France is", chat=False, settings=GREEDY)
    traces = st.steps(6)
    assert [t.chosen_token_id for t in traces] == st.tokens and len(st.tokens) == 6
    first = list(st.tokens)
    st.rewind(2)
    assert st.tokens == first[:2]
    st.steps(4)
    assert st.tokens == first  # the cropped cache gives the same argmaxes again
    twin = copy.deepcopy(st)
    twin.rewind(0)
    twin.step(force_token_id=first[0] + 1)
    assert st.tokens == first and twin.tokens[0] == first[0] + 1  # a copy does not touch the original


def test_logits_equal_a_fresh_prefill(on_llamacpp):
    """Incremental decoding through the KV cache = reading the whole text at once, to float noise."""
    lm = on_llamacpp
    ids = lm.tokenizer("Once upon a time there was")["input_ids"]
    cache = lm.new_cache()
    lm.forward(torch.tensor([ids[:3]]), cache)
    for t in ids[3:-1]:
        lm.forward(torch.tensor([[t]]), cache)
    step = lm.forward(torch.tensor([[ids[-1]]]), cache)[0]
    whole = lm.forward(torch.tensor([ids]), lm.new_cache())[0]
    assert int(step.argmax()) == int(whole.argmax())
    assert float((step - whole).abs().max()) < 0.05


def test_a_dropped_or_outgrown_cache_frees_its_context(on_llamacpp):
    """A cache's llama_context is freed when the cache goes (llama-cpp-python's own context stays
    alive as long as its model, which kept every visitor's context in a server), and a cache that
    grows frees the smaller context it moved out of."""
    lm = on_llamacpp
    cache = lm.new_cache()
    lm.forward(torch.tensor([[5, 6, 7]]), cache)
    small = cache.ctx
    counted = cache.nbytes()
    assert counted > cache.n_ctx * lm.backend.kv_bytes_per_token      # KV plus one batch's compute buffer
    lm.forward(torch.tensor([[8] * (cache.n_ctx + 1)]), cache)          # past the context: it doubles
    assert cache.ctx is not small and not small._free.alive and cache.nbytes() > counted
    gone = weakref.ref(cache.ctx)
    del cache, small
    gc.collect()
    assert gone() is None


def test_batched_calls_and_models_without_gguf_get_one_line(on_llamacpp):
    with pytest.raises(ModelError, match="one sequence at a time"):
        on_llamacpp.forward(torch.tensor([[1, 2], [3, 4]]), on_llamacpp.new_cache())
    with pytest.raises(ModelError, match="has no GGUF file"):
        get_model("HuggingFaceTB/SmolLM2-360M@llama.cpp")


def test_same_file_two_engines_part_at_the_first_token():
    lm = get_model("smollm2-135m-instruct")
    ids = lm.encode_prompt("What is the capital of France?", chat=True)
    out = greedy_variants(lm, ids, 8, ("float32, cached", "llama.cpp kernels, same GGUF"))
    assert out["texts"]["float32, cached"].startswith("The capital of France is Paris")
    (div,) = out["divergence"]
    assert div["step"] == 0 and div["reference_token"] != div["variant_token"]
    assert 0 < div["reference_margin"] < 2.0   # a close call on the float32 path
