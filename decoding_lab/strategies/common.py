"""Small helpers shared by the strategies: argument checks, results, stateful stages.

The loop itself ("one cached forward for every row -> stages -> selector") is the decode
core's (``decoding_lab.decode``); greedy, sampling, Compare's columns and batched prompts are
configurations of it, and beam search runs its own selection on the same forward helpers.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, TypeVar


from decoding_lab import limits
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError, Stage
from decoding_lab.stepper import check_prompt_ids
from decoding_lab.strategies.result import GeneratedSequence
from decoding_lab.backends.base import LanguageModel

T = TypeVar("T")

#: Called between steps; returning True ends the run (the result so far is returned).
StopFn = Callable[[], bool]


def max_new_tokens_limit() -> int:
    """Same cap as the stepper (``DECODING_LAB_MAX_NEW_TOKENS``, see ``decoding_lab.limits``)."""
    return limits.current().max_new_tokens


def check_prompt(lm: LanguageModel, prompt_ids: Iterable[int]) -> list[int]:
    """Non-empty, inside the vocabulary, no longer than ``DECODING_LAB_MAX_PROMPT_TOKENS``."""
    return check_prompt_ids(lm, prompt_ids)


def check_count(name: str, value: Any, lo: int = 1, hi: int | None = None) -> int:
    """A whole number in [lo, hi]; the message names the setting and the bad value."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError.coded("not_whole", name=name, got=repr(value))
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


def eos_set(lm: LanguageModel) -> set[int]:
    return {int(t) for t in (getattr(lm, "eos_token_ids", ()) or ())}


def start_stages(stages: list[Stage], rows: int) -> None:
    for s in stages:
        s.start(rows)


def advance_stages(stages: list[Stage], parents: list[int], tokens: list[int]) -> None:
    for s in stages:
        s.advance(parents, tokens)


def make_sequence(lm: LanguageModel, tokens: list[int], logprobs: list[float], entropies: list[float], score: float,
                  eos: set[int]) -> GeneratedSequence:
    """Package one output; the text leaves out a final end-of-sequence token."""
    finished = bool(tokens) and tokens[-1] in eos
    text = lm.decode(tokens[:-1] if finished else tokens)
    return GeneratedSequence(list(tokens), text, float(score), list(logprobs), finished, list(entropies))


def settings_json(lm: LanguageModel, settings: SamplingSettings, **extra: Any) -> dict[str, Any]:
    return {"model": getattr(lm, "name", "?"), **settings.to_json(), **extra}


def primed(gen: Iterator[T | None]) -> Iterator[T]:
    """Run a strategy's generator up to its first ``yield None``, which comes right after
    the argument checks: bad settings raise when ``iter_*`` is *called*, not at the first
    ``next()``, while the model work still waits for the consumer."""
    first = next(gen)
    assert first is None
    return gen  # type: ignore[return-value]
