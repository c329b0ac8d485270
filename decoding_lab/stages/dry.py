"""DRY, "Don't Repeat Yourself" (p-e-w, text-generation-webui #5677; llama.cpp's ``dry``,
ported there from koboldcpp).

The repetition, presence and frequency penalties punish *tokens* that occurred before,
which also punishes "the", "," and every word a text legitimately needs again. DRY
punishes *sequences*: a token is penalised only when emitting it would continue a
stretch of text that already occurred, and the penalty grows exponentially with the
length of that stretch:

    penalty(c) = multiplier * base ** (L - allowed_length)     when L >= allowed_length,

where L is the length of the longest suffix of the history that also occurs earlier,
immediately followed by c. L counts only the tokens already in the history, not c
itself (llama.cpp's convention). The penalty is subtracted from c's logit.

    >>> h = History.from_lists([1, 2, 3, 1, 2], [])   # "1 2" occurred before, followed by 3
    >>> DRY(0.8, base=1.75, allowed_length=2).transform(torch.zeros(1, 5), h).tolist()
    [[0.0, 0.0, 0.0, -0.800000011920929, 0.0]]

(L = 2 for token 3, so its penalty is 0.8 * 1.75 ** 0 = 0.8; 0.8 in float32 prints as
0.800000011920929.)

*Sequence breakers* (newline, colon, quote, asterisk by default) stop a repeat: no match
may extend across one, so a chat's recurring "Name:" prefixes or list markers are not
punished, and a breaker token itself is never penalised.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any, TYPE_CHECKING

import torch

from decoding_lab.params import PARAMS
from decoding_lab.stages.base import History, SettingsError, Stage

if TYPE_CHECKING:  # a type hint only: the backends sit above this layer
    from decoding_lab.backends.base import LanguageModel

DEFAULT_BREAKERS: tuple[str, ...] = ("\n", ":", "\"", "*")

#: llama.cpp clamps the exponent so that base ** exponent stays below float32's max.
_FLOAT_MAX_LOG = 88.7228391
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
#: llama.cpp truncates each breaker string to 40 characters.
_MAX_BREAKER_CHARS = 40


def _f32(x: float) -> float:
    """x rounded to float32, as llama.cpp stores its parameters."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


