"""Running a chain of stages and picking a token.

``run_chain`` is the heart of the stepper: it passes one row of logits through each
stage in order, keeps each stage's record, and hands the result to a selector.
Selectors are separate from stages: stages reshape or cut the distribution, selectors
pick from it (argmax for greedy, a seeded multinomial draw for sampling).

    >>> from decoding_lab.stages import TopK, Temperature, History
    >>> final, records, _ = run_chain([Temperature(0.5), TopK(2)], torch.tensor([1.0, 3.0, 2.0]), History.empty())
    >>> [r.name for r in records], final.tolist()
    (['temperature', 'top-k'], [-inf, 6.0, 4.0])
"""

from __future__ import annotations

import math

import torch

from decoding_lab.errors import DeadEndError, SettingsError
from decoding_lab.stages import History, Stage, StageRecord
from decoding_lab.stats import probs

__all__ = ["DeadEndError", "run_chain", "apply_stages", "check_logits", "select_greedy", "select_sample",
           "check_token_id"]


def run_chain(stages: list[Stage], logits: torch.Tensor, history: History, with_probs: bool = False):
    """Apply ``stages`` to 1-D ``logits`` in order.

    Returns the final logits, one record per stage, and the logits that entered the
    temperature stage (``None`` when there is none): dH/dT is measured on those. With
    ``with_probs=True`` it also returns the raw and final distributions (each softmax in
    the chain is computed once and shared by the records on both sides of it)."""
    records: list[StageRecord] = []
    tempered_input: torch.Tensor | None = None
    x = logits
    p_x = probs(x)
    p_raw = p_x
    for stage in stages:
        if stage.measures_temperature:
            tempered_input = x
        x, rec = stage.apply(x, history, p_before=p_x)   # the record computes softmax(x) once ...
        p_x = rec.probs_after if rec.probs_after is not None else probs(x)   # ... and the next stage reuses it
        records.append(rec)
        check_logits(x, stage.name)
    if with_probs:
        return x, records, tempered_input, p_raw, p_x
    return x, records, tempered_input


def apply_stages(stages: list[Stage], logits: torch.Tensor, history: History) -> torch.Tensor:
    """Batched, unrecorded version for complete generation: ``[batch, vocab]``. (A row with
    nothing left is the caller's to report: it knows which sample or beam that is.)"""
    x = logits
    for stage in stages:
        x = stage.transform(x, history)
    if stages:
        top = x.amax(dim=-1)
        if bool(torch.isnan(top).any() | torch.isposinf(top).any()):
            raise SettingsError(f"the stages ({', '.join(s.name for s in stages)}) pushed the logits to inf or NaN: "
                                "a parameter is too extreme for float32")
    return x


def check_logits(x: torch.Tensor, stage: str) -> None:
    """One reduction tells both failures apart: max = -inf (every token cut) and max = +inf
    or NaN (an extreme parameter, e.g. T = 1e-300, overflowed float32: no sampler can draw)."""
    top = float(x.max())
    if top == float("-inf"):
        raise DeadEndError(f"stage {stage} left no token that can be chosen")
    if not math.isfinite(top):
        raise SettingsError(f"stage {stage} pushed the logits to {top}: its parameter is too extreme for float32")


def select_greedy(logits: torch.Tensor) -> torch.Tensor:
    """argmax along the last axis. On an exact tie torch returns the first index; a
    near-tie can flip between two machines, which is the temperature-0 lesson."""
    return logits.argmax(dim=-1)


def select_sample(logits: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One draw per row from softmax(logits), using ``generator`` for reproducibility."""
    probs = torch.softmax(logits.float(), dim=-1)
    if probs.dim() == 1:
        return torch.multinomial(probs, 1, generator=generator)[0]
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


def check_token_id(token_id: int, vocab_size: int) -> int:
    if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < vocab_size:
        raise SettingsError(f"token id must be an integer in [0, {vocab_size}), got {token_id!r}")
    return token_id
