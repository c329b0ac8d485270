"""Text / sequence metrics: table-driven, exact expected values."""

from __future__ import annotations

import math

import pytest

from decoding_lab.metrics import (distinct_n, mean_logprob, ngram_repetition_rate, ngrams, result_metrics,
                                  sequence_metrics)
from decoding_lab.stages import SettingsError
from decoding_lab.strategies.result import GeneratedSequence, GenerationResult


@pytest.mark.parametrize("tokens,n,expected", [
    ([], 4, 0.0),                                   # no 4-gram at all
    ([1, 2, 3], 4, 0.0),                            # shorter than n
    ([1, 2, 3, 4], 4, 0.0),                         # one 4-gram, nothing earlier
    ([1, 2, 3, 4, 1, 2, 3, 4], 4, 1 / 5),           # 5 four-grams; (1,2,3,4) occurs again at the end
    ([7] * 10, 4, 6 / 7),                           # a loop: every 4-gram after the first repeats
    ([1, 2, 3, 4, 5, 6, 7, 8], 4, 0.0),
    ([1, 2, 1, 2, 1], 2, 2 / 4),                    # bigrams 12 21 12 21: the last two repeat
    ("the cat the cat", 2, 1 / 3),                  # a string is split into words
])
def test_ngram_repetition_rate(tokens, n, expected):
    assert ngram_repetition_rate(tokens, n) == pytest.approx(expected)


@pytest.mark.parametrize("outputs,n,expected", [
    ([1, 2, 3, 4], 1, 1.0),
    ([1, 1, 1, 1], 1, 0.25),
    ([1, 2, 1, 2], 2, 2 / 3),                       # bigrams 12 21 12
    ([], 2, 0.0),
    ([[1, 2, 3], [1, 2, 3]], 2, 2 / 4),             # two identical outputs: half the bigrams are new
    ([[1, 2, 3], [4, 5, 6]], 2, 1.0),               # two disjoint outputs
    ([[1, 2], [3]], 2, 1.0),                        # the short one has no bigram
    (["a b c", "a b d"], 1, 4 / 6),                 # a set of strings
    ("a b a b", 1, 0.5),
])
def test_distinct_n(outputs, n, expected):
    assert distinct_n(outputs, n) == pytest.approx(expected)


def test_ngrams_order():
    assert ngrams([1, 2, 3, 4], 3) == [(1, 2, 3), (2, 3, 4)]


def test_mean_logprob():
    assert mean_logprob([-1.0, -2.0, -3.0]) == pytest.approx(-2.0)
    assert mean_logprob([]) is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_n_is_a_settings_error(bad):
    with pytest.raises(SettingsError, match="n-gram size"):
        ngram_repetition_rate([1, 2, 3], bad)
    with pytest.raises(SettingsError, match="n-gram size"):
        distinct_n([1, 2, 3], bad)


def test_bad_output_type():
    with pytest.raises(SettingsError, match="list of tokens or a string"):
        distinct_n(123, 1)  # type: ignore[arg-type]


def test_metrics_of_results():
    a = GeneratedSequence([5, 6, 7, 8, 5, 6, 7, 8], "x", -4.0, [-0.5] * 8, False, [1.0] * 8)
    b = GeneratedSequence([5, 6, 7, 8, 5, 6, 7, 8], "x", -4.0, [-0.5] * 8, False, [1.0] * 8)
    m = sequence_metrics(a)
    assert m["repetition_rate"] == pytest.approx(0.2)
    assert m["distinct_1"] == pytest.approx(0.5)
    assert m["mean_logprob"] == pytest.approx(-0.5)
    r = result_metrics(GenerationResult("sample", [a, b], 3, {}, 0.0))
    assert r["unique_outputs"] == 1
    assert r["set_distinct_1"] == pytest.approx(4 / 16)
    assert len(r["sequences"]) == 2 and not math.isnan(r["set_distinct_2"])
