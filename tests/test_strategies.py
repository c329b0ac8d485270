"""Greedy, sampling and beam search on a tiny random-weight Llama (fast).

Parity: greedy and beam search must give exactly what ``model.generate`` gives (token
ids; beam scores to 1e-4). Sampling: reproducible, one prefill for n samples, and draws
that follow softmax(final logits)."""

from __future__ import annotations

import itertools
import json
import math

import pytest
import torch
from tiny_model import make_tiny_lm

from decoding_lab.chain import DeadEndError
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError, Stage
from decoding_lab.strategies import (beam_search, greedy, iter_beam, iter_greedy, iter_sample, sample)
from decoding_lab.strategies.beam import rank_hypotheses
from decoding_lab.strategies.result import BeamHypothesis

PROMPT = [5, 17, 42, 8, 9]
MANY_EOS = tuple(range(2, 96, 10))   # ten EOS ids: beams end often, and n_keep = 11 * num_beams



@pytest.fixture(scope="module")
def lm():
    return make_tiny_lm(vocab_size=96, seed=0, eos=(1,))


@pytest.fixture(scope="module")
def lm_many_eos():
    return make_tiny_lm(vocab_size=96, seed=0, eos=MANY_EOS)


def generate(lm, prompt, **kw):
    return lm.model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             eos_token_id=list(lm.eos_token_ids), pad_token_id=0, do_sample=False, **kw)


class RowTracker(Stage):
    """A stateful stage that keeps each row's tokens through start/advance only, and checks
    them against the history the strategy passes in: back-pointers followed correctly."""

    name = "tracker"
    stateful = True

    def __init__(self) -> None:
        self.rows: list[list[int]] = []
        self.checked = 0

    def start(self, batch_size: int) -> None:
        self.rows = [[] for _ in range(batch_size)]

    def advance(self, parents: list[int], tokens: list[int]) -> None:
        self.rows = [self.rows[p] + [t] for p, t in zip(parents, tokens)]

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        assert history.output().tolist() == self.rows
        self.checked += 1
        return logits.clone()


class BanAll(Stage):
    name = "ban-all"

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        return torch.full_like(logits, float("-inf"))


# ------------------------------------------------------------------------------ greedy
@pytest.mark.parametrize("rp,nr", [(1.0, 0), (1.3, 0), (1.0, 3), (1.3, 3)])
def test_greedy_matches_generate(lm, rp, nr):
    ours = greedy(lm, PROMPT, SamplingSettings(temperature=0, repetition_penalty=rp, no_repeat_ngram_size=nr),
                  max_new_tokens=25)
    theirs = generate(lm, PROMPT, max_new_tokens=25, repetition_penalty=rp, no_repeat_ngram_size=nr)[0, len(PROMPT):]
    assert ours.best.token_ids == theirs.tolist()[: len(ours.best.token_ids)]
    assert len(ours.best.token_ids) == 25 or ours.best.finished


def test_greedy_records(lm_many_eos):
    r = greedy(lm_many_eos, PROMPT, max_new_tokens=30)
    seq = r.best
    assert seq.finished and seq.token_ids[-1] in MANY_EOS           # this model ends quickly
    assert len(seq.logprobs) == len(seq.entropies) == len(seq.token_ids)
    assert seq.score == pytest.approx(sum(seq.logprobs))
    assert all(lp <= 0 for lp in seq.logprobs) and all(h >= 0 for h in seq.entropies)
    assert seq.text == lm_many_eos.decode(seq.token_ids[:-1])       # the EOS is not in the text
    d = json.loads(json.dumps(r.to_json()))
    assert d["sequences"][0]["token_ids"] == seq.token_ids and "score" in d["sequences"][0]
    assert d["strategy"] == "greedy" and d["prompt_len"] == len(PROMPT)


def test_greedy_ignores_temperature(lm):
    a = greedy(lm, PROMPT, SamplingSettings(temperature=1.7), max_new_tokens=10)
    b = greedy(lm, PROMPT, SamplingSettings(temperature=0.0), max_new_tokens=10)
    assert a.best.token_ids == b.best.token_ids


def test_iter_greedy_streams_and_stops(lm):
    snaps = list(iter_greedy(lm, PROMPT, max_new_tokens=6))
    assert [len(s.best.token_ids) for s in snaps] == [1, 2, 3, 4, 5, 6]
    assert [s.done for s in snaps] == [False] * 5 + [True]
    assert snaps[-1].best.token_ids == greedy(lm, PROMPT, max_new_tokens=6).best.token_ids
    calls = itertools.count()
    r = greedy(lm, PROMPT, max_new_tokens=20, should_stop=lambda: next(calls) >= 3)
    assert r.stopped and len(r.best.token_ids) == 3


