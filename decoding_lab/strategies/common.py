"""Small helpers shared by greedy, sampling and beam search.

All three strategies share one shape: validate, prefill the prompt *once* (batch 1),
copy the KV cache to as many rows as the strategy needs, then loop
"stages -> selector -> one cached forward for every row". These helpers hold the parts
that are the same in all three.

    >>> row_entropies(torch.tensor([[0.0, 0.0], [0.0, float("-inf")]]))   # ln 2, then 0
    [0.6931471805599453, 0.0]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, TypeVar

import torch
from transformers import DynamicCache

from decoding_lab import limits
from decoding_lab.forward import forward, new_cache
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError, Stage
from decoding_lab.stepper import check_prompt_ids
from decoding_lab.strategies.result import GeneratedSequence

T = TypeVar("T")

#: Called between steps; returning True ends the run (the result so far is returned).
StopFn = Callable[[], bool]


def max_new_tokens_limit() -> int:
    """Same cap as the stepper (``DECODING_LAB_MAX_NEW_TOKENS``, see ``decoding_lab.limits``)."""
    return limits.current().max_new_tokens


def check_prompt(lm: Any, prompt_ids: Iterable[int]) -> list[int]:
    """Non-empty, inside the vocabulary, no longer than ``DECODING_LAB_MAX_PROMPT_TOKENS``."""
    return check_prompt_ids(lm, prompt_ids)


def check_count(name: str, value: Any, lo: int = 1, hi: int | None = None) -> int:
    """A whole number in [lo, hi]; the message names the setting and the bad value."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"{name} must be a whole number, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        upper = f" and <= {hi}" if hi is not None else ""
        raise SettingsError(f"{name} must be >= {lo}{upper}, got {value}")
    return value


def check_max_new_tokens(value: Any) -> int:
    return limits.check_new_tokens(value)


def check_settings(settings: SamplingSettings | None, default: SamplingSettings) -> SamplingSettings:
    if settings is None:
        return default
    if not isinstance(settings, SamplingSettings):
        raise SettingsError(f"settings must be a SamplingSettings, got {type(settings).__name__}")
    return settings


def eos_set(lm: Any) -> set[int]:
    return {int(t) for t in (getattr(lm, "eos_token_ids", ()) or ())}


def prefill(lm: Any, prompt_ids: list[int], rows: int) -> tuple[DynamicCache, torch.Tensor]:
    """Run the prompt once (batch 1), then repeat the cache and the logits to ``rows``
    rows: n samples or n beams share one prefill instead of paying for n."""
    cache = new_cache(lm.model)
    logits = forward(lm.model, torch.tensor([prompt_ids]), cache)
    if rows > 1:
        cache.batch_repeat_interleave(rows)
        logits = logits.repeat(rows, 1)
    return cache, logits


def row_entropies(logits: torch.Tensor) -> list[float]:
    """Entropy (nats) of softmax of each row, in float64; -inf entries contribute 0 (``entr`` is
    -p ln p, 0 at p = 0: three passes over the vocabulary instead of five)."""
    h = torch.special.entr(torch.softmax(logits.double(), dim=-1)).sum(dim=-1)
    return (h + 0.0).tolist()  # + 0.0 turns -0.0 (a one-hot row) into 0.0


def record_choices(alive: list[int], chosen: torch.Tensor, final: torch.Tensor, logits: torch.Tensor,
                   tokens: list[list[int]], logprobs: list[list[float]], entropies: list[list[float]]) -> None:
    """Append each live row's chosen token, its log-probability under the final distribution and
    the raw distribution's entropy to the lists of the sample that row holds (``alive[r]``)."""
    lp = torch.log_softmax(final.double(), dim=-1).gather(1, chosen[:, None])[:, 0]
    ents = row_entropies(logits)
    for r, i in enumerate(alive):
        tokens[i].append(int(chosen[r]))
        logprobs[i].append(float(lp[r]))
        entropies[i].append(ents[r])


def start_stages(stages: list[Stage], rows: int) -> None:
    for s in stages:
        s.start(rows)


def advance_stages(stages: list[Stage], parents: list[int], tokens: list[int]) -> None:
    for s in stages:
        s.advance(parents, tokens)


def make_sequence(lm: Any, tokens: list[int], logprobs: list[float], entropies: list[float], score: float,
                  eos: set[int]) -> GeneratedSequence:
    """Package one output; the text leaves out a final end-of-sequence token."""
    finished = bool(tokens) and tokens[-1] in eos
    text = lm.decode(tokens[:-1] if finished else tokens)
    return GeneratedSequence(list(tokens), text, float(score), list(logprobs), finished, list(entropies))


def settings_json(lm: Any, settings: SamplingSettings, **extra: Any) -> dict[str, Any]:
    return {"model": getattr(lm, "name", "?"), **settings.to_json(), **extra}


def primed(gen: Iterator[T | None]) -> Iterator[T]:
    """Run a strategy's generator up to its first ``yield None``, which comes right after
    the argument checks: bad settings raise when ``iter_*`` is *called*, not at the first
    ``next()``, while the model work still waits for the consumer."""
    first = next(gen)
    assert first is None
    return gen  # type: ignore[return-value]
