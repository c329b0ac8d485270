"""Metrics of generated text: repetition, diversity, confidence.

* **n-gram repetition rate** (one output): the fraction of its n-grams (n = 4 by default)
  that repeat an n-gram seen *earlier in the same output*. Greedy decoding on a small
  model often loops ("I am a cat. I am a cat. ..."): the rate climbs towards 1.
* **distinct-n** (Li et al. 2016): unique n-grams / total n-grams, over one output or
  pooled over a set of outputs. Over a set it measures how different the samples are
  from each other: n copies of one text score 1/n of a single copy.
* **mean token log-probability**: how confident the model was in what it wrote. Greedy
  and beam outputs score high; high-temperature samples score low.

The units are whatever you pass: token ids (lists of ints) or words. A ``str`` is split
on whitespace.

Worked example::

    >>> ngram_repetition_rate([1, 2, 3, 4, 1, 2, 3, 4], n=4)   # 5 four-grams, the last one repeats the first
    0.2
    >>> distinct_n([1, 2, 1, 2], n=1)                            # 2 unique of 4 unigrams
    0.5
    >>> distinct_n([[1, 2, 3], [1, 2, 3]], n=2)                  # a set of two identical outputs
    0.5
    >>> mean_logprob([-0.5, -1.5])
    -1.0
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Hashable, Sequence

from decoding_lab.errors import SettingsError

if TYPE_CHECKING:  # only for type hints: metrics stay importable without the strategies
    from decoding_lab.strategies.result import GeneratedSequence, GenerationResult

Units = Sequence[Hashable] | str


def _units(output: Units) -> list[Hashable]:
    if isinstance(output, str):
        return list(output.split())
    if isinstance(output, (list, tuple)):
        return list(output)
    raise SettingsError(f"an output must be a list of tokens or a string, got {type(output).__name__}")


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SettingsError(f"n-gram size must be a whole number >= 1, got {n!r}")
    return n


def ngrams(output: Units, n: int) -> list[tuple]:
    """All n-grams of one output, in order (``len - n + 1`` of them, none if shorter than n)."""
    units = _units(output)
    n = _check_n(n)
    return [tuple(units[i : i + n]) for i in range(len(units) - n + 1)]


def ngram_repetition_rate(output: Units, n: int = 4) -> float:
    """Fraction of the n-grams of ``output`` that already occurred earlier in it (0.0 if none)."""
    seen: set[tuple] = set()
    grams = ngrams(output, n)
    repeats = 0
    for g in grams:
        repeats += g in seen
        seen.add(g)
    return repeats / len(grams) if grams else 0.0


def _is_set_of_outputs(outputs: Any) -> bool:
    return isinstance(outputs, (list, tuple)) and bool(outputs) and all(
        isinstance(o, (list, tuple, str)) for o in outputs)


def distinct_n(outputs: Units | Sequence[Units], n: int = 2) -> float:
    """Unique n-grams / total n-grams. ``outputs`` is one output (a list of tokens or a
    string) or a set of outputs (a list of those), pooled. 0.0 when there is no n-gram."""
    group = list(outputs) if _is_set_of_outputs(outputs) else [outputs]
    grams = [g for o in group for g in ngrams(o, n)]
    return len(set(grams)) / len(grams) if grams else 0.0


def mean_logprob(logprobs: Sequence[float]) -> float | None:
    """Mean of the per-token log-probabilities; ``None`` for an empty output. A NaN entry (a
    token a server reported no probability for) is left out."""
    values = [float(x) for x in logprobs if not math.isnan(float(x))]
    return sum(values) / len(values) if values else None


def sequence_metrics(seq: "GeneratedSequence", n_rep: int = 4) -> dict[str, Any]:
    """The per-output metrics of one generated sequence (on its token ids)."""
    return {"tokens": len(seq.token_ids), "repetition_rate": ngram_repetition_rate(seq.token_ids, n_rep),
            "distinct_1": distinct_n(seq.token_ids, 1), "distinct_2": distinct_n(seq.token_ids, 2),
            "mean_logprob": mean_logprob(seq.logprobs), "finished": seq.finished}


def result_metrics(result: "GenerationResult", n_rep: int = 4) -> dict[str, Any]:
    """Per-sequence metrics plus set-level diversity (distinct-1/2 pooled over all outputs)."""
    ids = [s.token_ids for s in result.sequences]
    return {"sequences": [sequence_metrics(s, n_rep) for s in result.sequences],
            "set_distinct_1": distinct_n(ids, 1) if ids else 0.0,
            "set_distinct_2": distinct_n(ids, 2) if ids else 0.0,
            "unique_outputs": len({tuple(i) for i in ids})}
