"""The four llama.cpp samplers: top-n-sigma, XTC, DRY and dynamic temperature.

Hand-built cases with exact expected kept sets or logits (the arithmetic is in the
comments, done the way llama.cpp's ``src/llama-sampling.cpp`` does it), validation
messages, no in-place changes, independent batch rows, and the properties each
sampler is sold on (top-n-sigma ignores temperature; DRY is stopped by breakers; XTC's
coin is a function of the text)."""

from __future__ import annotations

import math
import random

import pytest
import torch

from decoding_lab.chain import run_chain
from decoding_lab.stages import History, SettingsError, Temperature
from decoding_lab.stages.temperature import TemperatureExtra
from decoding_lab.stages.dry import DRY
from decoding_lab.stages.truncation import TopNSigma
from decoding_lab.stages.xtc import XTC

INF = float("inf")
FLT_MAX = float(torch.finfo(torch.float32).max)


def logp(*probs: float) -> torch.Tensor:
    return torch.log(torch.tensor([probs], dtype=torch.float32))


def kept(out: torch.Tensor) -> list[list[bool]]:
    return torch.isfinite(out).tolist()


def hist(*ids: int) -> History:
    return History.from_lists(list(ids), [])


def assert_rows_independent(stage, logits: torch.Tensor, history: History) -> None:
    """Running the batch at once gives, row by row, what running each row alone gives."""
    together = stage.transform(logits, history)
    for r in range(logits.shape[0]):
        h = History(history.ids[r : r + 1], history.prompt_len) if history.ids.shape[0] > 1 else history
        assert torch.equal(together[r : r + 1], stage.transform(logits[r : r + 1], h)), f"row {r}"


# =============================================================================================
# top-n-sigma
# =============================================================================================
def test_top_n_sigma_uses_the_population_std():
    # z = 4, 2.2, 0, 0: mean 1.55; squared deviations 6.0025 .4225 2.4025 2.4025 (sum 11.23)
    # population std sqrt(11.23 / 4) = 1.67556 -> threshold 4 - 1.67556 = 2.32444: 2.2 is cut;
    # the sample std sqrt(11.23 / 3) = 1.93476 would give 2.06524 and keep it.
    out = TopNSigma(1.0).transform(torch.tensor([[4.0, 2.2, 0.0, 0.0]]), History.empty())
    assert out.tolist() == [[4.0, -INF, -INF, -INF]]
    # n = 1.2: threshold 4 - 2.01067 = 1.98933 keeps 2.2
    out = TopNSigma(1.2).transform(torch.tensor([[4.0, 2.2, 0.0, 0.0]]), History.empty())
    assert kept(out) == [[True, True, False, False]]


def test_top_n_sigma_statistics_skip_cut_tokens():
    # 3 2 1 0 with two -inf: the stats are over the four finite logits only (mean 1.5,
    # std 1.118), exactly as if the -inf tokens were not there (llama.cpp skips -INFINITY).
    z = torch.tensor([[3.0, -INF, 2.0, 1.0, -INF, 0.0]])
    out = TopNSigma(1.0).transform(z, History.empty())
    assert out.tolist() == [[3.0, -INF, 2.0, -INF, -INF, -INF]]


def test_top_n_sigma_ignores_temperature():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4, 200, generator=g) * 2
    for n in (0.5, 1.0, 2.5):
        base = torch.isfinite(TopNSigma(n).transform(z, History.empty()))
        for t in (0.3, 1.7, 4.0):
            assert torch.equal(torch.isfinite(TopNSigma(n).transform(z / t, History.empty())), base)


def test_top_n_sigma_keeps_the_best_and_single_candidates():
    z = torch.tensor([[5.0, -INF, -INF], [1.0, 1.0, 1.0]])     # one candidate; a constant row (std 0)
    out = TopNSigma(3.0).transform(z, History.empty())
    assert torch.equal(out, z)
    g = torch.Generator().manual_seed(1)
    z = torch.randn(8, 64, generator=g) * 5
    out = TopNSigma(0.01).transform(z, History.empty())
    assert torch.equal(out.argmax(-1), z.argmax(-1)) and bool(torch.isfinite(out).any(-1).all())