@pytest.mark.parametrize("kw,match", [
    ({"prompt_ids": []}, "prompt is empty"),
    ({"prompt_ids": [1, 999]}, "prompt token ids"),
    ({"max_new_tokens": 0}, "max_new_tokens"),
    ({"max_new_tokens": 2.5}, "max_new_tokens"),
    ({"settings": {"temperature": 0}}, "SamplingSettings"),
])
def test_greedy_validation(lm, kw, match):
    args = {"prompt_ids": PROMPT, "max_new_tokens": 5, **kw}
    with pytest.raises(SettingsError, match=match):
        greedy(lm, **args)


def test_iter_forms_check_arguments_when_called(lm):
    with pytest.raises(SettingsError, match="prompt is empty"):
        iter_greedy(lm, [], max_new_tokens=3)
    with pytest.raises(SettingsError, match="number of samples"):
        iter_sample(lm, PROMPT, n=0)
    with pytest.raises(SettingsError, match="num_beams"):
        iter_beam(lm, PROMPT, num_beams=0)


def test_dead_end_is_reported(lm):
    for run in (greedy, sample, beam_search):
        with pytest.raises(DeadEndError):
            run(lm, PROMPT, max_new_tokens=3, extra_stages={"ban-all": BanAll()})


# ------------------------------------------------------------------------------ beam search
BEAM_GRID = [
    # num_beams, length_penalty, early_stopping, num_return_sequences, no_repeat_ngram_size
    (2, 1.0, False, 2, 0), (2, 1.0, True, 1, 0), (2, 2.0, "never", 2, 0), (3, 0.0, False, 3, 0),
    (3, -0.5, True, 2, 2), (3, 1.0, "never", 1, 2), (4, 1.0, False, 4, 0), (4, 2.0, True, 2, 0),
    (4, -1.0, "never", 3, 3), (4, 0.5, False, 2, 2),
]


@pytest.mark.parametrize("eos", [(1,), MANY_EOS], ids=["one-eos", "ten-eos"])
def test_beam_matches_generate(eos, lm, lm_many_eos):
    model = lm if eos == (1,) else lm_many_eos
    reasons = set()
    for K, alpha, es, nrs, nr in BEAM_GRID:
        ours = beam_search(model, PROMPT, SamplingSettings(temperature=0, no_repeat_ngram_size=nr), num_beams=K,
                           length_penalty=alpha, early_stopping=es, num_return_sequences=nrs, max_new_tokens=14)
        out = generate(model, PROMPT, num_beams=K, length_penalty=alpha, early_stopping=es,
                       num_return_sequences=nrs, no_repeat_ngram_size=nr, max_new_tokens=14, output_scores=True,
                       return_dict_in_generate=True)
        reasons.add(ours.beam_tree.stop_reason)
        assert len(ours.sequences) == nrs
        for i, seq in enumerate(ours.sequences):
            length = int((out.beam_indices[i] != -1).sum())        # generate pads shorter hypotheses
            theirs = out.sequences[i, len(PROMPT): len(PROMPT) + length].tolist()
            assert seq.token_ids == theirs, (K, alpha, es, nr, i)
            assert seq.score == pytest.approx(float(out.sequences_scores[i]), abs=1e-4)
    if eos == MANY_EOS:   # the grid reaches every way a beam search can end
        assert reasons == {"max_new_tokens", "no_improvement", "early_stopping"}


def test_beam_with_repetition_penalty_matches_generate(lm):
    ours = beam_search(lm, PROMPT, SamplingSettings(temperature=0, repetition_penalty=1.3), num_beams=3,
                       num_return_sequences=2, max_new_tokens=12)
    out = generate(lm, PROMPT, num_beams=3, num_return_sequences=2, repetition_penalty=1.3, max_new_tokens=12,
                   output_scores=True, return_dict_in_generate=True)
    for i, seq in enumerate(ours.sequences):
        length = int((out.beam_indices[i] != -1).sum())
        assert seq.token_ids == out.sequences[i, len(PROMPT): len(PROMPT) + length].tolist()
        assert seq.score == pytest.approx(float(out.sequences_scores[i]), abs=1e-4)


