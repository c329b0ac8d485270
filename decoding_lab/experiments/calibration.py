"""Calibrated temperature decoding (CTD): one scalar, fitted offline, turned into a temperature.

Derivation. The pass@k-optimal sampler under an entropy floor and a cross-entropy
ceiling is the tilted distribution (see ``tilt.py``)

    q*(y) ∝ (p(y) · exp(eta · V(y)))^(1/T).

CTD assumes the model is *calibrated* in this sense: the verifier potential is an
affine function of the sequence log-probability ℓ(y) = log p(y),

    V(y) ≈ c + a · ℓ(y).

Then p · e^(eta·V) ∝ p^(1 + eta·a), the tilt folds into the exponent, and

    q*(y) ∝ p(y)^((1 + eta·a) / T)      — plain temperature T_ctd = T / (1 + eta·a).

We take the natural potential V(y) = log P(pass | y), with eta = 1 and T = 1 (the
distribution the calibration samples came from), so p · e^V ∝ p(y | pass): sample
from the model *conditioned on success*. We fit P(pass | ℓ) = σ(α + β·ℓ) by logistic
regression on a calibration split (samples drawn at T = 1, no truncation, so that
their recorded log-prob *is* ℓ). Then V = log σ(α + βℓ) has slope dV/dℓ = β(1 − σ);
its average over the calibration samples is the affine slope a (when passes are rare,
σ ≪ 1 and a ≈ β). Result: ``T_ctd = 1 / (1 + a)``. a > 0 (likelier texts pass more
often) gives T_ctd < 1; a ≈ 0 (log-prob says nothing) gives T = 1.

Two honest caveats, shown in the report: (1) a token-level temperature gives
∏_t p(y_t | y_<t)^γ / Z_t — locally normalised — which is close to but not the same
as the sequence-level p(y)^γ; (2) ℓ grows more negative with length, so a length
effect (short answers pass more often) enters a.

Worked example: log-probs of passing samples sit higher::

    >>> fit = fit_ctd([-2.0, -3.0, -9.0, -12.0, -4.0, -10.0], [1, 1, 0, 0, 0, 1])
    >>> fit.beta > 0 and fit.temperature < 1
    True

The comparison (``compare_ctd``): fit on the calibration half of the problems, then on
the held-out half compare pass@k at T_ctd with the grid temperature that was best *on the
calibration half* (a fair, equally-informed baseline) and with the held-out oracle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from decoding_lab.multisample import passk
from decoding_lab.experiments.sweep import (Cell, ProblemOutcome, ProgressFn, StopFn, SweepConfig, run_cell,
                                            run_sweep)
from decoding_lab.tasks.sets import get_task
from decoding_lab.stages import SettingsError
from decoding_lab.backends.base import LanguageModel

T_MIN, T_MAX = 0.05, 3.0


def fit_logistic(x: Sequence[float], y: Sequence[float], ridge: float = 1e-3, iters: int = 100) -> tuple[float, float]:
    """(alpha, beta) of P(y=1 | x) = σ(alpha + beta·x) by Newton's method. ``x`` is
    standardised inside for stability; the small ridge keeps separable data finite."""
    x_arr, y_arr = np.asarray(x, float), np.asarray(y, float)
    if x_arr.shape != y_arr.shape or x_arr.size < 2:
        raise SettingsError("calibration needs at least two samples with a log-prob and a pass/fail each")
    mu, sd = x_arr.mean(), x_arr.std() or 1.0
    X = np.stack([np.ones_like(x_arr), (x_arr - mu) / sd], axis=1)
    w = np.zeros(2)
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ w))
        grad = X.T @ (y_arr - p) - ridge * w
        H = (X * (p * (1 - p))[:, None]).T @ X + ridge * np.eye(2)
        step = np.linalg.solve(H, grad)
        w += step
        if np.abs(step).max() < 1e-10:
            break
    beta = w[1] / sd
    return float(w[0] - beta * mu), float(beta)


@dataclass
class CalibrationFit:
    alpha: float
    beta: float
    slope: float                 # a: mean dV/dℓ over the calibration samples
    eta: float
    base_temperature: float
    temperature: float           # T_ctd, clipped to [T_MIN, T_MAX]
    clipped: bool
    samples: int
    pass_rate: float

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fit_ctd(logprobs: Sequence[float], correct: Sequence[bool | int], eta: float = 1.0,
            base_temperature: float = 1.0) -> CalibrationFit:
    """Fit the affine slope a and return ``T_ctd = base_temperature / (1 + eta·a)``."""
    y = np.asarray(correct, float)
    if y.size == 0 or y.min() == y.max():
        raise SettingsError("the calibration split needs both passing and failing samples to fit a slope")
    alpha, beta = fit_logistic(logprobs, y)
    sig = 1 / (1 + np.exp(-(alpha + beta * np.asarray(logprobs, float))))
    a = float(beta * np.mean(1 - sig))
    denom = 1 + eta * a
    raw_t = base_temperature / denom if denom > 0 else math.inf
    t = float(min(max(raw_t, T_MIN), T_MAX))
    return CalibrationFit(alpha, beta, a, eta, base_temperature, t, t != raw_t, int(y.size), float(y.mean()))


# --------------------------------------------------------------------------- comparison
def _curve(outcomes: list[ProblemOutcome], n: int) -> list[float]:
    c = [o.c for o in outcomes]
    return [passk.summarize(n, c, k).mean for k in range(1, n + 1)]


@dataclass
class CTDReport:
    fit: CalibrationFit
    n: int
    calibration_problems: list[int]
    heldout_problems: list[int]
    grid: list[float]
    calibration_pass: dict[float, list[float]]      # T -> pass@k (k = 1..n) on the calibration split
    heldout_pass: dict[float, list[float]]          # T -> pass@k on held-out (grid temperatures and T_ctd)
    ctd_temperature: float
    paired: dict[int, dict[str, float]] = field(default_factory=dict)   # k -> CTD minus grid-best, per problem

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for k in range(1, self.n + 1):
            t_cal = max(self.grid, key=lambda t: (self.calibration_pass[t][k - 1], -t))
            t_oracle = max(self.grid, key=lambda t: (self.heldout_pass[t][k - 1], -t))
            out.append({"k": k, "ctd": self.heldout_pass[self.ctd_temperature][k - 1],
                        "grid_T_from_calibration": t_cal, "grid": self.heldout_pass[t_cal][k - 1],
                        "oracle_T": t_oracle, "oracle": self.heldout_pass[t_oracle][k - 1],
                        **({"ctd_minus_grid": self.paired[k]} if k in self.paired else {})})
        return out

    def to_json(self) -> dict[str, Any]:
        return {"format": "decoding-lab-ctd/1", "fit": self.fit.to_json(), "n": self.n,
                "ctd_temperature": self.ctd_temperature, "grid": self.grid,
                "calibration_problems": self.calibration_problems, "heldout_problems": self.heldout_problems,
                "calibration_pass_at_k": {f"{t:g}": v for t, v in self.calibration_pass.items()},
                "heldout_pass_at_k": {f"{t:g}": v for t, v in self.heldout_pass.items()},
                "rows": self.rows()}

    def summary(self) -> str:
        f = self.fit
        lines = [f"fit on {f.samples} calibration samples (pass rate {f.pass_rate:.3f}): beta={f.beta:.4f}, "
                 f"a={f.slope:.4f} -> T_ctd={f.temperature:.3f}{' (clipped)' if f.clipped else ''}",
                 f"{'k':>3} {'CTD':>7} {'grid(T from cal)':>18} {'oracle':>14}"]
        for r in self.rows():
            if r["k"] in {1, 2, 4, 8, self.n}:
                lines.append(f"{r['k']:>3} {r['ctd']:7.3f} {r['grid']:9.3f} (T={r['grid_T_from_calibration']:g}) "
                             f"{r['oracle']:7.3f} (T={r['oracle_T']:g})")
        return "\n".join(lines)


def build_report(fit: CalibrationFit, n: int, cal: dict[float, list[ProblemOutcome]],
                 held: dict[float, list[ProblemOutcome]], ctd_t: float) -> CTDReport:
    """Assemble the comparison from per-problem outcomes (``cal`` and ``held`` map a
    temperature to its outcomes; ``held`` must contain ``ctd_t``)."""
    grid = sorted(t for t in cal if t in held)
    report = CTDReport(fit, n, [o.index for o in next(iter(cal.values()))], [o.index for o in held[ctd_t]],
                       grid, {t: _curve(cal[t], n) for t in grid}, {t: _curve(o, n) for t, o in held.items()}, ctd_t)
    for k in range(1, n + 1):
        t_cal = max(grid, key=lambda t: (report.calibration_pass[t][k - 1], -t))
        a = passk.pass_at_k_array(n, [o.c for o in held[ctd_t]], k)
        b = passk.pass_at_k_array(n, [o.c for o in held[t_cal]], k)
        d = a - b
        se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0
        report.paired[k] = {"mean": float(d.mean()), "stderr": se}
    return report


def compare_ctd(lm: LanguageModel, task: str, problems: int = 20, n: int = 16,
                temperatures: Sequence[float] = (0.3, 0.7, 1.0, 1.3),
                max_new_tokens: int = 40, seed: int = 0, chat: bool | None = None, order: str = "transformers",
                eta: float = 1.0, cache_dir: str | Path | None = None, progress: ProgressFn | None = None,
                should_stop: StopFn | None = None) -> CTDReport:
    """Calibration split = the first half of ``problems``, held-out = the second half.
    Runs the grid (truncation off) on both halves, T = 1 on the calibration half for the
    fit, then T_ctd on the held-out half. Cells are cached like any sweep's."""
    if problems < 4:
        raise SettingsError(f"CTD needs at least 4 problems (two per split), got {problems}")
    grid = sorted({float(t) for t in temperatures if t > 0})
    if not grid:
        raise SettingsError("give at least one temperature > 0 to compare with")
    n_cal = problems // 2
    common = dict(model=getattr(lm, "name", "?"), task=task, n=n, truncations=("none",), max_new_tokens=max_new_tokens,
                  seed=seed, chat=chat, order=order)
    cal_cfg = SweepConfig(problems=n_cal, start=0, temperatures=tuple(sorted(set(grid) | {1.0})), **common)
    cal = run_sweep(cal_cfg, lm, cache_dir, progress, should_stop)
    if cal.stopped:
        raise SettingsError("stopped before the calibration split was finished (finished cells are cached)")
    by_t = {c.cell.temperature: c.outcomes for c in cal.cells}
    base = by_t[1.0]
    fit = fit_ctd([lp for o in base for lp in o.logprobs], [x for o in base for x in o.correct], eta=eta)
    ctd_t = round(fit.temperature, 3)
    held_cfg = SweepConfig(problems=problems - n_cal, start=n_cal, temperatures=tuple(sorted(set(grid) | {ctd_t})),
                           **common)
    held = run_sweep(held_cfg, lm, cache_dir, progress, should_stop)
    if held.stopped:
        raise SettingsError("stopped before the held-out split was finished (finished cells are cached)")
    return build_report(fit, n, {t: by_t[t] for t in grid}, {c.cell.temperature: c.outcomes for c in held.cells}, ctd_t)