class DRY(Stage):
    """The DRY penalty, mirroring llama.cpp's ``llama_sampler_dry_apply``.

    Parameters and their bounds (llama.cpp's own checks, plus bounds for a teaching UI):

    * ``multiplier`` in [0, 100]: 0 is off (llama.cpp's default; 0.8 is the usual "on").
    * ``base`` in [1, 100]: llama.cpp turns DRY off below 1 (the CLI ignores such a value);
      1 makes the penalty flat (``multiplier`` whatever the length). Default 1.75.
    * ``allowed_length``, a whole number in [1, 1000]: repeats shorter than this are free.
      Default 2. (llama.cpp does not check it; 0 would penalise every token that ever
      followed anything, a presence penalty in disguise.)
    * ``last_n``, a whole number >= -1: how many recent tokens are scanned. -1 means the
      whole history (llama.cpp: the context size), 0 turns DRY off, both as in llama.cpp,
      whose CLI rejects values below -1.

    History: ``history.ids``, prompt and output together (llama-server feeds the prompt
    tokens to the sampler too), windowed to the last ``last_n`` tokens when ``last_n > 0``.

    Breakers are strings; to know which token ids contain them the stage needs the
    vocabulary: ``bind(token_texts)`` records every id whose decoded text contains any
    breaker. An unbound DRY treats no token as a breaker. llama.cpp also recognises a
    breaker that *spans* several tokens (it tokenises the rest of the string and matches
    the token sequence); this stage does not. For a breaker inside a single token (the
    common case, and all four defaults in most vocabularies) the two agree.

    The one numeric difference: for a very long repeat llama.cpp clamps the exponent to
    ``max_exponent = int(88.7228391f / logf(base))``, so ``base ** max_exponent`` is about
    float32's largest value; times a multiplier > 1 (for base 2 even times 1, since float32
    rounds max_exponent up to 128) the penalty overflows to inf and the logit becomes -inf,
    a cut. We clamp the penalty to float32's largest value instead, so DRY stays a penalty
    and never empties the vocabulary. Everything else (the window, the breaker limit, the
    Z-algorithm, L, the exponent clamp) is llama.cpp's arithmetic.
    """

    name = "dry"

    @classmethod
    def from_settings(cls, s: Any) -> "DRY":
        return cls(s.dry_multiplier, s.dry_base, s.dry_allowed_length, s.dry_penalty_last_n)

    def bind_model(self, lm: LanguageModel) -> None:
        self.bind(lm.token_texts())

    def __init__(self, multiplier: float, base: float = 1.75, allowed_length: int = 2, last_n: int = -1,
                 breakers: tuple[str, ...] = DEFAULT_BREAKERS) -> None:
        self.multiplier = PARAMS["dry_multiplier"].check(multiplier)
        self.base = PARAMS["dry_base"].check(base)
        self.allowed_length = PARAMS["dry_allowed_length"].check(allowed_length)
        self.last_n = PARAMS["dry_penalty_last_n"].check(last_n)
        if isinstance(breakers, str) or not isinstance(breakers, (tuple, list)):
            raise SettingsError(f"DRY sequence breakers must be a list of strings, got {breakers!r:.80}")
        for b in breakers:
            if not isinstance(b, str):
                raise SettingsError(f"DRY sequence breakers must be strings, got {b!r:.40}")
        # As llama.cpp: empty breakers are skipped, long ones truncated to 40 characters.
        self.breakers: tuple[str, ...] = tuple(dict.fromkeys(b[:_MAX_BREAKER_CHARS] for b in breakers if b))
        self.breaker_ids: frozenset[int] = frozenset()

    def bind(self, token_texts: Sequence[str]) -> "DRY":
        """Record which token ids are breakers: those whose text contains any breaker string.
        ``token_texts[i]`` is the decoded text of token i. Returns the stage itself."""
        self.breaker_ids = frozenset(i for i, text in enumerate(token_texts)
                                     if any(b in text for b in self.breakers))
        return self

    def params(self) -> dict:
        return {"multiplier": self.multiplier, "base": self.base, "allowed_length": self.allowed_length,
                "last_n": self.last_n, "breakers": list(self.breakers)}

    def is_active(self) -> bool:
        return self.multiplier > 0.0 and self.base >= 1.0 and self.last_n != 0

    # ---- the algorithm, on one row -----------------------------------------------------------
    def repeat_lengths(self, tokens: Sequence[int]) -> dict[int, int]:
        """For one history (a list of ids, oldest first): ``{token c: L}`` for every c that would
        extend a repeat of length L >= allowed_length. Breaker tokens are included (the caller
        skips them). O(n) in the window length."""
        window = list(tokens[-self.last_n:]) if self.last_n > 0 else list(tokens)
        n = len(window)
        allowed = self.allowed_length
        if n <= allowed:
            return {}
        s = window[::-1]          # s[i] = i-th token from the end (llama.cpp's ring_buffer.rat(i))

        # Step 1: a repeat may not reach back past the most recent breaker. rep_limit = the number
        # of tokens after it (all of them when there is none).
        rep_limit = n
        for i, tok in enumerate(s):
            if tok in self.breaker_ids:
                rep_limit = i
                break
        if rep_limit < allowed:
            return {}

        # Step 2: Z-algorithm on the reversed window: z[k] = the length of the longest common
        # prefix of s and s[k:], i.e. how many tokens ending at "k from the end" equal the last
        # tokens of the history. Stored, capped at rep_limit, at the forward index n - 1 - k of
        # the token where that earlier occurrence ends (k = 0, the history itself, is skipped).
        count = [0] * n
        last = n - 1
        lt = rt = 0
        for k in range(1, n):
            if k > rt:                       # outside the current Z-box: compare naively
                m = 0
                while m + k < n and s[m] == s[m + k]:
                    m += 1
                count[last - k] = min(m, rep_limit)
                if m > 0:
                    lt, rt = k, k + m - 1
            else:                            # inside the box: reuse the value of the pair
                p = k - lt
                right = rt - k + 1
                if count[last - p] < right:
                    count[last - k] = min(count[last - p], rep_limit)
                else:
                    i = rt + 1
                    while i < n and s[i] == s[i - k]:
                        i += 1
                    count[last - k] = min(i - k, rep_limit)
                    lt, rt = k, i - 1

        # Step 3: an earlier occurrence ending at position f, of length L, is followed by
        # window[f + 1]: emitting that token would extend the repeat. Keep the longest L per token.
        longest: dict[int, int] = {}
        for f in range(n - 1):
            length = count[f]
            if length >= allowed:
                tok = window[f + 1]
                if longest.get(tok, -1) < length:
                    longest[tok] = length
        return longest

    def penalty(self, length: int) -> float:
        """``multiplier * base ** (length - allowed_length)``, with llama.cpp's exponent clamp
        (parameters rounded to float32 first, as llama.cpp holds them)."""
        base, multiplier = _f32(self.base), _f32(self.multiplier)
        exponent = length - self.allowed_length
        if base > 1.000001:
            # float32 arithmetic, as in llama.cpp (for base 2 this gives 128, not double's 127)
            max_exponent = int(_f32(_f32(_FLOAT_MAX_LOG) / _f32(math.log(base))))
            if max_exponent > 0:
                exponent = min(exponent, max_exponent)
        return min(multiplier * base ** exponent, _FLOAT32_MAX)

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        out = logits.clone()
        if not self.is_active():
            return out
        ids = history.ids
        vocab = out.shape[-1]
        for row in range(out.shape[0]):
            tokens = ids[row if ids.shape[0] > 1 else 0].tolist()
            for tok, length in self.repeat_lengths(tokens).items():
                if 0 <= tok < vocab and tok not in self.breaker_ids:
                    out[row, tok] -= self.penalty(length)
        return out
