"""Expected-value table for every stage, in the style of llama.cpp's ``tests/test-sampling.cpp``.

One line per case: ``(stage, history, probs_in, expected_probs_out)``. The input logits are
``log(probs_in)``; the stage runs on them; ``softmax(output)`` must equal the expected
probabilities to 1e-5 (llama.cpp's own tolerance). Every expected value was worked out by
hand (the derivation is in the comment next to it) and cross-checked with a separate
numpy script; where a case comes from llama.cpp's ``test-sampling.cpp`` it says so, and
the numbers are llama.cpp's.

A second table runs one shared input through the three engines' preset orders, built by
hand as lists of stage objects, to show that the same four knobs give different results
in a different order.
"""

from __future__ import annotations

import math

import pytest
import torch

from decoding_lab.chain import apply_stages
from decoding_lab.stages import (STAGE_CLASSES, FrequencyPenalty, History, LogitBias, MinP, NoRepeatNGram,
                                 PresencePenalty, RepetitionPenalty, Temperature, TopK, TopP, TypicalP)
from decoding_lab.stages.dry import DRY
from decoding_lab.stages.truncation import TopNSigma
from decoding_lab.stages.xtc import XTC

P4 = [0.1, 0.2, 0.3, 0.4]
U5 = [0.2, 0.2, 0.2, 0.2, 0.2]
NONE = History.empty()


def out_hist(*ids: int) -> History:
    """History whose tokens are all *output* (presence / frequency count output only)."""
    return History.from_lists([], list(ids))


# A 5-token vocabulary for DRY's breaker case: token 3 is ":" (a default breaker).
VOCAB5 = ["a", "b", "c", ":", "e"]

