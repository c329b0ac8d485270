"""Statistics of one next-token distribution.

Everything here takes logits (a float tensor over the full vocabulary, ``-inf`` for
tokens that a stage has cut) and returns plain Python numbers, so that records and
traces stay JSON-friendly. Natural logarithms throughout: entropy is in nats.

Worked example (three tokens with logits 2, 1, 0)::

    >>> z = torch.tensor([2.0, 1.0, 0.0])
    >>> round(entropy(z), 4)           # H of softmax(z)
    0.8324
    >>> round(dH_dT(z, 1.0), 4)        # Var_p(z) / T^3 at T = 1
    0.4244
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

# The probability thresholds below which we report "tail" mass.
TAIL_THRESHOLDS: tuple[float, ...] = (1e-3, 1e-4, 1e-5)


def log_probs(logits: torch.Tensor) -> torch.Tensor:
    """log-softmax in float64 (stable for 262k-wide vocabularies); -inf stays -inf."""
    return torch.log_softmax(logits.double(), dim=-1)


def probs(logits: torch.Tensor) -> torch.Tensor:
    """softmax in float64."""
    return torch.softmax(logits.double(), dim=-1)


def entropy(logits: torch.Tensor) -> float:
    """Shannon entropy H = -sum p log p of softmax(logits), in nats.

    Tokens at -inf have p = 0 and contribute nothing (0 log 0 = 0)."""
    lp = log_probs(logits)
    p = lp.exp()
    return float(-(p * lp).nan_to_num(0.0, posinf=0.0, neginf=0.0).sum())


def entropy_of_probs(p: torch.Tensor) -> float:
    """H from probabilities that are already computed (zeros contribute nothing): ``entr`` is
    -p ln p in one pass, 0 at p = 0."""
    return float(torch.special.entr(p).sum())


def _finite_moments(z: torch.Tensor, T: float) -> tuple[torch.Tensor, torch.Tensor]:
    """p_T over the finite entries of z, and those entries (float64)."""
    z = z.double()
    alive = torch.isfinite(z)
    zf = z[alive]
    p = torch.softmax(zf / T, dim=-1)
    return p, zf


def dH_dT(logits: torch.Tensor, temperature: float) -> float:
    """Derivative of the entropy of p_T = softmax(z / T) with respect to T.

    Differentiating H(T) = -sum p_T log p_T with log p_T(i) = z_i / T - log Z(T)
    gives the clean identity  dH/dT = Var_{p_T}(z) / T^3.
    The variance is never negative, which is why entropy rises monotonically
    with temperature; a model with widely spread logits (large Var) reacts more
    strongly to the same change of T."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for dH/dT, got {temperature}")
    p, z = _finite_moments(logits, temperature)
    mean = (p * z).sum()
    var = (p * (z - mean) ** 2).sum()
    return float(var / temperature**3)


def entropy_and_dH_dT(logits: torch.Tensor, temperature: float) -> tuple[float, float]:
    """H(T) and dH/dT at one temperature from a single log-softmax (what a traced step shows):
    the same numbers as ``entropy_at`` and ``dH_dT``, in fewer passes over the vocabulary.

        >>> z = torch.tensor([2.0, 1.0, 0.0, -float("inf")])
        >>> [round(x, 4) for x in entropy_and_dH_dT(z, 1.0)] == [round(entropy(z), 4), round(dH_dT(z, 1.0), 4)]
        True
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    z = logits.double()
    lp = torch.log_softmax(z / temperature, dim=-1)
    p = lp.exp()
    finite = torch.isfinite(z)                       # a cut token: p = 0, and it adds nothing below
    zf = torch.where(finite, z, 0.0)
    h = -(p * torch.where(finite, lp, 0.0)).sum()
    mean = (p * zf).sum()
    var = (p * (zf - mean) ** 2).sum()
    return float(h), float(var / temperature**3)


def entropy_at(logits: torch.Tensor, temperature: float) -> float:
    """H of softmax(z / T)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return entropy(logits.double() / temperature)


def entropy_curve(logits: torch.Tensor, temperatures: Sequence[float]) -> list[tuple[float, float]]:
    """[(T, H(T))] over a grid of temperatures: the H(T) curve."""
    return [(float(t), entropy_at(logits, t)) for t in temperatures]


def default_temperature_grid(lo: float = 0.05, hi: float = 3.0, n: int = 60) -> list[float]:
    """A log-spaced grid: low temperatures change H fastest, so sample them densely."""
    return [float(x) for x in torch.logspace(math.log10(lo), math.log10(hi), n)]


def tail_mass(logits: torch.Tensor, top_n: int = 20, thresholds: Sequence[float] = TAIL_THRESHOLDS,
              p: torch.Tensor | None = None) -> dict:
    """How much probability lies in the tail.

    Returns ``{"outside_top_n": mass beyond the N most likely tokens, "top_n": N,
    "below": {"0.001": mass of tokens with p < 1e-3, ...}, "count_below": {...}}``.
    On a 49k or 262k vocabulary thousands of individually negligible tokens can add
    up to a mass one cannot ignore: that is why truncation exists."""
    p = probs(logits) if p is None else p
    n = min(top_n, p.numel())
    top = torch.topk(p, n).values.sum()
    # every threshold in one pass: a [thresholds, vocab] mask of the positive tokens below each
    mask = (p[None, :] < torch.tensor(thresholds, dtype=p.dtype)[:, None]) & (p > 0)
    mass = (mask * p).sum(dim=-1).tolist()
    counts = mask.sum(dim=-1).tolist()
    below = {f"{th:g}": float(m) for th, m in zip(thresholds, mass)}
    count = {f"{th:g}": int(c) for th, c in zip(thresholds, counts)}
    return {"top_n": n, "outside_top_n": float(1.0 - top), "below": below, "count_below": count}


def top_margin(logits: torch.Tensor) -> float:
    """Gap between the two largest logits. Near zero means a near-tie: the argmax can
    flip under tiny numerical noise (why temperature 0 does not promise determinism)."""
    if logits.numel() < 2:
        return float("inf")
    v = torch.topk(logits.double(), 2).values
    if not torch.isfinite(v[1]):
        return float("inf")
    return float(v[0] - v[1])
