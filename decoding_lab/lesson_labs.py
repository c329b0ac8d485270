"""A lesson screen's lab: the experiment's picture with the one or two controls the screen is
about, drawn inside the lesson from the learner's own run.

When a lesson runs a one-step experiment (``lesson_runs``), it keeps the logits that step read
(:class:`LabStep`: the model's raw scores for the whole vocabulary, with the prompt and the tokens
before it). Moving a lab's control runs the real stage chain again on those same logits with the
new settings (:func:`look`): no forward pass, a few milliseconds on a 49k vocabulary, and the
numbers are the chain's own (``StageRecord``), the ones the Explorer shows for the same step.
A lab over a shipped sweep reads the file instead (:func:`passk_lines`).

The kinds (``LAB_KINDS``), each with what it lets the learner move:

* ``temperature``: T; H(T) with its tangent, whose slope is dH/dT = Var_{p_T}(z) / T³, and the
  top tokens at that T;
* ``tail``: T; the distribution sorted from the largest probability down, with the part below
  1e-4 (the tail) shaded and its mass and size;
* ``cuts``: T and top-p; where top-p and min-p 0.1 cut the same sorted distribution, and how many
  tokens each keeps;
* ``order``: T and an engine's stage order (transformers, vLLM, llama.cpp) for the experiment's
  own cuts; the funnel of tokens kept and mass removed, stage by stage;
* ``passk``: k; a shipped sweep's pass@k against T, one line per truncation rule (none, top-p,
  top-k, min-p), with standard errors.

This module is free of any UI: ``decoding_lab.ui.lessons.lab`` draws its results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from decoding_lab import stats
from decoding_lab.chain import run_chain
from decoding_lab.errors import SettingsError
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stages import History, StageRecord

LAB_KINDS = ("temperature", "tail", "cuts", "order", "passk")
#: The kinds that re-run a kept step (the others read a shipped file).
STEP_LABS = ("temperature", "tail", "cuts", "order")
#: A token is in the tail below this probability (lesson 4's line).
TAIL_P = 1e-4
#: The temperatures a lab's slider offers (the Explorer's range; 0 is greedy, which has no H(T)).
T_RANGE = (0.1, 3.0)
#: min-p's threshold in the ``cuts`` lab: lesson 5's.
CUTS_MIN_P = 0.1


@dataclass(frozen=True)
class LabStep:
    """One step's raw logits as the model gave them, and where they came from."""

    model: str
    logits: torch.Tensor                 # 1-D, the whole vocabulary, before any stage
    prompt_ids: tuple[int, ...]
    tokens: tuple[int, ...]              # generated before this step (penalties read them)

    @classmethod
    def of(cls, stepper: Any) -> "LabStep":
        """The step a :class:`~decoding_lab.stepper.Stepper` is about to take."""
        return cls(str(getattr(stepper.lm, "name", "")), stepper._next_logits.detach().float().cpu().clone(),
                   tuple(stepper.prompt_ids), tuple(stepper.tokens))

    @property
    def vocab(self) -> int:
        return int(self.logits.numel())


@dataclass(frozen=True)
class LabRow:
    """A top token: its raw probability, its probability at the lab's temperature, after every
    stage, and the stage that cut it (with its probability entering that stage)."""

    token_id: int
    token: str
    p_raw: float
    p_T: float
    p_final: float
    cut_by: str | None
    p_cut: float | None


@dataclass(frozen=True)
class LabView:
    """What one setting of a lab's controls does to the kept step."""

    settings: SamplingSettings
    vocab: int
    kept: int                            # tokens the selector could still draw
    entropy_T: float                     # H of p_T (nats), before any cut
    dH_dT: float                         # its slope at T
    tail_mass: float                     # mass of p_T in tokens below TAIL_P
    tail_count: int                      # how many tokens that is
    stages: list[StageRecord]            # one per active stage, tensors dropped
    rows: list[LabRow]                   # the top tokens by raw logit
    sorted_p: list[tuple[int, float]]    # (rank, p_T) on a log-spaced set of ranks
    top_p_kept: int | None               # tokens top-p at settings.top_p keeps of p_T (None when off)
    min_p_kept: int                      # tokens min-p CUTS_MIN_P keeps of p_T
    entropy_curve: list[tuple[float, float]]


def lab_settings(kind: str, base: dict[str, Any], temperature: float, top_p: float | None = None,
                 order: str | None = None) -> SamplingSettings:
    """The settings a lab's controls stand for, on top of the experiment's own (``base``).

    >>> s = lab_settings("cuts", {"temperature": 2.0, "top_p": 0.9, "seed": 0}, 1.5, top_p=0.8)
    >>> (s.temperature, s.top_p, s.min_p)
    (1.5, 0.8, 0.0)
    >>> lab_settings("temperature", {"top_p": 0.9}, 5.0)
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: the lab's temperature must lie in 0.1 … 3, got 5.0
    """
    if kind not in STEP_LABS:
        raise SettingsError(f"unknown step lab {kind!r}; known: {', '.join(STEP_LABS)}")
    T = float(temperature)
    if not T_RANGE[0] <= T <= T_RANGE[1]:          # also refuses NaN
        raise SettingsError(f"the lab's temperature must lie in {T_RANGE[0]:g} … {T_RANGE[1]:g}, got {temperature}")
    d = {k: v for k, v in base.items() if k not in ("seed",)}
    d["temperature"] = T
    if kind in ("temperature", "tail"):            # the shape at T, nothing cut
        d = {"temperature": T}
    elif kind == "cuts":                            # top-p alone cuts; min-p is drawn beside it
        p = float(d.get("top_p", 0.9) if top_p is None else top_p)
        if not 0.05 <= p <= 1.0:
            raise SettingsError(f"the lab's top-p must lie in 0.05 … 1, got {top_p}")
        d = {"temperature": T, "top_p": p}
    elif order is not None:
        if str(order) not in PRESET_ORDERS:
            raise SettingsError(f"unknown order {order!r}; presets: {', '.join(PRESET_ORDERS)}")
        d["order"] = str(order)
    return SamplingSettings.from_json(d)