TABLE = [
    # ---- temperature: p_T ∝ p ** (1/T) --------------------------------------------------------
    (Temperature(1.0), NONE, P4, P4),                                        # llama.cpp test_temp
    (Temperature(0.5), NONE, P4, [0.033333, 0.133333, 0.3, 0.533333]),        # p²: .01 .04 .09 .16 / .30
    (Temperature(2.0), NONE, P4, [0.162700, 0.230093, 0.281805, 0.325401]),   # √p: .3162 .4472 .5477 .6325 / 1.9436
    # dynamic (temp_ext): H(P4) = 1.279854, H_max = ln 4 = 1.386294, H/H_max = 0.923220
    (Temperature(1.0, 0.0, 1.0), NONE, P4, P4),                               # llama.cpp test_temp_ext, delta 0
    (Temperature(1.0, 0.5, 1.0), NONE, P4,                                    # T = 0.5 + 1.0 * 0.923220 = 1.423220
     [0.134408, 0.218745, 0.290847, 0.356001]),                               #   p ** (1/1.423220), renormalised
    (Temperature(1.0, 0.5, 2.0), NONE, P4,                                    # T = 0.5 + 1.0 * 0.923220² = 1.352335
     [0.129698, 0.216537, 0.292244, 0.361521]),
    (Temperature(0.5, 1.0, 1.0), NONE, P4,                                    # min_T = max(0, -0.5) = 0, max_T = 1.5,
     [0.131900, 0.217582, 0.291595, 0.358922]),                               #   T = 1.5 * 0.923220 = 1.384830
    (Temperature(1.0, 0.5, 1.0), NONE, [0.25] * 4, [0.25] * 4),               # uniform: T = 1.5, still uniform
    (Temperature(1.0, 0.5, 1.0), NONE, [0.7, 0.1, 0.1, 0.1],                  # H = 0.940448, ratio .678390, T 1.178390
     [0.634766, 0.121745, 0.121745, 0.121745]),
    (Temperature(0.5, 0.5, 1.0), NONE, [1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]),   # one candidate
    # ---- top-k -----------------------------------------------------------------------------------
    (TopK(1), NONE, P4, [0, 0, 0, 1.0]),                                      # llama.cpp test_top_k
    (TopK(3), NONE, P4, [0, 0.222222, 0.333333, 0.444444]),                   # .2 .3 .4 / .9
    (TopK(4), NONE, P4, P4),
    (TopK(0), NONE, P4, P4),                                                  # 0 = off
    # ---- top-p (transformers' rule: cut the ascending cumsum <= 1 - p) ---------------------------
    (TopP(0.7), NONE, P4, [0, 0, 0.428571, 0.571429]),                        # llama.cpp test_top_p: .3 .4 / .7
    (TopP(0.8), NONE, P4, [0, 0.222222, 0.333333, 0.444444]),                 # ascending cumsum .1 <= .2 cut
    (TopP(1.0), NONE, P4, P4),
    # ---- min-p: keep p >= min_p * p_max (p_max = 0.4) --------------------------------------------
    (MinP(0.0), NONE, P4, P4),                                                # llama.cpp test_min_p ...
    (MinP(0.24), NONE, P4, P4),                                               #   threshold .096
    (MinP(0.26), NONE, P4, [0, 0.2 / 0.9, 0.3 / 0.9, 0.4 / 0.9]),             #   threshold .104
    (MinP(0.51), NONE, P4, [0, 0, 0.3 / 0.7, 0.4 / 0.7]),                     #   threshold .204
    (MinP(0.76), NONE, P4, [0, 0, 0, 1.0]),                                   #   threshold .304
    # ---- typical-p -------------------------------------------------------------------------------
    (TypicalP(0.5), NONE, [0.97, 0.01, 0.01, 0.01], [1.0, 0, 0, 0]),          # llama.cpp test_typical
    # H = 1.3322; |-ln .2 - H| = .277 < |-ln .4 - H| = .416: the three 0.2s come first, reach .6 > .5
    (TypicalP(0.5), NONE, [0.4, 0.2, 0.2, 0.2], [0, 1 / 3, 1 / 3, 1 / 3]),
    # ---- repetition penalty: ln .2 < 0, so z * r: -1.609 * 50 = -80.5, p ~ 1e-35 -------------------
    (RepetitionPenalty(50.0), History.from_lists([0], []), U5, [0, 0.25, 0.25, 0.25, 0.25]),   # llama.cpp
    (RepetitionPenalty(50.0), History.from_lists([0, 1, 2], []), U5, [0, 0, 0, 0.5, 0.5]),     # test_penalties
    (RepetitionPenalty(50.0), History.from_lists([0, 1, 2, 0, 0], []), U5, [0, 0, 0, 0.5, 0.5]),
    # ---- presence / frequency (output tokens only) -----------------------------------------------
    # token 0 present: .2 e^-2 = .027067; sum .827067 -> .032727, others .2/.827067 = .241818
    (PresencePenalty(2.0), out_hist(0), U5, [0.032727, 0.241818, 0.241818, 0.241818, 0.241818]),
    (PresencePenalty(2.0), History.from_lists([0], []), U5, U5),             # a prompt token does not count
    # counts 0:2, 1:1 -> .2e^-2 = .027067, .2e^-1 = .073576, .2 x 3; sum .700643
    (FrequencyPenalty(1.0), out_hist(0, 0, 1), U5, [0.038632, 0.105012, 0.285452, 0.285452, 0.285452]),
    # ---- no-repeat n-gram: history 1 2 3 1, the bigram "1 2" exists, so token 2 is banned: .1 .2 .4 / .7 ----
    (NoRepeatNGram(2), History.from_lists([1, 2, 3, 1], []), P4, [0.142857, 0.285714, 0, 0.571429]),
    (NoRepeatNGram(0), History.from_lists([1, 2, 3, 1], []), P4, P4),
    # ---- logit bias --------------------------------------------------------------------------------
    (LogitBias({0: -100.0}), NONE, P4, [0, 0.222222, 0.333333, 0.444444]),   # .1 e^-100 ~ 4e-45
    (LogitBias({3: math.log(2.0)}), NONE, P4,                                 # .4 -> .8: .1 .2 .3 .8 / 1.4
     [0.071429, 0.142857, 0.214286, 0.571429]),
    # ---- top-n-sigma: ln P4 = -2.303 -1.609 -1.204 -0.916, mean -1.508, population std 0.5206 ----------
    (TopNSigma(1.0), NONE, P4, [0, 0, 0.428571, 0.571429]),                   # llama.cpp: keep z >= -1.437
    (TopNSigma(0.0), NONE, P4, P4),                                           # llama.cpp: 0 is a no-op
    (TopNSigma(-1.0), NONE, P4, P4),                                          # llama.cpp's default (off)
    (TopNSigma(3.0), NONE, P4, P4),                                           # llama.cpp: keep z >= -2.478
    # ---- XTC (probability 1: the coin always fires; llama.cpp's test uses 0.99 and its own RNG) ------
    (XTC(1.0, 0.09), NONE, [0.4, 0.3, 0.2, 0.1], [0, 0, 0, 1.0]),             # llama.cpp test_xtc "should"
    (XTC(1.0, 0.19), NONE, [0.4, 0.3, 0.2, 0.1], [0, 0, 2 / 3, 1 / 3]),       #   .2 .1 / .3
    (XTC(1.0, 0.29), NONE, [0.4, 0.3, 0.2, 0.1], [0, 0.5, 1 / 3, 1 / 6]),     #   .3 .2 .1 / .6
    (XTC(1.0, 0.39), NONE, [0.4, 0.3, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1]),       # "should not": only .4 passes
    (XTC(1.0, 0.6), NONE, [0.4, 0.3, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1]),        # threshold > .5: off
    (XTC(0.0, 0.1), NONE, [0.4, 0.3, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1]),        # probability 0: off
    # ---- DRY: llama.cpp's five test_dry cases (multiplier, base, allowed_length, last_n) -------------
    # history 0 1: only 2 tokens <= allowed_length 2, nothing to do
    (DRY(1.0, 1.1, 2, 4), History.from_lists([0, 1], []), [0.25] * 4, [0.25] * 4),
    # "0 1" repeats (L = 2) and was followed by 2: penalty 1.0 * 1.1^0 = 1; e^-1 / (3 + e^-1) = .109232
    (DRY(1.0, 1.1, 2, 5), History.from_lists([0, 1, 2, 0, 1], []), [0.25] * 4,
     [0.296923, 0.296923, 0.109232, 0.296923]),
    # "0 1" was followed by 3, but 3 is a breaker (":"): a breaker is never penalised
    (DRY(1.0, 1.1, 2, 6).bind(VOCAB5), History.from_lists([0, 1, 3, 4, 0, 1], []), U5, U5),
    # multiplier 2: e^-2 / (4 + e^-2) = .032727
    (DRY(2.0, 1.1, 2, 5), History.from_lists([0, 1, 2, 0, 1], []), U5,
     [0.241818, 0.241818, 0.032727, 0.241818, 0.241818]),
    # allowed_length 4 > L = 2: free
    (DRY(1.0, 1.1, 4, 7), History.from_lists([0, 1, 2, 3, 4, 0, 1], []), U5, U5),
]

