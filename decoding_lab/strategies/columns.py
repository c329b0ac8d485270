"""Several greedy and sampling runs of one prompt as one batch: the Compare tab's engine.

Run one after another, k columns cost k forwards per token. A forward over a batch of k
single-token rows reads the weights once, and on a CPU (or a GPU at batch 1) reading the
weights is the cost, so k rows in one forward cost little more than one. Here every
greedy and sampling column becomes one row of a batch: the prompt is prefilled once, its
KV cache copied to k rows, and each step runs one forward for every live row.

Everything else stays per column: its own stage chain (its settings, its order, its
stateful stages), its own seeded generator, its own history, its own end. Given the same
logits a row makes exactly the choices ``iter_greedy`` / ``iter_sample`` (n = 1) make, and
yields the same kind of ``GenerationResult``. The logits themselves are *not* always
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
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch

from decoding_lab.chain import DeadEndError, apply_stages, select_greedy, select_sample
from decoding_lab.forward import forward
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError, Stage
from decoding_lab.strategies.common import (StopFn, advance_stages, check_max_new_tokens, check_prompt,
                                            check_settings, eos_set, make_sequence, prefill, primed, row_entropies,
                                            settings_json, start_stages)
from decoding_lab.strategies.result import GenerationResult

ROW_STRATEGIES = ("greedy", "sample")


@dataclass
class _Row:
    """One column's run: its chain, generator and what it has produced."""

    strategy: str
    settings: SamplingSettings
    stages: list[Stage]
    generator: torch.Generator | None
    info: dict[str, Any]
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    done: bool = False
    stopped: bool = False


def _row(lm: Any, strategy: str, settings: SamplingSettings | None, max_new_tokens: int) -> _Row:
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


def iter_columns(lm: Any, prompt_ids: list[int], columns: Sequence[tuple[str, SamplingSettings | None]],
                 max_new_tokens: int = 64, *, should_stop: StopFn | None = None) -> Iterator[list[GenerationResult]]:
    """Yield every column's snapshot after each step (a column that ended keeps its last
    one, ``done=True``); all arguments are checked when this is called."""
    return primed(_run(lm, prompt_ids, list(columns), max_new_tokens, should_stop))


def _run(lm: Any, prompt_ids: list[int], columns: list[tuple[str, SamplingSettings | None]], max_new_tokens: int,
         should_stop: StopFn | None) -> Iterator[list[GenerationResult] | None]:
    prompt = check_prompt(lm, prompt_ids)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    if not columns:
        raise SettingsError("give at least one column")
    rows = [_row(lm, strategy, settings, max_new_tokens) for strategy, settings in columns]
    eos = eos_set(lm)
    t0 = time.perf_counter()
    yield None  # the arguments are valid: primed() stops here, before any model work

    def snapshots() -> list[GenerationResult]:
        return [GenerationResult(r.strategy, [make_sequence(lm, r.tokens, r.logprobs, r.entropies, sum(r.logprobs),
                                                            eos)],
                                 len(prompt), r.info, time.perf_counter() - t0, steps=len(r.tokens), done=r.done,
                                 stopped=r.stopped) for r in rows]

    for r in rows:
        start_stages(r.stages, 1)
    cache, logits = prefill(lm, prompt, len(rows))     # one prefill, its cache copied to every row
    alive = list(range(len(rows)))                     # batch row b holds column alive[b]
    for step in range(max_new_tokens):
        if should_stop is not None and should_stop():
            for i in alive:
                rows[i].done = rows[i].stopped = True
            yield snapshots()
            return
        if step > 0:   # every live column feeds its last token, all in one forward
            logits = forward(lm.model, torch.tensor([[rows[i].tokens[-1]] for i in alive]), cache)
        entropies = row_entropies(logits)
        for b, i in enumerate(alive):
            r = rows[i]
            history = History(torch.tensor([prompt + r.tokens]), len(prompt))
            final = apply_stages(r.stages, logits[b:b + 1], history)           # [1, vocab], this column's chain
            if not bool(torch.isfinite(final).any()):
                raise DeadEndError(f"step {step}: the stages left no token for column {i + 1}")
            tok = int(select_greedy(final)[0] if r.generator is None else select_sample(final, r.generator)[0])
            r.tokens.append(tok)
            r.logprobs.append(float(torch.log_softmax(final[0].double(), dim=-1)[tok]))
            r.entropies.append(entropies[b])
            r.done = tok in eos or len(r.tokens) == max_new_tokens
        yield snapshots()
        keep = [b for b, i in enumerate(alive) if not rows[i].done]
        if not keep:
            return
        for b in keep:
            advance_stages(rows[alive[b]].stages, [0], [rows[alive[b]].tokens[-1]])
        if len(keep) < len(alive):   # columns that ended leave the batch, their cache rows too
            cache.batch_select_indices(torch.tensor(keep))
            alive = [alive[b] for b in keep]
