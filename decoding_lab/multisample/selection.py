"""Choosing one answer out of n samples: self-consistency and best-of-n.

**Self-consistency** (Wang et al. 2022): sample n answers and keep the most frequent
final answer. Wrong reasoning paths tend to scatter over many answers while right
ones agree, so the vote cancels scattered errors. It needs comparable answers
(numbers, letters, short strings) and temperature > 0: n greedy samples are one
sample n times.

Tie-breaking rule (documented, deterministic): among the answers with the most votes,
take the one whose voters have the highest *total* log-probability (sum over its
samples of their sequence log-probs); if log-probs are not given or also tie, take
the answer seen *first*. Samples whose answer could not be extracted (``None``) do not
vote; if none could be extracted the vote returns ``None``.

    >>> majority_vote(["7", "8", "7", None, "8"], logprobs=[-3.0, -1.0, -4.0, -0.5, -2.0]).answer
    '8'

(``7`` and ``8`` have two votes each; 8's voters total -3.0, 7's total -7.0.)

**Best-of-n**: score each sample and keep the best. With a *verifier* (unit tests,
answer matching) the score is pass/fail and best-of-n succeeds whenever any sample
passes: its accuracy is exactly pass@n. With a model-internal score (the sequence
log-prob, or the mean log-prob per token that does not favour short outputs) it is
a reranker with no access to correctness.

    >>> best_of_n([-5.0, -2.0, -9.0]).index          # highest sequence log-prob
    1
    >>> best_of_n([0.0, 1.0, 1.0], tie_break=[-4.0, -6.0, -1.0]).index   # verifier ties -> log-prob
    2
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

from decoding_lab.stages import SettingsError


@dataclass(frozen=True)
class Vote:
    """Result of a majority vote."""

    answer: Hashable | None
    votes: int                 # samples that voted for ``answer``
    voters: int                # samples with an extracted answer
    total: int                 # all samples
    counts: dict               # answer -> votes, in first-seen order
    tied: tuple                # the answers that shared the top count (len > 1: the tie rule decided)

    @property
    def share(self) -> float:
        """Fraction of *all* samples that voted for the winner (a confidence signal)."""
        return self.votes / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"answer": self.answer, "votes": self.votes, "voters": self.voters, "total": self.total,
                "counts": {str(k): v for k, v in self.counts.items()}, "tied": [str(t) for t in self.tied]}


def majority_vote(answers: Sequence[Hashable | None], logprobs: Sequence[float] | None = None) -> Vote:
    """Self-consistency over extracted answers (see the module docstring for the tie rule)."""
    if logprobs is not None and len(logprobs) != len(answers):
        raise SettingsError(f"got {len(answers)} answers but {len(logprobs)} log-probs")
    counts: Counter = Counter()
    mass: dict[Hashable, float] = {}
    order: dict[Hashable, int] = {}
    for i, a in enumerate(answers):
        if a is None:
            continue
        counts[a] += 1
        order.setdefault(a, i)
        mass[a] = mass.get(a, 0.0) + (float(logprobs[i]) if logprobs is not None else 0.0)
    if not counts:
        return Vote(None, 0, 0, len(answers), {}, ())
    top = max(counts.values())
    tied = [a for a in order if counts[a] == top]                      # first-seen order
    winner = max(tied, key=lambda a: (mass[a], -order[a]))             # log-prob mass, then first seen
    return Vote(winner, top, sum(counts.values()), len(answers), {a: counts[a] for a in order}, tuple(tied))


def majority_correct(answers: Sequence[Hashable | None], correct: Sequence[bool],
                     logprobs: Sequence[float] | None = None) -> bool:
    """Is the self-consistency answer right? ``correct[i]`` says whether sample i was
    right; the winner is right when any sample that voted for it was."""
    vote = majority_vote(answers, logprobs)
    return vote.answer is not None and any(c for a, c in zip(answers, correct) if a == vote.answer)


def majority_at_k(answers: Sequence[Hashable | None], correct: Sequence[bool], k: int, trials: int = 200,
                  logprobs: Sequence[float] | None = None, seed: int = 0) -> float:
    """Self-consistency accuracy with a budget of k samples, estimated from n >= k by
    voting on random k-subsets (``trials`` of them; exact enumeration when that is smaller)."""
    n = len(answers)
    if not 1 <= k <= n:
        raise SettingsError(f"majority@k needs 1 <= k <= n = {n}, got k = {k}")
    if k == n:
        return float(majority_correct(answers, correct, logprobs))
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        idx = sorted(rng.sample(range(n), k))
        lp = [logprobs[i] for i in idx] if logprobs is not None else None
        hits += majority_correct([answers[i] for i in idx], [correct[i] for i in idx], lp)
    return hits / trials


@dataclass(frozen=True)
class Pick:
    index: int
    score: float


def best_of_n(scores: Sequence[float], tie_break: Sequence[float] | None = None) -> Pick:
    """Index of the highest score; ties go to the higher ``tie_break`` value, then to the
    earlier sample."""
    if not scores:
        raise SettingsError("best-of-n needs at least one sample")
    if tie_break is not None and len(tie_break) != len(scores):
        raise SettingsError(f"got {len(scores)} scores but {len(tie_break)} tie-break values")
    tb = tie_break if tie_break is not None else [0.0] * len(scores)
    i = max(range(len(scores)), key=lambda j: (scores[j], tb[j], -j))
    return Pick(i, float(scores[i]))


def best_of_n_verified(texts: Sequence[str], verifier: Callable[[str], float],
                       logprobs: Sequence[float] | None = None) -> Pick:
    """Best-of-n with a verifier (``verifier(text) -> score``, e.g. 1.0 pass / 0.0 fail).
    Ties (e.g. several passing samples) go to the higher sequence log-prob."""
    return best_of_n([float(verifier(t)) for t in texts], logprobs)


def sequence_score(logprobs: Sequence[float], how: str = "sum") -> float:
    """A model-internal score for best-of-n: ``sum`` (sequence log-prob; favours short
    outputs) or ``mean`` (per-token log-prob)."""
    if how == "sum":
        return float(sum(logprobs))
    if how == "mean":
        return float(sum(logprobs) / len(logprobs)) if logprobs else float("-inf")
    raise SettingsError(f"unknown sequence score {how!r}; use 'sum' or 'mean'")


def best_of_n_accuracy(scores: Sequence[float], correct: Sequence[bool], n: int) -> float:
    """Expected accuracy of best-of-``n`` by ``scores`` when the n are drawn at random (without
    replacement) from the samples given: the best-of-n counterpart of the unbiased pass@k.

    Sort the N samples by score. The best of a random n-subset lies at score level v exactly when
    the subset holds a sample at v and none above it: (C(b + m, n) - C(b, n)) / C(N, n) of the
    subsets, with m samples at v and b below it. Ties at the top are broken at random, so the pick
    is right with chance (right ones at v) / m. With a verifier as the score (1 pass, 0 fail) this
    is exactly pass@n; with a proxy it is what reranking by that proxy buys.

        >>> best_of_n_accuracy([0.0, 1.0, 1.0, 0.0], [False, True, True, False], 2)   # verifier: pass@2
        0.8333333333333334
        >>> best_of_n_accuracy([3.0, 2.0, 1.0], [False, True, True], 3)               # proxy picks wrong
        0.0
        >>> best_of_n_accuracy([1.0, 1.0], [True, False], 2)                          # a tie: a coin flip
        0.5
    """
    import math
    if len(scores) != len(correct) or not scores:
        raise SettingsError(f"got {len(scores)} scores and {len(correct)} verdicts; need as many, at least one")
    total = len(scores)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= total:
        raise SettingsError(f"n must be a whole number in 1..{total}, got {n!r}")
    levels: dict[float, list[int]] = {}
    for s, c in zip(scores, correct):
        levels.setdefault(float(s), [0, 0])
        levels[float(s)][0] += 1
        levels[float(s)][1] += bool(c)
    below, acc = 0, 0.0
    for v in sorted(levels):
        m, right = levels[v]
        acc += (math.comb(below + m, n) - math.comb(below, n)) / math.comb(total, n) * right / m
        below += m
    return acc
