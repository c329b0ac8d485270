"""Compare's columns as one batch (``strategies.columns``): each column makes the choices its
own strategy makes, the prompt is prefilled once, columns that end leave the batch."""

from __future__ import annotations

import pytest
import torch

from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.strategies import greedy, sample
from decoding_lab.strategies.columns import iter_columns
from tiny_model import make_tiny_lm

PROMPT = [5, 17, 42, 8, 9]
MANY_EOS = tuple(range(2, 96, 10))

COLUMNS = [("greedy", SamplingSettings(temperature=0.0)),
           ("greedy", SamplingSettings(temperature=0.0, repetition_penalty=1.4, no_repeat_ngram_size=2)),
           ("sample", SamplingSettings(temperature=1.3, top_k=20, seed=4)),
           ("sample", SamplingSettings(temperature=0.9, top_p=0.8, min_p=0.05, seed=11, order="llama.cpp"))]


@pytest.fixture(scope="module")
def lm():
    return make_tiny_lm(vocab_size=96, seed=0, eos=(1,))


def alone(lm, strategy, settings, n_tokens):
    run = greedy if strategy == "greedy" else sample
    return run(lm, PROMPT, settings, max_new_tokens=n_tokens)


@pytest.mark.parametrize("k", range(len(COLUMNS)))
def test_one_column_equals_its_strategy(lm, k):
    """A batch of one: the same logits as the strategy alone, so the same tokens, log-probs,
    entropies and settings record."""
    strategy, settings = COLUMNS[k]
    *_, (res,) = iter_columns(lm, PROMPT, [COLUMNS[k]], max_new_tokens=14)
    ref = alone(lm, strategy, settings, 14)
    assert res.strategy == ref.strategy and res.settings == ref.settings
    assert res.best.token_ids == ref.best.token_ids
    assert res.best.logprobs == ref.best.logprobs and res.best.entropies == ref.best.entropies


def test_columns_share_one_prefill_and_end_on_their_own():
    lm = make_tiny_lm(vocab_size=96, seed=0, eos=MANY_EOS)
    shapes: list[tuple[int, int]] = []
    hook = lm.model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)),
                                              with_kwargs=True)
    try:
        snaps = list(iter_columns(lm, PROMPT, COLUMNS, max_new_tokens=12))
    finally:
        hook.remove()
    assert shapes[0] == (1, len(PROMPT))                          # the prompt, once
    rows = [b for b, n in shapes[1:]]
    assert all(n == 1 for _, n in shapes[1:]) and rows[0] == len(COLUMNS)
    assert rows == sorted(rows, reverse=True)                     # ended columns leave the batch
    last = snaps[-1]
    assert all(r.done for r in last) and any(r.best.finished for r in last)
    for r in last:                                                # nothing after an EOS
        assert all(t not in MANY_EOS for t in r.best.token_ids[:-1])
    for i, r in enumerate(last):                                  # a column's snapshot stops growing when it ends
        lengths = [len(s[i].best.token_ids) for s in snaps]
        assert lengths == sorted(lengths) and lengths[-1] == len(r.best.token_ids)


def test_arguments_checked_when_called(lm):
    with pytest.raises(SettingsError, match="greedy or sample"):
        iter_columns(lm, PROMPT, [("beam", None)])
    with pytest.raises(SettingsError, match="at least one column"):
        iter_columns(lm, PROMPT, [])


def test_stop_ends_every_column(lm):
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 3

    *_, last = iter_columns(lm, PROMPT, COLUMNS, max_new_tokens=20, should_stop=stop)
    assert all(r.done and r.stopped for r in last) and all(len(r.best.token_ids) <= 3 for r in last)


@pytest.mark.real
def test_batch_gives_the_single_runs_tokens_on_the_real_model(smollm):
    """On SmolLM2 (float32, these CPUs) the batch's logits differ from batch-1 ones by ~1e-5, far
    below every top-2 margin met on this prompt: the columns write what each strategy alone writes."""
    ids = smollm.encode_prompt("What is the capital of France?", True)
    cols = [("greedy", SamplingSettings(temperature=0.0)), ("sample", SamplingSettings(temperature=0.7, seed=1)),
            ("sample", SamplingSettings(temperature=1.0, top_p=0.9, seed=2))]
    *_, last = iter_columns(smollm, ids, cols, max_new_tokens=24)
    assert last[0].text == "The capital of France is Paris."
    for (strategy, settings), res in zip(cols, last):
        run = greedy if strategy == "greedy" else sample
        ref = run(smollm, ids, settings, max_new_tokens=24)
        assert res.best.token_ids == ref.best.token_ids
        assert res.best.logprobs == pytest.approx(ref.best.logprobs, abs=1e-3)