def compare_ctd_from_sweep(lm: LanguageModel, sweep: dict[str, Any], eta: float = 1.0,
                           should_stop: StopFn | None = None) -> CTDReport:
    """Reuse a finished sweep (its JSON): split its problems in half, fit on the first half's
    T = 1 / no-truncation cell, and sample only the T_ctd cell on the second half."""
    cfg = sweep["config"]
    if sweep.get("model") != getattr(lm, "name", None):
        raise SettingsError(f"the sweep was run on {sweep.get('model')!r}, not on {getattr(lm, 'name', '?')!r}")
    cells = {c["temperature"]: c for c in sweep["cells"] if c["truncation"] == "none" and c["penalty"] == "none"
             and c["temperature"] > 0}
    if 1.0 not in cells:
        raise SettingsError("the sweep has no T = 1, truncation none cell to calibrate on")
    outs = {t: [ProblemOutcome(**o) for o in c["outcomes"]] for t, c in cells.items()}
    n_cal = len(outs[1.0]) // 2
    cal = {t: o[:n_cal] for t, o in outs.items()}
    held = {t: o[n_cal:] for t, o in outs.items()}
    fit = fit_ctd([lp for o in cal[1.0] for lp in o.logprobs], [x for o in cal[1.0] for x in o.correct], eta=eta)
    ctd_t = round(fit.temperature, 3)
    if ctd_t not in held:
        task = get_task(cfg["task"])
        probs = task.problems(cfg["problems"], seed=cfg["seed"], start=cfg.get("start", 0))
        wanted = {o.index for o in held[1.0]}
        config = SweepConfig(**{**cfg, "temperatures": tuple(cfg["temperatures"]), "truncations": ("none",),
                                "penalties": ("none",)})
        res = run_cell(lm, task, [p for p in probs if p.index in wanted], Cell(ctd_t), config, should_stop)
        if res is None:
            raise SettingsError("stopped before the T_ctd cell was finished")
        held[ctd_t] = res.outcomes
    return build_report(fit, int(cfg["n"]), cal, held, ctd_t)