def test_beam_tree_is_consistent(lm_many_eos):
    K, alpha = 3, 1.0
    r = beam_search(lm_many_eos, PROMPT, num_beams=K, length_penalty=alpha, num_return_sequences=3,
                    max_new_tokens=14)
    tree = r.beam_tree
    assert tree is not None and tree.steps and tree.stop_reason
    for st in tree.steps:
        assert len(st.candidates) == 11 * K                            # max(2, 1 + n_eos) * num_beams
        scores = [c.score for c in st.candidates]
        assert scores == sorted(scores, reverse=True)
        assert len(st.live) == K
        for c in st.candidates:
            assert c.status in {"live", "finished", "rejected", "pruned"}
            if c.status == "live":
                assert not c.eos
            if c.status in {"finished", "rejected"}:
                assert c.normalized_score is not None
        # an EOS below the top K is never finished
        assert all(c.status == "pruned" for c in st.candidates[K:] if c.eos)
    hyps = tree.hypotheses
    assert len(hyps) == K
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    for h, seq in zip(hyps, r.sequences):
        assert h.token_ids == seq.token_ids
        assert h.score == pytest.approx(h.raw_score / h.length ** alpha, rel=1e-6)
        assert h.raw_score == pytest.approx(sum(seq.logprobs), abs=1e-4)
        cand = tree.steps[h.step].candidates[h.candidate]
        assert cand.status == "finished" and cand.token_id == h.token_ids[-1]
        # follow the back-pointers from the hypothesis to the root
        prefix = tree.path(h.step - 1, cand.parent) if h.step > 0 else []
        assert prefix + [cand.token_id] == h.token_ids
    json.dumps(r.to_json())


def test_rank_hypotheses_rescores_what_the_search_found(lm_many_eos):
    K, alpha = 3, 1.0
    r = beam_search(lm_many_eos, PROMPT, num_beams=K, length_penalty=alpha, max_new_tokens=14)
    tree = r.beam_tree
    alphas = [-1.0, 0.0, alpha, 2.0]
    ranking = rank_hypotheses(tree, alphas)
    assert ranking.alphas == tuple(alphas)
    # the hypotheses: every candidate that ended inside the top K, in the order the search met them
    ended = [(s, j) for s, st in enumerate(tree.steps) for j, c in enumerate(st.candidates)
             if c.status in ("finished", "rejected")]
    assert [(h.step, h.candidate) for h in ranking.hypotheses] == ended and len(ended) > K
    assert {(h.step, h.candidate) for h in tree.hypotheses} <= set(ended)
    for i, h in enumerate(ranking.hypotheses):
        cand = tree.steps[h.step].candidates[h.candidate]
        prefix = tree.path(h.step - 1, cand.parent) if h.step > 0 else []
        assert h.token_ids == prefix + [cand.token_id] and h.length == len(h.token_ids) == h.step + 1
        assert h.raw_score == cand.score and h.eos == cand.eos
        assert ranking.scores[i] == tuple(h.raw_score / h.length ** a for a in alphas)
        assert ranking.scores[i][2] == pytest.approx(cand.normalized_score, rel=1e-5)  # the search's own α
    for j in range(len(alphas)):
        col = [s[j] for s in ranking.scores]
        best_first = sorted(range(len(col)), key=lambda i: (-col[i], i))
        assert [ranking.ranks[i][j] for i in best_first] == list(range(1, len(col) + 1))
        assert ranking.winners[j] == best_first[0]
    # under the search's own α, the hypotheses it kept keep their order
    kept = [ended.index((h.step, h.candidate)) for h in tree.hypotheses]
    assert [ranking.ranks[i][2] for i in kept] == sorted(ranking.ranks[i][2] for i in kept)


def test_rank_hypotheses_by_hand():
    def hyp(raw, length, step):
        return BeamHypothesis(list(range(length)), "", raw, raw / length, length, step, 0, True)

    hyps = [hyp(-2.0, 2, 1), hyp(-4.0, 4, 3), hyp(-3.0, 6, 5)]
    r = rank_hypotheses(hyps, [0, 1, 2])
    assert r.hypotheses == tuple(hyps)
    assert r.scores == ((-2.0, -1.0, -0.5), (-4.0, -1.0, -0.25), (-3.0, -0.5, -3.0 / 36))
    # α = 0: raw sums; α = 1: the first two tie at -1 and the earlier ranks first; α = 2: longest wins
    assert r.ranks == ((1, 2, 3), (3, 3, 2), (2, 1, 1))
    assert r.winners == (0, 2, 2)
    empty = rank_hypotheses([], [0.5, 1])
    assert empty.hypotheses == () and empty.winners == (None, None)
    for bad in (float("nan"), 11.0, -float("inf")):
        with pytest.raises(SettingsError, match="length penalties"):
            rank_hypotheses(hyps, [1.0, bad])


