"""Sampling several prompts at once: n samples of each of P prompts as one batch of P x n rows.

A sweep draws n samples for each of many problems. Run problem by problem, each step is one
forward over that problem's live rows, and as rows reach their end-of-sequence token the batch
shrinks to a few long stragglers that cost nearly as much per step as sixteen rows did. Here
the problems whose prompts have the same length share the batch: each prompt is prefilled on
its own (batch 1, as ``sample`` does), the caches are stacked row-wise, and from then on one
forward serves every live row of every problem.

What stays per problem is what decides its samples: its own seeded ``torch.Generator`` draws
its rows' tokens, from its rows only, in the same order as ``sample(..., n=n)`` would, so the
random stream is the per-problem one. The stage chain is shared, which is why every prompt must
use the same settings apart from the seed (a sweep cell does). The logits are the per-problem
ones up to the rounding of a larger matrix product (the batch-composition effect of the
Temperature 0 tab, ~1e-5 logit here): a draw that falls within that of a boundary between two
tokens could differ, which the sweep tests would show as a changed outcome.

Prompts of different lengths are not padded: ``sample_prompts`` groups them by length and runs
each group as a batch (a padded row would attend to padding through other kernels and round
differently again).

    >>> ids = [lm.encode_prompt(q, True) for q in ("What is 2 + 3?", "What is 4 + 1?")]   # doctest: +SKIP
    >>> runs = sample_prompts(lm, ids, [SamplingSettings(temperature=0.7, seed=s) for s in (0, 1)],
    ...                       n=4, max_new_tokens=16)                                  # doctest: +SKIP
    >>> [len(r.sequences) for r in runs]                                               # doctest: +SKIP
    [4, 4]
"""

from __future__ import annotations

import time
from typing import Sequence

import torch

from decoding_lab import limits
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import Chain, Decoder, Row
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.strategies.common import (StopFn, check_max_new_tokens, check_prompt, eos_set, make_sequence,
                                            settings_json)
from decoding_lab.strategies.result import GenerationResult


def _same_but_seed(settings: Sequence[SamplingSettings]) -> None:
    first = {k: v for k, v in settings[0].to_json().items() if k != "seed"}
    for s in settings[1:]:
        if {k: v for k, v in s.to_json().items() if k != "seed"} != first:
            raise SettingsError("prompts batched together must share their settings (all but the seed)")


def sample_prompts(lm: LanguageModel, prompts: Sequence[Sequence[int]], settings: Sequence[SamplingSettings], n: int,
                   max_new_tokens: int = 64, batch: int = 4,
                   should_stop: StopFn | None = None) -> list[GenerationResult] | None:
    """n samples for each prompt, ``batch`` prompts of one length at a time; results in the order
    of ``prompts``, each as ``sample`` returns it. None when ``should_stop`` stopped the run."""
    if len(prompts) != len(settings):
        raise SettingsError(f"got {len(prompts)} prompts and {len(settings)} settings")
    batch = limits.check_count("batch", batch, hi=64)
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(len(p), []).append(i)
    out: dict[int, GenerationResult] = {}
    for members in groups.values():
        for at in range(0, len(members), batch):
            part = members[at:at + batch]
            runs = sample_batch(lm, [prompts[i] for i in part], [settings[i] for i in part], n, max_new_tokens,
                                should_stop)
            if runs is None:
                return None
            out.update(zip(part, runs))
    return [out[i] for i in range(len(prompts))]


def sample_batch(lm: LanguageModel, prompts: Sequence[Sequence[int]], settings: Sequence[SamplingSettings], n: int,
                 max_new_tokens: int = 64, should_stop: StopFn | None = None) -> list[GenerationResult] | None:
    """n samples of each of ``prompts`` (one length) as one batch; see the module docstring."""
    ids = [check_prompt(lm, p) for p in prompts]
    if len({len(p) for p in ids}) != 1:
        raise SettingsError("sample_batch needs prompts of one length (sample_prompts groups them)")
    _same_but_seed(settings)
    n = limits.check_samples(n)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    greedy = settings[0].greedy
    stages = settings[0].build_chain(None, lm=lm)
    eos = eos_set(lm)
    gens, seeds = [], []
    for s in settings:
        g = torch.Generator()
        seeds.append(s.seed if s.seed is not None else g.seed())
        gens.append(g.manual_seed(seeds[-1]))
    t0 = time.perf_counter()

    # the decode core: n rows per prompt, one chain over every row, one generator per prompt
    rows = [Row(prompt=ids[p], chain=0, draw=p) for p in range(len(ids)) for _ in range(n)]
    decoder = Decoder(lm, rows, [Chain(stages, greedy=greedy)], max_new_tokens, eos, gens)
    while decoder.alive:
        if should_stop is not None and should_stop():
            return None
        decoder.step()
    seconds = time.perf_counter() - t0
    results = []
    for p, s in enumerate(settings):
        mine = rows[p * n:(p + 1) * n]
        seqs = [make_sequence(lm, r.tokens, r.logprobs, r.entropies, sum(r.logprobs), eos) for r in mine]
        info = settings_json(lm, s, n=n, max_new_tokens=max_new_tokens, seed_used=seeds[p])
        results.append(GenerationResult("sample", seqs, len(ids[p]), info, seconds,
                                        steps=max(len(r.tokens) for r in mine), done=True))
    return results
