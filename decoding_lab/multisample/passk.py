"""pass@k: the chance that at least one of k samples is correct, estimated without bias.

The naive way to measure pass@k is to draw k samples per problem and check whether one
is right. Its variance is large. Chen et al. (2021, the Codex paper) draw ``n >= k``
samples, count the ``c`` correct ones and ask: if we picked k of these n at random
(without replacement), how likely is it that *all* k are wrong? That is
``C(n-c, k) / C(n, k)``, so

    pass@k = 1 - C(n-c, k) / C(n, k)

which is an unbiased estimate of ``1 - (1-q)^k`` for the true per-sample success rate q.
The binomials overflow for n in the hundreds; the same number is a short product::

    C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)

(expand both binomials as factorials; everything cancels except c factors
``(i-k)/i``). When ``n - c < k`` every k-subset holds a correct sample: pass@k = 1.

Worked example: 16 samples, 2 correct::

    >>> round(pass_at_k(16, 2, 1), 4)        # = c/n, the mean accuracy
    0.125
    >>> round(pass_at_k(16, 2, 8), 4)        # 1 - C(14,8)/C(16,8) = 1 - 3003/12870
    0.7667
    >>> pass_at_k(16, 2, 15)                 # only 14 wrong samples: any 15 hold a right one
    1.0

A benchmark score is the mean over problems; ``summarize`` adds its uncertainty
*across problems* (the standard error, and optionally a bootstrap interval that
resamples problems). It does not include the sampling noise inside each problem,
which the unbiased estimator already averages over n samples.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from decoding_lab.stages import SettingsError


def _check_counts(n: np.ndarray, c: np.ndarray, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise SettingsError(f"k must be a whole number >= 1, got {k!r}")
    if n.shape != c.shape:
        raise SettingsError(f"n and c must have the same shape, got {n.shape} and {c.shape}")
    if (n < 1).any():
        raise SettingsError(f"every problem needs n >= 1 samples, got n = {int(n.min())}")
    if (c < 0).any() or (c > n).any():
        raise SettingsError("correct counts c must lie in [0, n] for every problem")
    if (n < k).any():
        raise SettingsError(f"pass@{k} needs n >= k samples per problem; one problem has only n = {int(n.min())}")


def pass_at_k_array(n: Sequence[int] | np.ndarray | int, c: Sequence[int] | np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass@k for each problem (vectorised). ``n`` may be one number for all.

    Works in log space: ``log prod (1 - k/i) = sum log1p(-k/i)`` over the c indices
    ``i = n-c+1 .. n``, evaluated for every problem at once on a shared grid of i.

        >>> pass_at_k_array([4, 4, 4], [0, 1, 4], 2).round(3).tolist()
        [0.0, 0.5, 1.0]
    """
    c_arr = np.asarray(c, dtype=np.int64).reshape(-1)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.int64), c_arr.shape).copy()
    _check_counts(n_arr, c_arr, k)
    if c_arr.size == 0:
        return np.zeros(0)
    i = np.arange(1, int(n_arr.max()) + 1, dtype=np.float64)[None, :]            # [1, max_n]
    inside = (i > (n_arr - c_arr)[:, None]) & (i <= n_arr[:, None])                # the c factors
    safe_i = np.maximum(i, k + 1.0)                                                 # keep log1p finite off-mask
    log_all_wrong = np.where(inside, np.log1p(-k / safe_i), 0.0).sum(axis=1)
    out = 1.0 - np.exp(log_all_wrong)
    out[(n_arr - c_arr) < k] = 1.0                                                  # no all-wrong k-subset
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``c`` of ``n`` samples correct."""
    return float(pass_at_k_array([n], [c], k)[0])


def brute_force_pass_at_k(outcomes: Sequence[bool], k: int) -> float:
    """The definition, by enumeration: the fraction of k-subsets of the n samples that
    contain at least one correct one. Exponential in n; for tests and teaching.

        >>> brute_force_pass_at_k([True, False, False, False], 2)   # 3 of the 6 pairs hold the right one
        0.5
    """
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    if not subsets:
        raise SettingsError(f"pass@{k} needs at least k = {k} samples, got {len(outcomes)}")
    return sum(any(outcomes[j] for j in s) for s in subsets) / len(subsets)


def naive_pass_at_k(q: float, k: int) -> float:
    """``1 - (1-q)^k``: pass@k if the k samples were independent with success rate q.
    The unbiased estimator's expectation equals this for independent samples."""
    return 1.0 - (1.0 - q) ** k


@dataclass
class PassAtK:
    """pass@k over a set of problems: the mean, its standard error across problems and
    (when asked for) a percentile bootstrap interval over problems."""

    k: int
    mean: float
    stderr: float
    problems: int
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    per_problem: list[float] = field(default_factory=list, repr=False)

    def to_json(self, per_problem: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"k": self.k, "mean": self.mean, "stderr": self.stderr, "problems": self.problems}
        if self.ci_low is not None:
            d.update(ci_low=self.ci_low, ci_high=self.ci_high, ci_level=self.ci_level)
        if per_problem:
            d["per_problem"] = list(self.per_problem)
        return d


def summarize(n: Sequence[int] | np.ndarray | int, c: Sequence[int] | np.ndarray, k: int, bootstrap: int = 0,
              ci: float = 0.95, seed: int = 0) -> PassAtK:
    """Mean pass@k over problems with its uncertainty.

    ``stderr`` is the sample standard deviation of the per-problem values over
    sqrt(#problems) (0 for a single problem). With ``bootstrap=B > 0`` we also resample
    the problems B times with replacement and report the central ``ci`` percentile interval.

        >>> s = summarize(4, [0, 1, 4, 4], 1)
        >>> s.mean, round(s.stderr, 3)
        (0.5625, 0.258)
    """
    vals = pass_at_k_array(n, c, k)
    m = len(vals)
    if m == 0:
        raise SettingsError("pass@k needs at least one problem")
    stderr = float(vals.std(ddof=1) / math.sqrt(m)) if m > 1 else 0.0
    out = PassAtK(k=int(k), mean=float(vals.mean()), stderr=stderr, problems=m, per_problem=vals.tolist())
    if bootstrap:
        if not 0.0 < ci < 1.0:
            raise SettingsError(f"the confidence level must lie in (0, 1), got {ci}")
        if bootstrap < 10:
            raise SettingsError(f"use at least 10 bootstrap resamples, got {bootstrap}")
        rng = np.random.default_rng(seed)
        means = vals[rng.integers(0, m, size=(int(bootstrap), m))].mean(axis=1)
        lo, hi = np.quantile(means, [(1 - ci) / 2, 1 - (1 - ci) / 2])
        out.ci_low, out.ci_high, out.ci_level = float(lo), float(hi), float(ci)
    return out


def pass_at_k_curve(n: Sequence[int] | np.ndarray | int, c: Sequence[int] | np.ndarray,
                    ks: Sequence[int] | None = None, bootstrap: int = 0, seed: int = 0) -> list[PassAtK]:
    """``summarize`` for every k in ``ks`` (default: 1 .. min n)."""
    n_min = int(np.min(np.asarray(n)))
    return [summarize(n, c, k, bootstrap=bootstrap, seed=seed) for k in (ks or range(1, n_min + 1))]
