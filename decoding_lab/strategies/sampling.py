"""Sampling: draw n continuations at once, each token from softmax(final logits).

All n samples share one prompt. We prefill it once (batch 1), copy the KV cache to n
rows, and from then on run the n rows as one batch: one forward per step for all of
them. The stage chain runs batched too (its history is ``[n, length]``), and one seeded
``torch.Generator`` draws every row's token, so the same seed and settings give the
same n samples.

When a row draws an end-of-sequence token it is done: we drop that row from the batch
(its cache row too), so finished samples stop costing forwards and never receive a
token after their EOS. Stateful stages (e.g. a grammar) follow with
``advance(parents, tokens)``, where ``parents`` lists the rows that go on, the same
call beam search uses to follow its back-pointers.

Worked example (``lm`` is a loaded model, see ``decoding_lab.models``)::

    >>> ids = lm.encode_prompt("Name a colour.", chat=True)
    >>> s = SamplingSettings(temperature=0.8, top_p=0.95, seed=1)
    >>> a, b = sample(lm, ids, s, n=4, max_new_tokens=16), sample(lm, ids, s, n=4, max_new_tokens=16)
    >>> len(a.sequences)                                    # four samples from one prefill
    4
    >>> [x.token_ids for x in a.sequences] == [x.token_ids for x in b.sequences]   # same seed, same samples
    True
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import torch

from decoding_lab import limits
from decoding_lab.chain import DeadEndError, apply_stages, select_greedy, select_sample
from decoding_lab.forward import forward
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, Stage
from decoding_lab.strategies.common import (StopFn, advance_stages, check_max_new_tokens,
                                            check_prompt, check_settings, eos_set, make_sequence, prefill, primed,
                                            record_choices, settings_json, start_stages)
from decoding_lab.strategies.result import GenerationResult

#: Default upper bound on n (one batch holds every sample; each row keeps its own KV cache and a
#: vocabulary-wide logits row). The deployment sets the bound with ``DECODING_LAB_MAX_SAMPLES``.
MAX_SAMPLES = limits.Limits.max_samples


def iter_sample(lm: Any, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
                *, n: int = 1, extra_stages: dict[str, Stage] | None = None,
                should_stop: StopFn | None = None) -> Iterator[GenerationResult]:
    """Yield a snapshot (all n samples so far) after every step; the last has ``done=True``."""
    return primed(_run(lm, prompt_ids, settings, n, max_new_tokens, extra_stages, should_stop, every_step=True))


def sample(lm: Any, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
           *, n: int = 1, extra_stages: dict[str, Stage] | None = None,
           should_stop: StopFn | None = None) -> GenerationResult:
    """Draw ``n`` samples to the end. With temperature 0 every row is greedy (n equal outputs)."""
    *_, result = primed(_run(lm, prompt_ids, settings, n, max_new_tokens, extra_stages, should_stop,
                             every_step=False))
    return result


def _run(lm: Any, prompt_ids: list[int], settings: SamplingSettings | None, n: int, max_new_tokens: int,
         extra_stages: dict[str, Stage] | None, should_stop: StopFn | None,
         every_step: bool) -> Iterator[GenerationResult | None]:
    prompt = check_prompt(lm, prompt_ids)
    n = limits.check_samples(n)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    settings = check_settings(settings, SamplingSettings())
    stages = settings.build_chain(extra_stages, lm=lm)
    eos = eos_set(lm)

    generator = torch.Generator()
    seed = settings.seed if settings.seed is not None else generator.seed()  # seed(): a fresh random seed
    generator.manual_seed(seed)
    info = settings_json(lm, settings, n=n, max_new_tokens=max_new_tokens, seed_used=seed)
    t0 = time.perf_counter()
    yield None  # the arguments are valid: primed() stops here, before any model work

    tokens: list[list[int]] = [[] for _ in range(n)]
    logprobs: list[list[float]] = [[] for _ in range(n)]
    entropies: list[list[float]] = [[] for _ in range(n)]
    alive = list(range(n))   # batch row r holds sample alive[r]

    def snapshot(step: int, done: bool, stopped: bool = False) -> GenerationResult:
        seqs = [make_sequence(lm, tokens[i], logprobs[i], entropies[i], sum(logprobs[i]), eos) for i in range(n)]
        return GenerationResult("sample", seqs, len(prompt), info, time.perf_counter() - t0,
                                steps=step, done=done, stopped=stopped)

    start_stages(stages, n)
    cache, logits = prefill(lm, prompt, n)          # one prefill, cache copied to n rows
    for step in range(max_new_tokens):
        if should_stop is not None and should_stop():
            yield snapshot(step, done=True, stopped=True)
            return
        if step > 0:  # every live row feeds its last token, all in one forward
            last = torch.tensor([[tokens[i][-1]] for i in alive])
            logits = forward(lm.model, last, cache)
        history = History(torch.tensor([prompt + tokens[i] for i in alive]), len(prompt))
        final = apply_stages(stages, logits, history)                       # [rows, vocab]
        dead = (~torch.isfinite(final).any(dim=-1)).nonzero().flatten().tolist()
        if dead:
            raise DeadEndError(f"step {step}: the stages left no token for sample {alive[dead[0]]}")
        chosen = select_greedy(final) if settings.greedy else select_sample(final, generator)
        record_choices(alive, chosen, final, logits, tokens, logprobs, entropies)

        # Rows that drew EOS leave the batch; the others (and stateful stages) carry on.
        keep = [r for r, i in enumerate(alive) if tokens[i][-1] not in eos]
        done = not keep or step + 1 == max_new_tokens
        if done or every_step:
            yield snapshot(step + 1, done=done)
        if done:
            return
        advance_stages(stages, keep, [tokens[alive[r]][-1] for r in keep])
        if len(keep) < len(alive):
            cache.batch_select_indices(torch.tensor(keep))
            alive = [alive[r] for r in keep]