def test_top_n_sigma_off_params_validation():
    assert not TopNSigma(0).is_active() and not TopNSigma(-1).is_active() and TopNSigma(0.5).is_active()
    assert TopNSigma(2).params() == {"n": 2.0}
    z = logp(0.1, 0.2, 0.3, 0.4)
    assert torch.equal(TopNSigma(-1).transform(z, History.empty()), z)
    for bad, text in [(-2, "-2"), (101, "101"), (float("nan"), "nan"), ("1", "'1'"), (True, "True")]:
        with pytest.raises(SettingsError, match="top-n-sigma") as e:
            TopNSigma(bad)
        assert text in str(e.value)


def test_top_n_sigma_no_in_place_and_rows_independent():
    g = torch.Generator().manual_seed(2)
    z = torch.randn(5, 50, generator=g)
    z[1, ::2] = -INF
    before = z.clone()
    TopNSigma(1.0).transform(z, History.empty())
    assert torch.equal(z, before)
    assert_rows_independent(TopNSigma(1.0), z, History.empty())


# =============================================================================================
# XTC
# =============================================================================================
def test_xtc_removes_all_top_choices_but_the_least_likely():
    z = logp(0.4, 0.3, 0.2, 0.1)
    # threshold .25: .4 and .3 pass; .3 (the least likely of them) stays, .4 goes
    assert kept(XTC(1.0, 0.25).transform(z, History.empty())) == [[False, True, True, True]]
    # threshold .35: only .4 passes, one top choice is not enough
    out = XTC(1.0, 0.35).transform(z, History.empty())
    assert torch.equal(out, z)
    # the surviving logits are untouched (XTC only cuts)
    out = XTC(1.0, 0.15).transform(z, History.empty())
    assert out[0, 2:].tolist() == z[0, 2:].tolist()


def test_xtc_counts_candidates_only():
    # threshold 0: every candidate is a "top choice"; the least likely *candidate* (.2) stays.
    # Token 3 (p = 0, logit -inf) is not a candidate; counting it would cut everything.
    z = logp(0.5, 0.3, 0.2, 0.0)
    assert kept(XTC(1.0, 0.0).transform(z, History.empty())) == [[False, False, True, False]]
    # fewer than two candidates: nothing to do
    z = logp(1.0, 0.0, 0.0)
    assert torch.equal(XTC(1.0, 0.0).transform(z, History.empty()), z)


def test_xtc_tie_keeps_the_highest_id():
    # .3 .3 .3 all pass .2; a stable descending sort puts them in id order, the last one (id 2) stays
    z = logp(0.3, 0.3, 0.3, 0.1)
    assert kept(XTC(1.0, 0.2).transform(z, History.empty())) == [[False, False, True, True]]


def test_xtc_coin_is_a_function_of_seed_and_text():
    x = XTC(0.5, 0.1, seed=3)
    a = torch.tensor([5, 6, 7, 8])
    assert x.coin(a) == x.coin(a.clone()) == XTC(0.9, 0.2, seed=3).coin(a)      # only seed and ids matter
    coins = [x.coin(torch.tensor([5, 6, 7, t])) for t in range(40)]
    assert len(set(coins)) == 40 and all(0.0 <= c < 1.0 for c in coins)
    assert 5 < sum(c <= 0.5 for c in coins) < 35                               # roughly uniform
    assert XTC(0.5, seed=4).coin(a) != x.coin(a)
    assert XTC(0.5, seed=None).coin(a) == XTC(0.5, seed=0).coin(a)
    assert x.coin(torch.tensor([], dtype=torch.long)) == x.coin(History.empty().ids[0])


def test_xtc_fires_exactly_when_the_coin_is_below_probability():
    x = XTC(0.5, 0.25, seed=11)
    z = logp(0.4, 0.3, 0.2, 0.1)
    seen = set()
    for t in range(30):
        h = hist(1, 2, t)
        fired = not torch.equal(x.transform(z, h), z)
        assert fired == (x.coin(h.ids[0]) <= 0.5)
        seen.add(fired)
        _, rec = x.apply(z[0], h)
        assert rec.extra.fired is fired
    assert seen == {True, False}


def test_xtc_same_text_same_coin_in_any_row():
    """The batched strategies and the stepper see the same coin for the same text."""
    x = XTC(0.5, 0.05, seed=1)
    g = torch.Generator().manual_seed(5)
    z = torch.randn(6, 30, generator=g)
    ids = torch.randint(0, 30, (6, 9), generator=g)
    history = History(ids, 4)
    together = x.transform(z, history)
    perm = [3, 0, 5, 1, 4, 2]
    permuted = x.transform(z[perm], History(ids[perm], 4))
    assert torch.equal(permuted, together[perm])
    assert_rows_independent(x, z, history)
    assert any(not torch.equal(together[r], z[r]) for r in range(6))          # some rows fired ...
    assert any(torch.equal(together[r], z[r]) for r in range(6))              # ... and some did not


