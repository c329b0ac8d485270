"""Stages that look at what was already written: repetition, presence and frequency
penalties, n-gram blocking, and a plain logit bias.

Three penalty families, three different pieces of arithmetic:

* repetition penalty (Keskar et al. 2019, CTRL; transformers, vLLM, llama.cpp):
  multiplicative, ``z / r`` for positive logits and ``z * r`` for negative ones, applied
  once to every token that occurs in the history. Because it depends on the *sign* of a
  logit, and a softmax does not care about adding a constant to every logit, it is not
  shift-invariant: the same r does different things on models whose logits sit at
  different offsets.
* presence penalty (OpenAI): ``z - alpha`` for every token that has appeared at least once.
* frequency penalty (OpenAI): ``z - beta * count``, growing with each repetition.
  Both additive forms commute with a constant shift of all logits.

Which tokens each penalty counts is an engine rule (``decoding_lab.engines``):

* transformers / vLLM: the repetition penalty counts prompt + output; presence and
  frequency count the *generated* tokens only (OpenAI's definition), or the prompt too
  with ``include_prompt=True`` (the checkbox, in a custom order);
* llama.cpp (llama-server): all three count the last ``last_n`` = 64 tokens of prompt +
  output, one window for the three;
* llama-cpp-python's ``Llama.generate``: the same window over the output only.
"""

from __future__ import annotations

import torch

from typing import Any

from decoding_lab.params import PARAMS
from decoding_lab.stages.base import History, SettingsError, Stage


def _window(history: History, include_prompt: bool, last_n: int = 0) -> torch.Tensor:
    ids = history.ids if include_prompt else history.output()
    if last_n > 0:
        ids = ids[:, -last_n:]
    return ids


def _count_rule(s: Any) -> dict:
    """Presence / frequency: which tokens count, by the settings' engine rules."""
    rules = s.rules
    prompt = s.penalty_include_prompt if rules.presence_prompt is None else rules.presence_prompt
    return {"include_prompt": prompt, "last_n": s.penalty_window if rules.shared_window else 0}


