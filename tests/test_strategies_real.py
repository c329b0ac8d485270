"""Strategies on the bundled models, against transformers' ``generate``.

About the models' ``generation_config`` (what ``generate`` merges in): the GGUF-loaded
models carry only token ids (SmolLM2: bos 1, eos 2, pad 2; Gemma-3-270M: bos 2, eos 1,
pad 0). ``generate`` fills everything else from transformers' global defaults, among them
``top_k=50``, ``temperature=1.0``, ``max_length=20``. Those warpers only run with
``do_sample=True``, so greedy and beam search are unaffected, but we still pass
``do_sample=False``, ``max_new_tokens``, the EOS ids and the pad id explicitly so nothing
comes from a default.
"""

from __future__ import annotations

import pytest
import torch

from decoding_lab.settings import SamplingSettings
from decoding_lab.strategies import beam_search, greedy, sample

pytestmark = pytest.mark.real



@pytest.fixture(params=["smollm", "gemma"])
def case(request):
    lm = request.getfixturevalue(request.param)
    if lm.has_chat_template:
        ids = lm.encode_prompt("What is the capital of France?", chat=True)
    else:
        ids = lm.encode_prompt("The capital of France is", chat=False)
    return lm, ids


def generate(lm, ids, **kw):
    pad = lm.model.generation_config.pad_token_id
    return lm.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             do_sample=False, eos_token_id=list(lm.eos_token_ids),
                             pad_token_id=pad if pad is not None else lm.eos_token_ids[0], **kw)


@pytest.mark.parametrize("rp,nr", [(1.0, 0), (1.3, 0), (1.0, 3), (1.3, 3)])
def test_greedy_matches_generate(case, rp, nr):
    lm, ids = case
    ours = greedy(lm, ids, SamplingSettings(temperature=0, repetition_penalty=rp, no_repeat_ngram_size=nr),
                  max_new_tokens=12)
    theirs = generate(lm, ids, max_new_tokens=12, repetition_penalty=rp, no_repeat_ngram_size=nr)
    theirs = theirs[0, len(ids):].tolist()
    assert ours.best.token_ids == theirs[: len(ours.best.token_ids)]
    assert len(ours.best.token_ids) == 12 or ours.best.finished


def test_greedy_answer(smollm):
    r = greedy(smollm, smollm.encode_prompt("What is the capital of France?", chat=True), max_new_tokens=20)
    assert r.text == "The capital of France is Paris." and r.best.finished


@pytest.mark.parametrize("K,alpha,es,nrs,nr", [(3, 1.0, False, 2, 0), (2, 0.5, True, 2, 3), (2, 2.0, "never", 1, 0)])
def test_beam_matches_generate(case, K, alpha, es, nrs, nr):
    lm, ids = case
    ours = beam_search(lm, ids, SamplingSettings(temperature=0, no_repeat_ngram_size=nr), num_beams=K,
                       length_penalty=alpha, early_stopping=es, num_return_sequences=nrs, max_new_tokens=10)
    out = generate(lm, ids, num_beams=K, length_penalty=alpha, early_stopping=es, num_return_sequences=nrs,
                   no_repeat_ngram_size=nr, max_new_tokens=10, output_scores=True, return_dict_in_generate=True)
    for i, seq in enumerate(ours.sequences):
        length = int((out.beam_indices[i] != -1).sum())
        assert seq.token_ids == out.sequences[i, len(ids): len(ids) + length].tolist()
        assert seq.score == pytest.approx(float(out.sequences_scores[i]), abs=1e-4)


def test_sampling_reproducible_with_one_prefill(smollm):
    ids = smollm.encode_prompt("Name a colour.", chat=True)
    shapes: list[tuple[int, ...]] = []
    hook = smollm.model.register_forward_pre_hook(
        lambda mod, args, kwargs: shapes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    s = SamplingSettings(temperature=0.9, top_p=0.95, seed=11)
    try:
        a = sample(smollm, ids, s, n=4, max_new_tokens=8)
    finally:
        hook.remove()
    b = sample(smollm, ids, s, n=4, max_new_tokens=8)
    assert [q.token_ids for q in a.sequences] == [q.token_ids for q in b.sequences]
    assert shapes[0] == (1, len(ids)) and all(sh[1] == 1 and sh[0] <= 4 for sh in shapes[1:])
    assert all(q.text for q in a.sequences)