def test_xtc_off_params_validation_no_in_place():
    assert not XTC(0.0).is_active() and not XTC(1.0, 0.51).is_active() and XTC(0.1, 0.5).is_active()
    assert XTC(0.5, 0.2, seed=7).params() == {"probability": 0.5, "threshold": 0.2, "seed": 7}
    z = logp(0.4, 0.3, 0.2, 0.1)
    before = z.clone()
    XTC(1.0, 0.1).transform(z, History.empty())
    assert torch.equal(z, before)
    assert torch.equal(XTC(1.0, 0.6).transform(z, History.empty()), z)
    for kwargs, text in [({"probability": 1.5}, "XTC probability must be <= 1, got 1.5"),
                         ({"probability": -0.1}, "XTC probability must be >= 0, got -0.1"),
                         ({"probability": 0.5, "threshold": 2}, "XTC threshold must be <= 1, got 2"),
                         ({"probability": 0.5, "seed": -1}, "seed must be >= 0, got -1"),
                         ({"probability": 0.5, "seed": 1.5}, "seed must be a whole number, got 1.5")]:
        with pytest.raises(SettingsError) as e:
            XTC(**kwargs)
        assert str(e.value) == text


# =============================================================================================
# DRY
# =============================================================================================
def test_dry_penalises_the_token_that_continues_a_repeat():
    # history 1 2 3 1 2: the suffix "1 2" (L = 2) occurred before, followed by 3.
    # penalty = 0.8 * 1.75 ** (2 - 2) = 0.8 on token 3 only (llama.cpp: L counts the tokens
    # already in the history, not the candidate).
    out = DRY(0.8, 1.75, 2).transform(torch.zeros(1, 6), hist(1, 2, 3, 1, 2))
    assert out.tolist() == [[0.0, 0.0, 0.0, torch.tensor(-0.8).item(), 0.0, 0.0]]
    assert DRY(0.8, 1.75, 2).repeat_lengths([1, 2, 3, 1, 2]) == {3: 2}


def test_dry_penalty_grows_with_the_repeat_length():
    # history 1 2 3 4 1 2 3: "1 2 3" (L = 3) occurred, followed by 4.
    h = hist(1, 2, 3, 4, 1, 2, 3)
    z = torch.zeros(1, 6)
    assert DRY(0.8, 1.75, 2).transform(z, h)[0, 4].item() == pytest.approx(-0.8 * 1.75, abs=1e-6)   # 1.4
    assert DRY(0.8, 1.75, 3).transform(z, h)[0, 4].item() == pytest.approx(-0.8, abs=1e-6)          # 1.75^0
    assert torch.equal(DRY(0.8, 1.75, 4).transform(z, h), z)                                        # L < 4
    # the penalty is subtracted from whatever the logit was
    z = torch.tensor([[0.5, 1.0, 2.0, 3.0, 4.0, 5.0]])
    out = DRY(1.0, 2.0, 1).transform(z, h)
    # allowed_length 1: "3" (L = 1 at position 2 -> next 4) and "1 2 3" (L = 3) -> max L = 3 for token 4
    assert out[0, 4].item() == pytest.approx(4.0 - 1.0 * 2.0 ** 2)
    assert DRY(1.0, 2.0, 1).repeat_lengths([1, 2, 3, 4, 1, 2, 3]) == {4: 3}


def test_dry_breaker_stops_a_match():
    # history 7 1 2 3 7 1 2, with token 7 = ":" (a breaker).
    texts = ["a", "b", "c", "d", "e", "f", "g", ":"]
    h = hist(7, 1, 2, 3, 7, 1, 2)
    z = torch.zeros(1, 8)
    # Unbound (no breakers known): "7 1 2" (L = 3) occurred, followed by 3: 0.8 * 1.75 = 1.4.
    assert DRY(0.8).transform(z, h)[0, 3].item() == pytest.approx(-1.4, abs=1e-6)
    # Bound: the match may not reach back past the latest ":" -> L = min(3, 2) = 2: 0.8.
    assert DRY(0.8).bind(texts).transform(z, h)[0, 3].item() == pytest.approx(-0.8, abs=1e-6)
    # allowed_length 3: only 2 tokens since the breaker, so no repeat can be long enough.
    assert torch.equal(DRY(0.8, allowed_length=3).bind(texts).transform(z, h), z)
    assert DRY(0.8, allowed_length=3).transform(z, h)[0, 3].item() == pytest.approx(-0.8, abs=1e-6)


