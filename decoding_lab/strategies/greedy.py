"""Greedy decoding: at every step take the most likely token of the final distribution.

Greedy is the chain with temperature 0: the temperature stage is left out (dividing by
T cannot move the argmax), every other stage in the settings still runs in the
settings' order (a repetition penalty or n-gram block *can* move the argmax), and the
selector is ``argmax``. One forward per token, reading the KV cache. This reproduces
``model.generate(do_sample=False, ...)`` token for token.

Worked example (``lm`` is a loaded model, see ``decoding_lab.models``)::

    >>> ids = lm.encode_prompt("What is the capital of France?", chat=True)
    >>> r = greedy(lm, ids, max_new_tokens=20)
    >>> r.text, r.best.finished
    ('The capital of France is Paris.', True)
    >>> r.best.score == sum(r.best.logprobs)     # score = sum of the chosen log-probs
    True
"""

from __future__ import annotations

import time
from typing import Iterator

from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import Chain, Decoder, Row
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import Stage
from decoding_lab.strategies.common import (StopFn, check_max_new_tokens, check_prompt, check_settings, eos_set,
                                            make_sequence, primed, settings_json)
from decoding_lab.strategies.result import GenerationResult

GREEDY_DEFAULT = SamplingSettings(temperature=0.0)


def iter_greedy(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None,
                max_new_tokens: int = 64, *, extra_stages: dict[str, Stage] | None = None,
                should_stop: StopFn | None = None) -> Iterator[GenerationResult]:
    """Yield a snapshot after every token; the last one has ``done=True``."""
    return primed(_run(lm, prompt_ids, settings, max_new_tokens, extra_stages, should_stop, every_step=True))


def greedy(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
           *, extra_stages: dict[str, Stage] | None = None, should_stop: StopFn | None = None) -> GenerationResult:
    """Run greedy decoding to the end (EOS, ``max_new_tokens`` or ``should_stop``)."""
    *_, result = primed(_run(lm, prompt_ids, settings, max_new_tokens, extra_stages, should_stop,
                             every_step=False))
    return result


def _run(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None, max_new_tokens: int,
         extra_stages: dict[str, Stage] | None, should_stop: StopFn | None,
         every_step: bool) -> Iterator[GenerationResult | None]:
    prompt = check_prompt(lm, prompt_ids)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    settings = check_settings(settings, GREEDY_DEFAULT).replace(temperature=0.0)
    stages = settings.build_chain(extra_stages, lm=lm)
    eos = eos_set(lm)
    info = settings_json(lm, settings, max_new_tokens=max_new_tokens)
    t0 = time.perf_counter()
    yield None  # the arguments are valid: primed() stops here, before any model work

    # the decode core with one row, one chain and the argmax
    row = Row(prompt=prompt, chain=0, draw=None)
    decoder = Decoder(lm, [row], [Chain(stages, greedy=True, dead_end="the stages left no token that can be chosen")],
                      max_new_tokens, eos)

    def snapshot(done: bool, stopped: bool = False) -> GenerationResult:
        seq = make_sequence(lm, row.tokens, row.logprobs, row.entropies, sum(row.logprobs), eos)
        return GenerationResult("greedy", [seq], len(prompt), info, time.perf_counter() - t0,
                                steps=len(row.tokens), done=done, stopped=stopped)

    while decoder.alive:
        if should_stop is not None and should_stop():
            yield snapshot(done=True, stopped=True)
            return
        decoder.step()
        if row.done or every_step:
            yield snapshot(done=row.done)