def test_beam_stateful_stage_follows_back_pointers(lm_many_eos):
    tracker = RowTracker()
    plain = beam_search(lm_many_eos, PROMPT, num_beams=3, max_new_tokens=10)
    tracked = beam_search(lm_many_eos, PROMPT, num_beams=3, max_new_tokens=10, extra_stages={"tracker": tracker})
    assert tracker.checked == len(tracked.beam_tree.steps) > 1
    assert tracked.best.token_ids == plain.best.token_ids


def test_iter_beam_and_stop(lm):
    snaps = list(iter_beam(lm, PROMPT, num_beams=3, max_new_tokens=5))
    assert snaps[-1].done and not any(s.done for s in snaps[:-1])
    assert all(len(s.sequences) == 3 for s in snaps[:-1])
    assert snaps[-1].best.token_ids == beam_search(lm, PROMPT, num_beams=3, max_new_tokens=5).best.token_ids
    calls = itertools.count()
    r = beam_search(lm, PROMPT, num_beams=3, max_new_tokens=20, should_stop=lambda: next(calls) >= 2)
    assert r.stopped and r.beam_tree.stop_reason == "stopped" and len(r.best.token_ids) == 2


@pytest.mark.parametrize("kw,match", [
    ({"num_beams": 0}, "num_beams"),
    ({"num_beams": 2, "num_return_sequences": 3}, "num_return_sequences"),
    ({"early_stopping": "sometimes"}, "early_stopping"),
    ({"early_stopping": 1}, "early_stopping"),
    ({"length_penalty": float("nan")}, "length_penalty"),
])
def test_beam_validation(lm, kw, match):
    with pytest.raises(SettingsError, match=match):
        beam_search(lm, PROMPT, max_new_tokens=3, **kw)


# ------------------------------------------------------------------------------ sampling
def test_sampling_is_reproducible(lm):
    s = SamplingSettings(temperature=1.5, seed=7)
    a = sample(lm, PROMPT, s, n=4, max_new_tokens=12)
    b = sample(lm, PROMPT, s, n=4, max_new_tokens=12)
    c = sample(lm, PROMPT, s.replace(seed=8), n=4, max_new_tokens=12)
    ids = lambda r: [q.token_ids for q in r.sequences]  # noqa: E731
    assert ids(a) == ids(b) and [q.logprobs for q in a.sequences] == [q.logprobs for q in b.sequences]
    assert ids(a) != ids(c)
    assert len(set(map(tuple, ids(a)))) > 1                    # four samples, not four copies
    assert a.settings["seed_used"] == 7