def test_dry_never_penalises_a_breaker():
    # history 1 2 7 1 2: "1 2" was followed by 7; unbound, 7 gets 0.8; bound as ":", nothing.
    texts = ["a", "b", "c", "d", "e", "f", "g", ":"]
    h = hist(1, 2, 7, 1, 2)
    z = torch.zeros(1, 8)
    assert DRY(0.8).transform(z, h)[0, 7].item() == pytest.approx(-0.8, abs=1e-6)
    assert torch.equal(DRY(0.8).bind(texts).transform(z, h), z)


def test_dry_bind_maps_breaker_strings_to_ids():
    texts = ["hello", "a:b", "\n\n", "x", '"q', " *", "plain"]
    assert DRY(1.0).bind(texts).breaker_ids == {1, 2, 4, 5}
    assert DRY(1.0, breakers=("x",)).bind(texts).breaker_ids == {3}
    assert DRY(1.0, breakers=()).bind(texts).breaker_ids == set()
    assert DRY(1.0, breakers=("", "\n")).breakers == ("\n",)                  # empty ones are skipped
    d = DRY(1.0)
    assert d.bind(texts) is d


def test_dry_window_and_prompt():
    z = torch.zeros(1, 5)
    # last_n = 4 sees only "2 3 1 2": the suffix "2" (L = 1) repeats, below allowed_length 2
    assert torch.equal(DRY(0.8, last_n=4).transform(z, hist(1, 2, 3, 1, 2)), z)
    for last_n in (-1, 5, 100):
        assert DRY(0.8, last_n=last_n).transform(z, hist(1, 2, 3, 1, 2))[0, 3].item() == pytest.approx(-0.8)
    assert not DRY(0.8, last_n=0).is_active()
    assert torch.equal(DRY(0.8, last_n=0).transform(z, hist(1, 2, 3, 1, 2)), z)
    # prompt and output count alike (llama-server feeds the prompt to the sampler)
    split = History.from_lists([1, 2, 3], [1, 2])
    assert torch.equal(DRY(0.8).transform(z, split), DRY(0.8).transform(z, hist(1, 2, 3, 1, 2)))


def test_dry_exponent_is_clamped_as_in_llama_cpp():
    # llama.cpp: max_exponent = int(88.7228391f / logf(base)) in float32
    assert DRY(1.0, 1.75).penalty(2 + 1000) == 1.75 ** 158
    assert DRY(1.0, 1.75).penalty(2 + 5) == 1.75 ** 5
    assert DRY(0.5, 1.0).penalty(2 + 1000) == 0.5                              # base 1: flat
    # base 2: float32 gives max_exponent 128 and 2^128 overflows float32; we clamp to its max
    assert DRY(1.0, 2.0).penalty(2 + 1000) == FLT_MAX
    out = DRY(100.0, 100.0, 1).transform(torch.zeros(1, 8), hist(*([5, 6] * 40)))
    assert bool(torch.isfinite(out).all()) and out[0, 5].item() == -FLT_MAX


def _reference_repeat_lengths(tokens, allowed, breakers, last_n):
    """DRY from its definition, O(n^2): for every earlier position f, the longest l such that the
    l tokens ending at f equal the last l tokens, capped at the tokens since the latest breaker."""
    w = list(tokens[-last_n:]) if last_n > 0 else list(tokens)
    n = len(w)
    if n <= allowed:
        return {}
    since_breaker = next((i for i, t in enumerate(reversed(w)) if t in breakers), n)
    if since_breaker < allowed:
        return {}
    out = {}
    for f in range(n - 1):
        l = 0
        while l <= f and w[f - l] == w[n - 1 - l]:
            l += 1
        l = min(l, since_breaker)
        if l >= allowed:
            out[w[f + 1]] = max(out.get(w[f + 1], 0), l)
    return out