IDS = [f"{i:02d}-{stage!r}" for i, (stage, *_rest) in enumerate(TABLE)]


@pytest.mark.parametrize("stage, history, probs_in, expected", TABLE, ids=IDS)
def test_expected_probabilities(stage, history, probs_in, expected):
    logits = torch.log(torch.tensor([probs_in], dtype=torch.float32))   # log(0) = -inf: already cut
    before = logits.clone()
    out = stage.transform(logits, history)
    assert torch.equal(logits, before), "the stage changed its input in place"
    got = torch.softmax(out, dim=-1)[0]
    want = torch.tensor(expected, dtype=torch.float32)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=0.0, atol=1e-5), f"{stage!r}: got {got.tolist()}, want {expected}"


def test_table_covers_every_stage_class():
    covered = {type(stage) for stage, *_ in TABLE}
    registered = set(STAGE_CLASSES.values())
    assert registered <= covered, f"stages without a table line: {sorted(c.__name__ for c in registered - covered)}"
    assert {TopNSigma, XTC, DRY, Temperature} <= covered


# ---- preset orders --------------------------------------------------------------------------------
# One input, the same four knobs (T, top-k, top-p, min-p), three engines' orders:
#   transformers: repetition, temperature, top-k, top-p, min-p
#   vLLM:         temperature, min-p, top-k, top-p
#   llama.cpp:    top-k, top-p, min-p, temperature
# (our stage objects in each engine's order; the repetition penalty sees an empty history, so it
# is a no-op kept only to show its place.)
ORDER_IN = [0.5, 0.2, 0.15, 0.1, 0.05]


