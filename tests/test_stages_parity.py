"""Parity with transformers' own logits processors on random and adversarial logits.

For each stage and parameter we demand the *same kept set* and the *same logits*
(hence the same probabilities) as transformers, batch by batch. Adversarial inputs:
exact ties, -inf entries, a one-hot row, a constant row, huge and tiny scales."""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import (MinPLogitsWarper, NoRepeatNGramLogitsProcessor,
                                                    RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
                                                    TopKLogitsWarper, TopPLogitsWarper, TypicalLogitsWarper)

from decoding_lab.stages import History, MinP, NoRepeatNGram, RepetitionPenalty, Temperature, TopK, TopP, TypicalP

VOCAB = 64


def logit_batches() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(1234)
    rand = torch.randn(6, VOCAB, generator=g) * 3
    ties = torch.randint(0, 4, (4, VOCAB), generator=g).float()          # many exact ties
    with_inf = torch.randn(4, VOCAB, generator=g)
    with_inf[:, ::3] = float("-inf")
    one_hot = torch.full((2, VOCAB), float("-inf"))
    one_hot[0, 5] = 0.0
    one_hot[1, 7] = 12.0
    const = torch.zeros(2, VOCAB)
    scaled = torch.cat([torch.randn(2, VOCAB, generator=g) * 40, torch.randn(2, VOCAB, generator=g) * 1e-3])
    peaked = torch.randn(3, VOCAB, generator=g)
    peaked[:, 0] += 15
    return [("random", rand), ("ties", ties), ("with_inf", with_inf), ("one_hot", one_hot), ("constant", const),
            ("scaled", scaled), ("peaked", peaked)]


BATCHES = logit_batches()
IDS = [name for name, _ in BATCHES]


def input_ids(batch: int, length: int = 12, seed: int = 7) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch, length), generator=g)


def assert_same(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    assert torch.equal(torch.isfinite(ours), torch.isfinite(theirs)), "kept sets differ"
    assert torch.equal(ours, theirs), "logits differ"
    p_ours, p_theirs = torch.softmax(ours, -1), torch.softmax(theirs, -1)
    assert torch.equal(p_ours.nan_to_num(-1), p_theirs.nan_to_num(-1))


CASES = [
    ("temperature", [0.3, 0.7, 1.0, 1.5, 3.0], Temperature, TemperatureLogitsWarper),
    ("top-k", [1, 2, 5, 40, VOCAB, VOCAB + 10], TopK, TopKLogitsWarper),
    ("top-p", [0.05, 0.5, 0.9, 0.95, 0.999], TopP, TopPLogitsWarper),
    ("min-p", [0.01, 0.05, 0.1, 0.5, 1.0], MinP, MinPLogitsWarper),
    ("typical-p", [0.2, 0.5, 0.9, 0.99], TypicalP, TypicalLogitsWarper),
    ("repetition", [0.5, 1.2, 2.0], RepetitionPenalty, RepetitionPenaltyLogitsProcessor),
]


@pytest.mark.parametrize("batch_name,scores", BATCHES, ids=IDS)
@pytest.mark.parametrize("name,values,ours_cls,theirs_cls", CASES, ids=[c[0] for c in CASES])
def test_parity_with_transformers(batch_name, scores, name, values, ours_cls, theirs_cls):
    ids = input_ids(scores.shape[0])
    for v in values:
        before = scores.clone()
        ours = ours_cls(v)(ids, scores)
        theirs = theirs_cls(v)(ids, scores.clone())
        assert torch.equal(scores, before), f"{name} modified its input in place"
        assert_same(ours, theirs)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_no_repeat_ngram_parity(n):
    g = torch.Generator().manual_seed(n)
    ids = torch.randint(0, 5, (4, 20), generator=g)  # a small alphabet makes repeats likely
    scores = torch.randn(4, VOCAB, generator=g)
    before = scores.clone()
    ours = NoRepeatNGram(n)(ids, scores)
    theirs = NoRepeatNGramLogitsProcessor(n)(ids, scores.clone())
    assert torch.equal(scores, before)
    assert_same(ours, theirs)
    assert (~torch.isfinite(ours)).any(), "the test should exercise at least one banned token"


def test_stage_record_describes_the_cut():
    z = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    out, rec = TopP(0.8).apply(z, History.empty())
    assert rec.kept == 2 and rec.removed_count == 2
    assert rec.removed_mass == pytest.approx(0.20, abs=1e-6)
    p = torch.tensor([0.5, 0.3]) / 0.8
    assert rec.entropy_after == pytest.approx(float(-(p * p.log()).sum()), abs=1e-6)
    assert rec.removed.tolist() == [False, False, True, True]
