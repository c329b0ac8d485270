"""Several greedy and sampling runs of one prompt as one batch: the Compare tab's engine.

Run one after another, k columns cost k forwards per token. A forward over a batch of k
single-token rows reads the weights once, and on a CPU (or a GPU at batch 1) reading the
weights is the cost, so k rows in one forward cost little more than one. Here every
greedy and sampling column becomes one row of a batch: the prompt is prefilled once, its
KV cache copied to k rows, and each step runs one forward for every live row.

Everything else stays per column: its own stage chain (its settings, its order, its
stateful stages), its own seeded generator, its own history, its own end: in the decode core
(``decoding_lab.decode``) each column is a row with a chain and a generator of its own, where
``iter_greedy`` / ``iter_sample`` (n = 1) are one row with one chain. Given the same logits a row
makes exactly the choices they make, and yields the same kind of ``GenerationResult``. The logits themselves are *not* always
bit-identical to a batch-1 run: a matrix product over k rows may round differently than
over one (on these CPUs by ~5e-5 logit), which can flip a choice whose top-2 margin is
that small — the batch-composition effect the Temperature 0 tab shows. Run a column with
``iter_greedy`` / ``iter_sample`` alone for the batch-1 numbers.

Beam columns are batches of their own (``num_beams`` rows each) and run beside these,
interleaved step by step by the caller.

Worked example (``lm`` is a loaded model)::

    >>> ids = lm.encode_prompt("Name a colour.", chat=True)
    >>> cols = [("greedy", SamplingSettings(temperature=0.0)), ("sample", SamplingSettings(temperature=1.0, seed=3))]
    >>> *_, last = iter_columns(lm, ids, cols, max_new_tokens=8)
    >>> [r.strategy for r in last], all(r.done for r in last)
    (['greedy', 'sample'], True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch

from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import Chain, Decoder, Row
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError, Stage
from decoding_lab.strategies.common import (StopFn, check_max_new_tokens, check_prompt, check_settings, eos_set,
                                            make_sequence, primed, settings_json)
from decoding_lab.strategies.result import GenerationResult

ROW_STRATEGIES = ("greedy", "sample")


@dataclass
class _Row:
    """One column's set-up: its chain and generator (what it writes lives in the decoder's row)."""

    strategy: str
    settings: SamplingSettings
    stages: list[Stage]
    generator: torch.Generator | None
    info: dict[str, Any]


def _row(lm: LanguageModel, strategy: str, settings: SamplingSettings | None, max_new_tokens: int) -> _Row:
    """Validate and set up a column exactly as ``iter_greedy`` / ``iter_sample`` (n = 1) do."""
    if strategy == "greedy":
        s = check_settings(settings, SamplingSettings(temperature=0.0)).replace(temperature=0.0)
        return _Row("greedy", s, s.build_chain(None, lm=lm), None, settings_json(lm, s, max_new_tokens=max_new_tokens))
    if strategy != "sample":
        raise SettingsError(f"a batched column is greedy or sample, got {strategy!r}")
    s = check_settings(settings, SamplingSettings())
    generator = torch.Generator()
    seed = s.seed if s.seed is not None else generator.seed()
    generator.manual_seed(seed)
    return _Row("sample", s, s.build_chain(None, lm=lm), generator,
                settings_json(lm, s, n=1, max_new_tokens=max_new_tokens, seed_used=seed))


def iter_columns(lm: LanguageModel, prompt_ids: list[int], columns: Sequence[tuple[str, SamplingSettings | None]],
                 max_new_tokens: int = 64, *, should_stop: StopFn | None = None) -> Iterator[list[GenerationResult]]:
    """Yield every column's snapshot after each step (a column that ended keeps its last
    one, ``done=True``); all arguments are checked when this is called."""
    return primed(_run(lm, prompt_ids, list(columns), max_new_tokens, should_stop))


def _run(lm: LanguageModel, prompt_ids: list[int], columns: list[tuple[str, SamplingSettings | None]], max_new_tokens: int,
         should_stop: StopFn | None) -> Iterator[list[GenerationResult] | None]:
    prompt = check_prompt(lm, prompt_ids)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    if not columns:
        raise SettingsError("give at least one column")
    columns_ = [_row(lm, strategy, settings, max_new_tokens) for strategy, settings in columns]
    eos = eos_set(lm)
    t0 = time.perf_counter()
    yield None  # the arguments are valid: primed() stops here, before any model work

    # the decode core: one row per column, each with a chain (and a generator) of its own
    generators = [c.generator for c in columns_ if c.generator is not None]   # the sampling columns'
    rows = [Row(prompt=prompt, chain=i, draw=generators.index(c.generator) if c.generator is not None else None)
            for i, c in enumerate(columns_)]
    chains = [Chain(c.stages, greedy=c.generator is None, label=str(i + 1),
                    dead_end="the stages left no token for column {label}") for i, c in enumerate(columns_)]
    decoder = Decoder(lm, rows, chains, max_new_tokens, eos, generators)
    stopped: set[int] = set()   # the columns a caller's stop ended

    def snapshots() -> list[GenerationResult]:
        return [GenerationResult(c.strategy, [make_sequence(lm, r.tokens, r.logprobs, r.entropies, sum(r.logprobs),
                                                            eos)],
                                 len(prompt), c.info, time.perf_counter() - t0, steps=len(r.tokens), done=r.done,
                                 stopped=i in stopped)
                for i, (c, r) in enumerate(zip(columns_, rows))]

    while decoder.alive:
        if should_stop is not None and should_stop():
            stopped.update(decoder.alive)
            decoder.stop()
            yield snapshots()
            return
        decoder.step()
        yield snapshots()