def chain(order: str, T: float, k: int, top_p: float, min_p: float) -> list:
    stages = {"rep": RepetitionPenalty(1.3), "t": Temperature(T), "k": TopK(k), "p": TopP(top_p), "m": MinP(min_p)}
    return [stages[s] for s in {"transformers": ["rep", "t", "k", "p", "m"], "vllm": ["t", "m", "k", "p"],
                                "llama.cpp": ["k", "p", "m", "t"]}[order]]


# Derivations. T = 2 first: sqrt(p) = .70711 .44721 .38730 .31623 .22361 (sum 2.08146)
#   -> p_T = .33972 .21486 .18607 .15193 .10743.
# Knobs A (T 2, top-k 3, top-p 0.8, min-p 0.2):
#   transformers: top-k 3 -> .45868 .29009 .25123; top-p .8: ascending cumsum .25123 > .2, nothing cut;
#                 min-p .2: threshold .0917, nothing cut.
#   vLLM:         min-p .2 on p_T: threshold .0679, nothing cut; then top-k 3 and top-p as above: same result.
#   llama.cpp:    top-k 3 on the raw p -> .58824 .23529 .17647; top-p .8: .17647 <= .2 is cut -> .71429 .28571;
#                 min-p .2: threshold .1429, nothing cut; T = 2: sqrt(.5) : sqrt(.2) -> .61257 .38743.
# Knobs B (T 2, top-k 4, top-p 0.7, min-p 0.5):
#   transformers: top-k 4 -> .38066 .24072 .20847 .17015; top-p .7: .17015 <= .3 cut, .17015 + .20847 > .3
#                 -> .45868 .29009 .25123; min-p .5: threshold .2293, nothing cut.
#   vLLM:         min-p .5 on p_T: threshold .16986 cuts .15193 and .10743 -> .45868 .29009 .25123 (top-k 4
#                 is now a no-op); top-p .7: .25123 <= .3 cut -> .61257 .38743.
#   llama.cpp:    top-k 4 on the raw p -> .52632 .21053 .15789 .10526; top-p .7: .10526 and .26316 <= .3 cut
#                 -> .71429 .28571; min-p .5: threshold .35714 cuts .28571 -> one token; T cannot bring it back.
ORDER_TABLE = [
    ("A", (2.0, 3, 0.8, 0.2), "transformers", [0.458678, 0.290094, 0.251228, 0, 0]),
    ("A", (2.0, 3, 0.8, 0.2), "vllm", [0.458678, 0.290094, 0.251228, 0, 0]),
    ("A", (2.0, 3, 0.8, 0.2), "llama.cpp", [0.612574, 0.387426, 0, 0, 0]),
    ("B", (2.0, 4, 0.7, 0.5), "transformers", [0.458678, 0.290094, 0.251228, 0, 0]),
    ("B", (2.0, 4, 0.7, 0.5), "vllm", [0.612574, 0.387426, 0, 0, 0]),
    ("B", (2.0, 4, 0.7, 0.5), "llama.cpp", [1.0, 0, 0, 0, 0]),
]


@pytest.mark.parametrize("knobs, args, order, expected", ORDER_TABLE,
                         ids=[f"{k}-{o}" for k, _, o, _ in ORDER_TABLE])
def test_preset_orders(knobs, args, order, expected):
    logits = torch.log(torch.tensor(ORDER_IN))
    before = logits.clone()
    out = apply_stages(chain(order, *args), logits[None], History.empty())
    assert torch.equal(logits, before)
    got = torch.softmax(out, dim=-1)[0]
    assert torch.allclose(got, torch.tensor(expected), rtol=0.0, atol=1e-5), f"{order}: got {got.tolist()}"


def test_order_matters():
    """Knobs A: llama.cpp differs from the other two; knobs B: all three differ."""
    results = {}
    for knobs, args, order, _ in ORDER_TABLE:
        logits = torch.log(torch.tensor(ORDER_IN))[None]
        results[knobs, order] = torch.softmax(apply_stages(chain(order, *args), logits, History.empty()), -1)[0]
    assert torch.allclose(results["A", "transformers"], results["A", "vllm"])
    assert not torch.allclose(results["A", "transformers"], results["A", "llama.cpp"], atol=1e-3)
    b = [results["B", o] for o in ("transformers", "vllm", "llama.cpp")]
    assert all(not torch.allclose(b[i], b[j], atol=1e-3) for i in range(3) for j in range(i + 1, 3))
