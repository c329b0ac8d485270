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
from typing import Any, Sequence

import torch
from transformers import DynamicCache

from decoding_lab import limits
from decoding_lab.chain import DeadEndError, apply_stages, select_greedy, select_sample
from decoding_lab.forward import forward
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError
from decoding_lab.strategies.common import (StopFn, advance_stages, check_max_new_tokens, check_prompt, eos_set,
                                            make_sequence, prefill, record_choices, settings_json, start_stages)
from decoding_lab.strategies.result import GenerationResult


def stack_caches(caches: Sequence[DynamicCache]) -> DynamicCache:
    """One cache holding the rows of ``caches`` in order (all of one length); reuses the first."""
    out = caches[0]
    for i, layer in enumerate(out.layers):
        layer.keys = torch.cat([c.layers[i].keys for c in caches], dim=0)
        layer.values = torch.cat([c.layers[i].values for c in caches], dim=0)
    return out


def _same_but_seed(settings: Sequence[SamplingSettings]) -> None:
    first = {k: v for k, v in settings[0].to_json().items() if k != "seed"}
    for s in settings[1:]:
        if {k: v for k, v in s.to_json().items() if k != "seed"} != first:
            raise SettingsError("prompts batched together must share their settings (all but the seed)")


def sample_prompts(lm: Any, prompts: Sequence[Sequence[int]], settings: Sequence[SamplingSettings], n: int,
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


def sample_batch(lm: Any, prompts: Sequence[Sequence[int]], settings: Sequence[SamplingSettings], n: int,
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

    owner = [p for p in range(len(ids)) for _ in range(n)]      # row -> its prompt
    rows = len(owner)
    tokens: list[list[int]] = [[] for _ in range(rows)]
    logprobs: list[list[float]] = [[] for _ in range(rows)]
    entropies: list[list[float]] = [[] for _ in range(rows)]
    alive = list(range(rows))                                   # batch row r holds sample alive[r]
    start_stages(stages, rows)
    filled = [prefill(lm, p, n) for p in ids]                   # batch-1 prefills: sample()'s first logits
    cache = stack_caches([c for c, _ in filled])
    logits = torch.cat([z for _, z in filled])
    steps = 0
    for step in range(max_new_tokens):
        if should_stop is not None and should_stop():
            return None
        if step > 0:
            logits = forward(lm.model, torch.tensor([[tokens[i][-1]] for i in alive]), cache)
        history = History(torch.tensor([ids[owner[i]] + tokens[i] for i in alive]), len(ids[0]))
        final = apply_stages(stages, logits, history)
        dead = (~torch.isfinite(final).any(dim=-1)).nonzero().flatten().tolist()
        if dead:
            raise DeadEndError(f"step {step}: the stages left no token for sample {alive[dead[0]]}")
        if greedy:
            chosen = select_greedy(final)
        else:      # each prompt's rows from its own generator, in its own order: sample()'s stream
            chosen = torch.empty(len(alive), dtype=torch.long)
            for p in range(len(ids)):
                mine = [r for r, i in enumerate(alive) if owner[i] == p]
                if mine:
                    chosen[mine] = select_sample(final[mine], gens[p])
        record_choices(alive, chosen, final, logits, tokens, logprobs, entropies)
        steps = step + 1
        keep = [r for r, i in enumerate(alive) if tokens[i][-1] not in eos]
        if not keep:
            break
        advance_stages(stages, keep, [tokens[alive[r]][-1] for r in keep])
        if len(keep) < len(alive):
            cache.batch_select_indices(torch.tensor(keep))
            alive = [alive[r] for r in keep]
    seconds = time.perf_counter() - t0
    results = []
    for p, s in enumerate(settings):
        mine = [i for i in range(rows) if owner[i] == p]
        seqs = [make_sequence(lm, tokens[i], logprobs[i], entropies[i], sum(logprobs[i]), eos) for i in mine]
        info = settings_json(lm, s, n=n, max_new_tokens=max_new_tokens, seed_used=seeds[p])
        results.append(GenerationResult("sample", seqs, len(ids[p]), info, seconds,
                                        steps=max(len(tokens[i]) for i in mine), done=True))
    return results
