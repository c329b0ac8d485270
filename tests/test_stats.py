"""Statistics on hand-built logits: entropy, dH/dT against a finite difference, tail mass, margin."""

from __future__ import annotations

import math

import pytest
import torch

from decoding_lab import stats


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("T", [0.3, 0.7, 1.0, 1.8, 3.0])
def test_dH_dT_matches_finite_difference(seed, T):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(500, generator=g, dtype=torch.float64) * (1 + seed)
    h = 1e-5
    numeric = (stats.entropy_at(z, T + h) - stats.entropy_at(z, T - h)) / (2 * h)
    assert stats.dH_dT(z, T) == pytest.approx(numeric, rel=1e-5, abs=1e-9)


def test_dH_dT_ignores_cut_tokens():
    z = torch.tensor([2.0, 1.0, float("-inf"), 0.0])
    assert stats.dH_dT(z, 1.0) == pytest.approx(stats.dH_dT(torch.tensor([2.0, 1.0, 0.0]), 1.0))


def test_entropy_rises_with_temperature():
    z = torch.randn(1000, generator=torch.Generator().manual_seed(0)) * 4
    curve = stats.entropy_curve(z, stats.default_temperature_grid())
    hs = [h for _, h in curve]
    assert all(b > a for a, b in zip(hs, hs[1:]))
    assert hs[-1] < math.log(1000)


def test_entropy_edge_cases():
    assert stats.entropy(torch.tensor([0.0, float("-inf"), float("-inf")])) == 0.0
    assert stats.entropy(torch.zeros(8)) == pytest.approx(math.log(8))


def test_tail_mass():
    p = torch.tensor([0.5, 0.3] + [0.2 / 2000] * 2000, dtype=torch.float64)
    t = stats.tail_mass(p.log(), top_n=2, thresholds=(1e-3, 1e-5))
    assert t["outside_top_n"] == pytest.approx(0.2, abs=1e-9)
    assert t["below"]["0.001"] == pytest.approx(0.2, abs=1e-9)
    assert t["count_below"]["0.001"] == 2000
    assert t["below"]["1e-05"] == 0.0


def test_margin():
    assert stats.top_margin(torch.tensor([1.0, 3.0, 2.5])) == pytest.approx(0.5)
    assert stats.top_margin(torch.tensor([1.0, float("-inf")])) == math.inf


def test_ratio_law():
    """p_T(i)/p_T(j) = (p(i)/p(j))^(1/T): the identity the temperature lesson checks live."""
    z = torch.tensor([3.0, 1.0, 0.5, -2.0], dtype=torch.float64)
    p1 = stats.probs(z)
    for T in (0.5, 2.0):
        pT = stats.probs(z / T)
        assert (pT[0] / pT[1]).item() == pytest.approx(((p1[0] / p1[1]) ** (1 / T)).item())