def look(step: LabStep, settings: SamplingSettings, token_str: Callable[[int], str], top_n: int = 12) -> LabView:
    """Run ``settings``' chain on the kept step and measure what it did (no model call)."""
    stages = settings.build_chain()
    history = History.from_lists(list(step.prompt_ids), list(step.tokens))
    final, records, z_temp, p_raw, p_final = run_chain(stages, step.logits, history, with_probs=True)
    T = float(settings.temperature)
    z = (z_temp if z_temp is not None else step.logits).double()
    p_T = torch.softmax(z / T, dim=-1)
    h, slope = stats.entropy_and_dH_dT(z, T)
    n = min(top_n, step.vocab)
    ids = torch.topk(step.logits, n).indices.tolist()
    rows = []
    for tid in ids:
        cut = next((i for i, r in enumerate(records) if r.removed is not None and bool(r.removed[tid])), None)
        p_in = None if cut is None else (p_raw if cut == 0 else records[cut - 1].probs_after)
        rows.append(LabRow(tid, token_str(tid), float(p_raw[tid]), float(p_T[tid]), float(p_final[tid]),
                           None if cut is None else records[cut].name, None if p_in is None else float(p_in[tid])))
    ordered = p_T.sort(descending=True).values
    below = ordered < TAIL_P
    top_p = float(settings.top_p)
    for rec in records:
        rec.drop_tensors()
    return LabView(
        settings=settings, vocab=step.vocab, kept=int((final > float("-inf")).sum()), entropy_T=float(h),
        dH_dT=float(slope), tail_mass=float(ordered[below].sum()), tail_count=int(below.sum()), stages=records,
        rows=rows, sorted_p=_log_ranks(ordered),
        top_p_kept=top_p_keeps(ordered, top_p) if top_p < 1.0 else None,
        min_p_kept=int((ordered >= CUTS_MIN_P * ordered[0]).sum()),
        entropy_curve=stats.entropy_curve(z, stats.default_temperature_grid(lo=T_RANGE[0], hi=T_RANGE[1], n=40)))


def top_p_keeps(ordered: torch.Tensor, p: float) -> int:
    """How many tokens top-p keeps of a distribution sorted from the largest down: the fewest
    whose mass reaches ``p`` (the token that crosses it is kept).

    >>> top_p_keeps(torch.tensor([0.5, 0.3, 0.15, 0.05]), 0.8)
    2
    >>> top_p_keeps(torch.tensor([0.5, 0.3, 0.15, 0.05]), 0.81)
    3
    """
    before = torch.cumsum(ordered.double(), 0) - ordered.double()    # mass of the tokens ahead of each
    return max(1, int((before < p - 1e-12).sum()))


def _log_ranks(ordered: torch.Tensor, points: int = 80) -> list[tuple[int, float]]:
    """(rank, p) at every rank up to 20, then ``points`` ranks spaced evenly on a log scale."""
    n = ordered.numel()
    ranks = sorted(set(range(1, min(n, 20) + 1)) | {max(1, min(n, round(n ** (i / points)))) for i in range(points + 1)})
    return [(r, float(ordered[r - 1])) for r in ranks]


def passk_lines(result: dict[str, Any], k: int) -> dict[str, list[tuple[float, float, float | None]]]:
    """A shipped sweep's pass@k against T for each truncation rule it holds (greedy, T = 0, opens
    every line): ``{"none": [(T, pass@k, stderr), ...], "top-p": ...}``.

    >>> cells = [{"temperature": t, "truncation": tr, "penalty": "none",
    ...           "metrics": {"pass_at_k": [{"mean": m, "stderr": 0.1}]}}
    ...          for t, tr, m in ((0.0, "none", 0.5), (1.0, "none", 0.2), (1.0, "min-p", 0.4))]
    >>> passk_lines({"cells": cells}, 1)
    {'none': [(0.0, 0.5, 0.1), (1.0, 0.2, 0.1)], 'min-p': [(0.0, 0.5, 0.1), (1.0, 0.4, 0.1)]}
    """
    from decoding_lab.experiments.sweep import curve
    rules = [t for t in dict.fromkeys(c["truncation"] for c in result["cells"] if c["temperature"] > 0)]
    return {rule: curve(result, k=int(k), truncation=rule) for rule in rules}


def sweep_size(result: dict[str, Any]) -> int:
    """The most samples per problem a sweep holds (the largest k a lab may ask for)."""
    return max(len(c["metrics"]["pass_at_k"]) for c in result["cells"])


__all__ = ["LAB_KINDS", "STEP_LABS", "LabStep", "LabRow", "LabView", "lab_settings", "look", "top_p_keeps",
           "passk_lines", "sweep_size", "TAIL_P", "T_RANGE", "CUTS_MIN_P"]
