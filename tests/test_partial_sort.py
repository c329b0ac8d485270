"""Top-p and typical-p from a partial sort keep exactly the set the full sort keeps.

The partial-sort path (``stages.partial_sort``) either answers with the full-sort rule's
own set or declines (None); these tests check both halves on realistic vocabularies
(49,152 and 262,144 tokens, peaked to flat), on adversarial rows (ties at the boundary, a
running sum exactly on the threshold), against transformers' warpers, and that the fast
path really decides the small-nucleus cases it exists for."""

from __future__ import annotations

import pytest
import torch
from transformers.generation.logits_process import TopPLogitsWarper, TypicalLogitsWarper

from decoding_lab.stages import History, TopP, TypicalP
from decoding_lab.stages.partial_sort import top_p_remove, typical_p_remove


def realistic_rows(vocab: int, seed: int) -> torch.Tensor:
    """Logit rows shaped like a language model's: a noise floor and a few strong candidates,
    at several sharpnesses (the same row divided by T = 0.5 … 3)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for scale in (0.5, 1.0, 2.0, 3.0):
        z = torch.randn(vocab, generator=g) * 2.0
        top = torch.randint(0, vocab, (12,), generator=g)
        z[top] += torch.linspace(14, 4, 12)
        rows.append(z / scale)
    return torch.stack(rows)


def full_top_p(z: torch.Tensor, p: float) -> torch.Tensor:
    return TopP(p)._full_sort(z)


def gap_of(z: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(z, dim=-1)
    ent = -(logp * logp.exp()).nansum(-1, keepdim=True)
    return (-logp - ent).abs()


@pytest.mark.parametrize("vocab", [49152, 262144])
@pytest.mark.parametrize("seed", [0, 1])
def test_top_p_same_set_as_full_sort_and_transformers(vocab, seed):
    z = realistic_rows(vocab, seed)
    small = 0
    for p in (0.5, 0.8, 0.9, 0.95, 0.99):
        remove, decided = top_p_remove(z, p)
        reference = full_top_p(z, p)
        theirs = TopPLogitsWarper(p)(None, z.clone())
        assert torch.equal(reference, theirs)
        assert torch.equal(~remove[decided], torch.isfinite(reference[decided])), f"p={p}: another set"
        # the case it is for: every small nucleus of these rows is settled without the full sort
        nucleus = torch.isfinite(reference).sum(-1)
        assert bool(decided[nucleus <= 32].all()), f"p={p}: nuclei {nucleus.tolist()}, decided {decided.tolist()}"
        small += int((nucleus <= 32).sum())
        ours = TopP(p).transform(z, History.empty(z.shape[0]))
        assert torch.equal(ours, theirs), f"p={p}: the stage differs from transformers"
    assert small >= 5


@pytest.mark.parametrize("vocab", [49152, 262144])
@pytest.mark.parametrize("strict", [False, True])
def test_typical_p_same_set_as_full_sort(vocab, strict):
    z = realistic_rows(vocab, 3)
    gap = gap_of(z)
    decided_rows = 0
    for p in (0.2, 0.5, 0.9, 0.95):
        stage = TypicalP(p, strict=strict)
        reference = stage._full_sort(z, gap)
        remove, decided = typical_p_remove(z, gap, p, strict)
        decided_rows += int(decided.sum())
        assert torch.equal(~remove[decided], torch.isfinite(reference[decided])), f"p={p}: another set"
        out = stage.transform(z, History.empty(z.shape[0]))
        assert torch.equal(out, reference)
        if not strict:
            assert torch.equal(out, TypicalLogitsWarper(p)(None, z.clone()))
    assert decided_rows >= 6, "the partial sort should decide most of these 16 rows"


def test_small_head_walks_past_it_or_declines():
    """With a head of 3 tokens a nucleus of 4 cannot be decided: None, and the stage still
    returns the full sort's answer."""
    z = torch.log(torch.tensor([[0.3, 0.25, 0.2, 0.15, 0.1]]))
    assert top_p_remove(z, 0.85, head=3)[1].tolist() == [False]
    remove, decided = top_p_remove(z, 0.85, head=5)
    assert decided.tolist() == [True] and remove.tolist() == [[False, False, False, False, True]]
    assert torch.equal(TopP(0.85).transform(z, History.empty()), full_top_p(z, 0.85))


@pytest.mark.parametrize("p", [0.5, 0.75, 0.8])
def test_boundary_on_the_threshold_or_in_a_tie_is_left_to_the_full_sort(p):
    # 0.5 / 0.75 / 0.8 are exact running sums; the two 0.25s tie across 0.75's boundary.
    z = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    assert not top_p_remove(z, p)[1].item() or p == 0.8
    for q in (0.5, 0.75, 0.8):
        assert torch.equal(TopP(q).transform(z, History.empty()), TopPLogitsWarper(q)(None, z.clone()))
    tied = torch.tensor([[2.0, 1.0, 1.0, 1.0, -3.0]])
    assert not top_p_remove(tied, 0.6)[1].item()      # the nucleus ends inside the tie of three 1.0s
    assert torch.equal(TopP(0.6).transform(tied, History.empty()), TopPLogitsWarper(0.6)(None, tied.clone()))


def test_typical_tie_across_boundary_declines():
    z = torch.tensor([[1.0, 1.0, 1.0, 1.0]])          # all gaps equal: every boundary is a tie
    assert not typical_p_remove(z, gap_of(z), 0.5, strict=False)[1].item()
    assert not typical_p_remove(z, gap_of(z), 0.5, strict=True)[1].item()


def test_with_cut_tokens_and_rows_that_differ():
    """Rows of a batch decide independently; -inf entries (cut by an earlier stage) stay cut."""
    z = realistic_rows(4096, 5)
    z[:, ::2] = float("-inf")
    for p in (0.3, 0.9):
        out = TopP(p).transform(z, History.empty(z.shape[0]))
        assert torch.equal(out, TopPLogitsWarper(p)(None, z.clone()))
        out = TypicalP(p).transform(z, History.empty(z.shape[0]))
        assert torch.equal(out, TypicalLogitsWarper(p)(None, z.clone()))


def test_input_not_modified():
    z = realistic_rows(1000, 6)
    before = z.clone()
    top_p_remove(z, 0.9)
    typical_p_remove(z, gap_of(z), 0.9, strict=False)
    assert torch.equal(z, before)
