"""The grid of a sweep: which temperatures, truncations and penalties, as data.

A *cell* is one point of the grid (temperature, truncation, penalty); ``SweepConfig``
is everything a sweep needs besides the model: the task, how many problems and
samples, the length budget, the seed, and the three axes. Axis values are preset names
(``top-p`` is top-p 0.95) or ``name=value`` (``min-p=0.1``, ``rep=1.3``).

    >>> parse_truncation("min-p=0.1")
    ('min-p=0.1', {'min_p': 0.1})
    >>> Cell(0.7, "top-k", "rep").settings(seed=3).top_k
    40
    >>> [c.label for c in SweepConfig(model="m", task="addition", temperatures=(0, 1.0),
    ...                               truncations=("none", "top-p")).cells()]
    ['T=0 none none', 'T=1 none none', 'T=1 top-p none']
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from decoding_lab import limits
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError

#: Truncation presets (the seed's suggested grid plus top-k); ``name=value`` sets another value.
TRUNCATIONS: dict[str, tuple[str, float | None]] = {
    "none": ("", None), "top-p": ("top_p", 0.95), "min-p": ("min_p", 0.05), "top-k": ("top_k", 40)}
#: Penalty presets; ``rep=1.3``, ``presence=0.5``, ``frequency=0.5`` set other values.
PENALTIES: dict[str, tuple[str, float | None]] = {
    "none": ("", None), "rep": ("repetition_penalty", 1.2), "presence": ("presence_penalty", 0.5),
    "frequency": ("frequency_penalty", 0.5)}


def _parse_axis(spec: str, table: dict[str, tuple[str, float | None]], what: str) -> tuple[str, dict[str, Any]]:
    name, _, value = spec.strip().lower().partition("=")
    if name not in table:
        raise SettingsError(f"unknown {what} {spec!r}; known: {', '.join(table)} (optionally name=value)")
    field_name, default = table[name]
    if not field_name:
        if value:
            raise SettingsError(f"{what} 'none' takes no value, got {spec!r}")
        return "none", {}
    try:
        v: float = float(value) if value else float(default)  # type: ignore[arg-type]
    except ValueError:
        raise SettingsError(f"{what} {spec!r}: the value must be a number") from None
    if field_name == "top_k":
        if v != int(v):
            raise SettingsError.coded("not_whole", name="top-k", got=value)
        v = int(v)
    label = name if not value else f"{name}={value}"
    return label, {field_name: v}


def parse_truncation(spec: str) -> tuple[str, dict[str, Any]]:
    """``"top-p"`` -> ``("top-p", {"top_p": 0.95})``; ``"min-p=0.1"`` -> ``("min-p=0.1", {"min_p": 0.1})``."""
    return _parse_axis(spec, TRUNCATIONS, "truncation")


def parse_penalty(spec: str) -> tuple[str, dict[str, Any]]:
    """``"rep"`` -> ``("rep", {"repetition_penalty": 1.2})``."""
    return _parse_axis(spec, PENALTIES, "penalty")


# --------------------------------------------------------------------------- grid
@dataclass(frozen=True)
class Cell:
    temperature: float
    truncation: str = "none"
    penalty: str = "none"

    @property
    def label(self) -> str:
        return f"T={self.temperature:g} {self.truncation} {self.penalty}"

    def settings(self, order: str = "transformers", seed: int = 0) -> SamplingSettings:
        changes: dict[str, Any] = {}
        if self.temperature > 0:
            changes.update(parse_truncation(self.truncation)[1])
        changes.update(parse_penalty(self.penalty)[1])
        return SamplingSettings(temperature=self.temperature, order=order, seed=seed, **changes)


@dataclass(frozen=True)
class SweepConfig:
    model: str
    task: str
    problems: int = 50
    n: int = 16
    temperatures: tuple[float, ...] = (0.3, 0.7, 1.0, 1.3)
    truncations: tuple[str, ...] = ("none", "top-p", "min-p", "top-k")
    penalties: tuple[str, ...] = ("none",)
    max_new_tokens: int = 40
    seed: int = 0
    chat: bool | None = None          # None: the task's default
    order: str = "transformers"
    start: int = 0                    # first problem (a held-out split starts after the calibration one)

    def __post_init__(self) -> None:
        if self.problems < 1 or self.n < 1 or self.max_new_tokens < 1:
            raise SettingsError(f"problems, n and max_new_tokens must be >= 1, got {self.problems}, {self.n}, "
                                f"{self.max_new_tokens}")
        limits.check_samples(self.n)                 # all n samples of a problem share one batch
        limits.check_new_tokens(self.max_new_tokens)
        if not self.temperatures:
            raise SettingsError("give at least one temperature")
        for t in self.temperatures:
            SamplingSettings(temperature=t)          # validates the range
        for s in self.truncations:
            parse_truncation(s)
        for s in self.penalties:
            parse_penalty(s)
        limits.check_sweep_samples(self.samples())

    def samples(self) -> int:
        """How many generations the whole grid draws (a temperature-0 cell draws one per problem)."""
        return sum(self.problems * (1 if c.temperature == 0 else self.n) for c in self.cells())

    def cells(self) -> list[Cell]:
        """The grid, in the order it is run. Per penalty: first the whole temperature curve
        without truncation, then the truncated cells from the *highest* temperature down
        (every truncation at T before any at a lower T), because truncation changes most
        where the tail is fattest. A run stopped early thus still has a complete curve and
        the truncation comparison where it matters. Temperature 0 appears once per penalty
        (greedy ignores truncation)."""
        out: list[Cell] = []
        truncs = [parse_truncation(tr)[0] for tr in self.truncations]
        temps = sorted(float(t) for t in self.temperatures)
        for pen in self.penalties:
            pen = parse_penalty(pen)[0]
            plan = [(t, "none") for t in temps] if "none" in truncs else [(0.0, "none")] if 0.0 in temps else []
            plan += [(t, tr) for t in reversed(temps) if t > 0 for tr in truncs if tr != "none"]
            for t, tr in plan:
                cell = Cell(t, tr, pen)
                if cell not in out:
                    out.append(cell)
        return out

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for axis in ("temperatures", "truncations", "penalties"):
            d[axis] = list(d[axis])
        return d