def _counts(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """Token counts per row, ``[batch, vocab]``; ids outside the vocabulary are ignored."""
    counts = torch.zeros((ids.shape[0], vocab + 1), dtype=torch.float32, device=ids.device)
    if ids.numel():
        counts.scatter_add_(1, ids.clamp(min=0, max=vocab), torch.ones_like(ids, dtype=torch.float32))
    return counts[:, :vocab]


class RepetitionPenalty(Stage):
    """CTRL's multiplicative penalty. r > 1 discourages repeats, r < 1 encourages them.

    >>> h = History.from_lists([0], [])
    >>> RepetitionPenalty(2.0).transform(torch.tensor([[3.0, 1.0]]), h).tolist()
    [[1.5, 1.0]]
    >>> RepetitionPenalty(2.0).transform(torch.tensor([[-3.0, 1.0]]), h).tolist()
    [[-6.0, 1.0]]
    """

    name = "repetition-penalty"

    def __init__(self, penalty: float, include_prompt: bool = True, last_n: int = 0) -> None:
        self.penalty = PARAMS["repetition_penalty"].check(penalty)
        self.include_prompt = bool(include_prompt)
        self.last_n = max(0, PARAMS["repetition_window"].check(last_n))  # -1 (the preset's rule) resolves before here

    @classmethod
    def from_settings(cls, s: Any) -> "RepetitionPenalty":
        return cls(s.repetition_penalty, include_prompt=s.rules.repetition_prompt, last_n=s.penalty_window)

    def params(self) -> dict:
        return {"r": self.penalty, "include_prompt": self.include_prompt, "last_n": self.last_n}

    def is_active(self) -> bool:
        return self.penalty != 1.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        seen = _counts(_window(history, self.include_prompt, self.last_n), logits.shape[-1]) > 0
        penalised = torch.where(logits < 0, logits * self.penalty, logits / self.penalty)
        return torch.where(seen, penalised, logits)


class PresencePenalty(Stage):
    """Subtract a constant from every token already present.

    >>> h = History.from_lists([], [1, 1])
    >>> PresencePenalty(0.5).transform(torch.tensor([[0.0, 2.0]]), h).tolist()
    [[0.0, 1.5]]
    """

    name = "presence-penalty"

    def __init__(self, alpha: float, include_prompt: bool = False, last_n: int = 0) -> None:
        self.alpha = PARAMS["presence_penalty"].check(alpha)
        self.include_prompt = bool(include_prompt)
        self.last_n = max(0, PARAMS["repetition_window"].check(last_n))

    @classmethod
    def from_settings(cls, s: Any) -> "PresencePenalty":
        return cls(s.presence_penalty, **_count_rule(s))

    def params(self) -> dict:
        return {"alpha": self.alpha, "include_prompt": self.include_prompt, "last_n": self.last_n}

    def is_active(self) -> bool:
        return self.alpha != 0.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        seen = _counts(_window(history, self.include_prompt, self.last_n), logits.shape[-1]) > 0
        return logits - self.alpha * seen.to(logits.dtype)


class FrequencyPenalty(Stage):
    """Subtract ``beta`` times the number of times each token has appeared.

    >>> h = History.from_lists([], [1, 1, 1])
    >>> FrequencyPenalty(0.5).transform(torch.tensor([[0.0, 2.0]]), h).tolist()
    [[0.0, 0.5]]
    """

    name = "frequency-penalty"

    def __init__(self, beta: float, include_prompt: bool = False, last_n: int = 0) -> None:
        self.beta = PARAMS["frequency_penalty"].check(beta)
        self.include_prompt = bool(include_prompt)
        self.last_n = max(0, PARAMS["repetition_window"].check(last_n))

    @classmethod
    def from_settings(cls, s: Any) -> "FrequencyPenalty":
        return cls(s.frequency_penalty, **_count_rule(s))

    def params(self) -> dict:
        return {"beta": self.beta, "include_prompt": self.include_prompt, "last_n": self.last_n}

    def is_active(self) -> bool:
        return self.beta != 0.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        counts = _counts(_window(history, self.include_prompt, self.last_n), logits.shape[-1])
        return logits - self.beta * counts.to(logits.dtype)


class NoRepeatNGram(Stage):
    """Forbid any token that would complete an n-gram already present in the history
    (prompt included, as transformers does).

    >>> h = History.from_lists([], [5, 6, 7, 5])
    >>> NoRepeatNGram(2).transform(torch.zeros(1, 8), h)[0, 6].item()   # "5 6" occurred
    -inf
    """

    name = "no-repeat-ngram"

    def __init__(self, n: int) -> None:
        self.n = PARAMS["no_repeat_ngram_size"].check(n)

    @classmethod
    def from_settings(cls, s: Any) -> "NoRepeatNGram":
        return cls(s.no_repeat_ngram_size)

    def params(self) -> dict:
        return {"n": self.n}

    def is_active(self) -> bool:
        return self.n > 0

    def banned(self, tokens: list[int]) -> list[int]:
        n = self.n
        if n <= 0 or len(tokens) + 1 < n:
            return []
        prefix = tuple(tokens[len(tokens) - n + 1 :]) if n > 1 else ()
        return [tokens[i + n - 1] for i in range(len(tokens) - n + 1) if tuple(tokens[i : i + n - 1]) == prefix]

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        out = logits.clone()
        for row in range(out.shape[0]):
            ban = [t for t in self.banned(history.ids[row].tolist()) if 0 <= t < out.shape[-1]]
            if ban:
                out[row, ban] = float("-inf")
        return out


class LogitBias(Stage):
    """Add a fixed bias to chosen token ids (OpenAI's ``logit_bias``; -100 effectively bans).

    >>> LogitBias({1: -100.0}).transform(torch.zeros(1, 3), History.empty()).tolist()
    [[0.0, -100.0, 0.0]]
    """

    name = "logit-bias"

    def __init__(self, bias: dict[int, float]) -> None:
        self.bias: dict[int, float] = dict(PARAMS["logit_bias"].check(dict(bias)))

    @classmethod
    def from_settings(cls, s: Any) -> "LogitBias":
        return cls(dict(s.logit_bias))

    def params(self) -> dict:
        return {"bias": {str(k): v for k, v in self.bias.items()}}

    def is_active(self) -> bool:
        return bool(self.bias)

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        out = logits.clone()
        for tok, b in self.bias.items():
            if tok >= out.shape[-1]:
                raise SettingsError(f"logit bias token id {tok} is outside the vocabulary ({out.shape[-1]})")
            out[:, tok] += b
        return out