def test_n_samples_share_one_prefill(lm_many_eos):
    shapes: list[tuple[int, int]] = []
    hook = lm_many_eos.model.register_forward_pre_hook(
        lambda mod, args, kwargs: shapes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    try:
        r = sample(lm_many_eos, PROMPT, SamplingSettings(temperature=1.0, seed=3), n=6, max_new_tokens=10)
    finally:
        hook.remove()
    assert shapes[0] == (1, len(PROMPT))                      # the prompt, once
    assert all(cols == 1 for _, cols in shapes[1:])           # then one position per step for all rows
    rows = [b for b, _ in shapes[1:]]
    assert rows[0] == 6 and rows == sorted(rows, reverse=True)  # finished rows leave the batch
    assert any(s.finished for s in r.sequences)
    for s in r.sequences:                                     # nothing after an EOS
        assert all(t not in MANY_EOS for t in s.token_ids[:-1])


def test_sampling_stateful_stage_follows_rows(lm_many_eos):
    tracker = RowTracker()
    r = sample(lm_many_eos, PROMPT, SamplingSettings(temperature=1.2, seed=5), n=5, max_new_tokens=10,
               extra_stages={"tracker": tracker})
    assert tracker.checked == max(len(s.token_ids) for s in r.sequences)


def test_sampler_draws_from_softmax_of_final_logits():
    """A model whose logits are fixed (zero weights, a bias on the head): every draw, in
    every row and step, comes from the same known distribution. 64 x 30 = 1920 draws."""
    lm = make_tiny_lm(vocab_size=8, seed=1, eos=())
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -3.0, 1.5, 0.2])
    head = torch.nn.Linear(lm.model.config.hidden_size, 8, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(logits)
    lm.model.lm_head = head
    s = SamplingSettings(temperature=0.8, top_k=4, seed=123)
    r = sample(lm, [3, 4, 5], s, n=64, max_new_tokens=30)
    draws = [t for q in r.sequences for t in q.token_ids]
    assert len(draws) == 64 * 30
    final = torch.where(logits >= torch.topk(logits, 4).values[-1], logits / 0.8, torch.tensor(float("-inf")))
    p = torch.softmax(final.double(), dim=-1)
    counts = torch.bincount(torch.tensor(draws), minlength=8).double()
    assert counts[p == 0].sum() == 0                              # top-k cut tokens never appear
    expected = p[p > 0] * len(draws)
    chi2 = float(((counts[p > 0] - expected) ** 2 / expected).sum())
    assert chi2 < 20.0                                            # df = 3; p-value of 20 is ~2e-4
    # recorded log-probs are those of the final distribution
    q = r.sequences[0]
    assert q.logprobs == pytest.approx([math.log(float(p[t])) for t in q.token_ids], abs=1e-9)


def test_iter_sample_and_stop(lm):
    s = SamplingSettings(temperature=1.0, seed=2)
    snaps = list(iter_sample(lm, PROMPT, s, n=3, max_new_tokens=5))
    assert len(snaps) == 5 and snaps[-1].done
    final = sample(lm, PROMPT, s, n=3, max_new_tokens=5)
    assert [q.token_ids for q in snaps[-1].sequences] == [q.token_ids for q in final.sequences]
    calls = itertools.count()
    r = sample(lm, PROMPT, s, n=3, max_new_tokens=20, should_stop=lambda: next(calls) >= 4)
    assert r.stopped and all(len(q.token_ids) <= 4 for q in r.sequences)


def test_sampling_at_temperature_zero_is_greedy(lm):
    r = sample(lm, PROMPT, SamplingSettings(temperature=0.0), n=3, max_new_tokens=8)
    g = greedy(lm, PROMPT, max_new_tokens=8)
    assert all(q.token_ids == g.best.token_ids for q in r.sequences)


@pytest.mark.parametrize("n", [0, 65, 1.5])
def test_sampling_validation(lm, n):
    with pytest.raises(SettingsError, match="number of samples"):
        sample(lm, PROMPT, n=n, max_new_tokens=3)


LLAMA_SAMPLERS = SamplingSettings(temperature=0.9, dynatemp_range=0.4, top_n_sigma=2.0, xtc_probability=0.5,
                                  xtc_threshold=0.05, dry_multiplier=0.8, dry_allowed_length=1, top_k=40,
                                  order="llama.cpp", seed=11)


def test_llama_cpp_samplers_give_the_same_tokens_in_the_stepper_and_in_batched_sampling(lm):
    """DRY, XTC, top-n-sigma and dynamic temperature are plain stages: the stepper (one row,
    records) and ``sample`` (a batch, no records) must pick the same tokens with one seed."""
    from decoding_lab.stepper import Stepper
    st = Stepper(lm, PROMPT, LLAMA_SAMPLERS, max_new_tokens=16)
    stepped = [t.chosen_token_id for t in st.steps(16)]
    batched = sample(lm, PROMPT, LLAMA_SAMPLERS, n=1, max_new_tokens=16).sequences[0].token_ids
    assert stepped == batched[: len(stepped)]
    names = [r.name for r in st.traces[0].stages]
    assert names == ["dry", "top-n-sigma", "top-k", "xtc", "temperature"]
    assert any(r.removed_count for t in st.traces for r in t.stages if r.name in ("top-n-sigma", "xtc"))


def test_llama_cpp_samplers_in_greedy_and_beam(lm):
    g = greedy(lm, PROMPT, LLAMA_SAMPLERS.replace(temperature=0.0), max_new_tokens=8)
    b = beam_search(lm, PROMPT, LLAMA_SAMPLERS.replace(temperature=0.0), num_beams=2, max_new_tokens=8)
    assert len(g.best.token_ids) > 0 and len(b.best.token_ids) > 0
    plain = greedy(lm, PROMPT, SamplingSettings(temperature=0.0), max_new_tokens=8)
    dry = greedy(lm, PROMPT, SamplingSettings(temperature=0.0, dry_multiplier=5.0, dry_allowed_length=1,
                                              order="llama.cpp"), max_new_tokens=8)
    # DRY at strength 5 must change a greedy path that repeats itself, and only then
    repeats = len(set(plain.best.token_ids)) < len(plain.best.token_ids)
    assert (dry.best.token_ids != plain.best.token_ids) == repeats