def test_dry_z_algorithm_matches_the_definition():
    rng = random.Random(0)
    for trial in range(400):
        alphabet = rng.choice([2, 3, 4, 6])
        tokens = [rng.randrange(alphabet) for _ in range(rng.randrange(0, 70))]
        if trial % 3 == 0:                            # long periodic stretches stress the Z-box reuse
            period = [rng.randrange(alphabet) for _ in range(rng.randrange(1, 5))]
            tokens = (period * 30)[: rng.randrange(1, 80)] + tokens[:10]
        allowed = rng.randrange(1, 5)
        last_n = rng.choice([-1, -1, 5, 12, 40])
        breakers = set(rng.sample(range(alphabet), rng.choice([0, 0, 1])))
        d = DRY(1.0, allowed_length=allowed, last_n=last_n)
        d.breaker_ids = frozenset(breakers)
        assert d.repeat_lengths(tokens) == _reference_repeat_lengths(tokens, allowed, breakers, last_n), \
            (tokens, allowed, breakers, last_n)


def test_dry_rows_independent_and_no_in_place():
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 4, (5, 40), generator=g)
    z = torch.randn(5, 6, generator=g)
    before = z.clone()
    out = DRY(0.8, allowed_length=2).transform(z, History(ids, 10))
    assert torch.equal(z, before)
    assert not torch.equal(out, z)
    assert_rows_independent(DRY(0.8, allowed_length=2), z, History(ids, 10))


def test_dry_off_params_validation():
    assert not DRY(0.0).is_active() and DRY(0.8).is_active()
    assert DRY(0.8).params() == {"multiplier": 0.8, "base": 1.75, "allowed_length": 2, "last_n": -1,
                                 "breakers": ["\n", ":", "\"", "*"]}
    z = torch.zeros(1, 5)
    assert torch.equal(DRY(0.0).transform(z, hist(1, 2, 3, 1, 2)), z)
    for kwargs, text in [({"multiplier": -1}, "DRY multiplier must be >= 0, got -1"),
                         ({"multiplier": 101}, "DRY multiplier must be <= 100, got 101"),
                         ({"multiplier": 1, "base": 0.9}, "DRY base must be >= 1, got 0.9"),
                         ({"multiplier": 1, "allowed_length": 0}, "DRY allowed length must be >= 1, got 0"),
                         ({"multiplier": 1, "allowed_length": 1.5},
                          "DRY allowed length must be a whole number, got 1.5"),
                         ({"multiplier": 1, "last_n": -2}, "DRY window must be >= -1, got -2")]:
        with pytest.raises(SettingsError) as e:
            DRY(**kwargs)
        assert str(e.value) == text
    with pytest.raises(SettingsError, match="list of strings"):
        DRY(1.0, breakers="\n:")
    with pytest.raises(SettingsError, match="must be strings, got 3"):
        DRY(1.0, breakers=("\n", 3))


# =============================================================================================
# dynamic temperature (llama.cpp temp_ext)
# =============================================================================================
def test_static_temperature_unchanged():
    z = torch.tensor([[2.0, 0.5, -1.0, -INF]])
    assert torch.equal(Temperature(0.7).transform(z, History.empty()), z / 0.7)
    assert torch.equal(Temperature(0.7, 0.0, 3.0).transform(z, History.empty()), z / 0.7)
    assert Temperature(0.7).params() == {"T": 0.7}
    assert Temperature(0.7, exponent=2.0).params() == {"T": 0.7}
    assert not Temperature(1.0).is_active() and not Temperature(1.0, 0.0, 2.0).is_active()
    _, rec = Temperature(0.7).apply(z[0], History.empty())
    assert rec.extra is None


def test_dynamic_temperature_uniform_gets_the_top_of_the_range():
    # uniform over 4: H = ln 4 = H_max, ratio 1 -> T = T + delta = 1.5
    t = Temperature(1.0, 0.5)
    _, rec = t.apply(torch.zeros(4), History.empty())
    assert rec.extra.T_used == pytest.approx(1.5, abs=1e-12)
    # over the 3 finite candidates only: still uniform among them, ratio 1
    _, rec = t.apply(torch.tensor([0.0, 0.0, -INF, 0.0]), History.empty())
    assert rec.extra.T_used == pytest.approx(1.5, abs=1e-12)
    assert t.is_active() and t.params() == {"T": 1.0, "delta": 0.5, "exponent": 1.0}


