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
from typing import Iterator

import torch

from decoding_lab import limits
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import Chain, Decoder, Row
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import Stage
from decoding_lab.strategies.common import (StopFn, check_max_new_tokens, check_prompt, check_settings, eos_set,
                                            make_sequence, primed, settings_json)
from decoding_lab.strategies.result import GenerationResult

#: Default upper bound on n (one batch holds every sample; each row keeps its own KV cache and a
#: vocabulary-wide logits row). The deployment sets the bound with ``DECODING_LAB_MAX_SAMPLES``.
MAX_SAMPLES = limits.Limits.max_samples


def iter_sample(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
                *, n: int = 1, extra_stages: dict[str, Stage] | None = None,
                should_stop: StopFn | None = None) -> Iterator[GenerationResult]:
    """Yield a snapshot (all n samples so far) after every step; the last has ``done=True``."""
    return primed(_run(lm, prompt_ids, settings, n, max_new_tokens, extra_stages, should_stop, every_step=True))


def sample(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
           *, n: int = 1, extra_stages: dict[str, Stage] | None = None,
           should_stop: StopFn | None = None) -> GenerationResult:
    """Draw ``n`` samples to the end. With temperature 0 every row is greedy (n equal outputs)."""
    *_, result = primed(_run(lm, prompt_ids, settings, n, max_new_tokens, extra_stages, should_stop,
                             every_step=False))
    return result


def _run(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None, n: int, max_new_tokens: int,
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

    # the decode core with n rows of one prompt, one chain over all of them and one generator
    rows = [Row(prompt=prompt, chain=0, draw=0) for _ in range(n)]
    decoder = Decoder(lm, rows, [Chain(stages, greedy=settings.greedy)], max_new_tokens, eos, [generator])

    def snapshot(step: int, done: bool, stopped: bool = False) -> GenerationResult:
        seqs = [make_sequence(lm, r.tokens, r.logprobs, r.entropies, sum(r.logprobs), eos) for r in rows]
        return GenerationResult("sample", seqs, len(prompt), info, time.perf_counter() - t0,
                                steps=step, done=done, stopped=stopped)

    while decoder.alive:
        if should_stop is not None and should_stop():
            yield snapshot(decoder.step_index, done=True, stopped=True)
            return
        decoder.step()
        if not decoder.alive or every_step:   # rows that drew EOS left the batch; the others carry on
            yield snapshot(decoder.step_index, done=not decoder.alive)