def test_dynamic_temperature_exact_values():
    # p = .1 .2 .3 .4: H = 1.279854, H_max = ln 4 = 1.386294, ratio 0.923220
    z = logp(0.1, 0.2, 0.3, 0.4)
    cases = [((1.0, 0.5, 1.0), 1.423220),          # 0.5 + 1.0 * 0.923220
             ((1.0, 0.5, 2.0), 1.352335),          # 0.5 + 1.0 * 0.923220 ** 2
             ((0.5, 1.0, 1.0), 1.384830),          # min_T = max(0, -0.5) = 0; 1.5 * 0.923220
             ((2.0, 0.25, 0.5), 2.230422)]         # 1.75 + 0.5 * sqrt(0.923220) = 1.75 + 0.5 * 0.960843
    for args, t_used in cases:
        stage = Temperature(*args)
        _, rec = stage.apply(z[0], History.empty())
        assert rec.extra.T_used == pytest.approx(t_used, abs=1e-6)
        out = stage.transform(z, History.empty())
        assert torch.allclose(out, z / t_used, atol=1e-6)


def test_dynamic_temperature_one_hot_ish_gets_the_bottom():
    # 10 0 0 0: p = .99986, 4.5e-5 x3; H = 0.001498, ratio 0.001081 -> T = 0.5 + 0.001081
    _, rec = Temperature(1.0, 0.5).apply(torch.tensor([10.0, 0.0, 0.0, 0.0]), History.empty())
    assert rec.extra.T_used == pytest.approx(0.501081, abs=1e-6)


def test_dynamic_temperature_edge_cases():
    t = Temperature(2.0, 0.5)
    # one candidate: llama.cpp returns early, nothing is scaled (not even by T = 2)
    z = torch.tensor([[3.0, -INF, -INF]])
    assert torch.equal(t.transform(z, History.empty()), z)
    assert t.apply(z[0], History.empty())[1].extra.T_used == 1.0
    # dyn_T = 0 (min_T = 0 and H = 0: exp(-1000) underflows): llama.cpp keeps only the best token
    g = Temperature(0.5, 0.5)
    z = torch.tensor([[0.0, -1000.0, -1000.0]])
    assert g.transform(z, History.empty()).tolist() == [[0.0, -INF, -INF]]
    assert g.apply(z[0], History.empty())[1].extra.T_used == 0.0
    # dyn_T tiny but positive (H ~ 1.5e-37): 90 / dyn_T overflows float32; we take the T -> 0 limit
    z = torch.tensor([[90.0, 0.0, 0.0]])
    assert g.transform(z, History.empty()).tolist() == [[90.0, -INF, -INF]]
    assert g.apply(z[0], History.empty())[1].extra.T_used == 0.0


def test_dynamic_temperature_rows_independent_no_in_place():
    g = torch.Generator().manual_seed(4)
    z = torch.randn(6, 20, generator=g) * torch.tensor([[0.1], [1.0], [3.0], [6.0], [10.0], [1.0]])
    z[5, 1:] = -INF
    before = z.clone()
    t = Temperature(1.0, 0.7, 1.5)
    t.transform(z, History.empty())
    assert torch.equal(z, before)
    assert_rows_independent(t, z, History.empty())
    used = t.dynamic_temperature(z)
    assert bool((used[:5] > 0.3).all() & (used[:5] < 1.7).all()) and math.isnan(float(used[5]))
    assert float(used[0]) > float(used[4])               # flatter row -> hotter


def test_dynamic_temperature_validation():
    for kwargs, text in [({"delta": -0.1}, "dynamic temperature range must be >= 0, got -0.1"),
                         ({"delta": 101}, "dynamic temperature range must be <= 100, got 101"),
                         ({"delta": 0.5, "exponent": 0}, "dynamic temperature exponent must be > 0, got 0"),
                         ({"delta": 0.5, "exponent": 101}, "dynamic temperature exponent must be <= 100, got 101")]:
        with pytest.raises(SettingsError) as e:
            Temperature(1.0, **kwargs)
        assert str(e.value) == text
    with pytest.raises(SettingsError, match="greedy"):
        Temperature(0.0, 0.5)


# =============================================================================================
# all four in a recorded chain
# =============================================================================================
def test_new_stages_in_a_recorded_chain():
    texts = ["a", "b", "c", ":", "e", "f"]
    stages = [DRY(0.8).bind(texts), TopNSigma(2.0), XTC(1.0, 0.1), Temperature(1.0, 0.5)]
    z = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.0, -1.0])
    final, records, _ = run_chain(stages, z, hist(0, 1, 2, 0, 1))
    assert [r.name for r in records] == ["dry", "top-n-sigma", "xtc", "temperature"]
    assert records[0].removed_count == 0 and records[0].shift > 0        # DRY only penalises (token 2)
    assert records[2].extra.fired is True
    assert isinstance(records[3].extra, TemperatureExtra) and records[3].extra.T_used > 0
    assert bool(torch.isfinite(final).any())
