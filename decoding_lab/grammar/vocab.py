"""The bridge between a model's vocabulary and the grammar engine (llguidance).

A grammar speaks in *bytes* ("the next character must be a digit"); the model speaks in
*token ids*. llguidance needs to know the bytes of every token to turn one into the
other, so we wrap the model's tokenizer once in an ``LLTokenizer`` and keep, next to it,
the few facts the mask needs:

* ``vocab_size`` — the width of the model's logits. It can be *larger* than the
  tokenizer (SmolLM2's head has exactly 49,152 rows; some models pad their head to a
  multiple of 64). Rows past the tokenizer's end are not tokens at all: the mask never
  allows them.
* ``eos_ids`` — every id that ends generation. The grammar allows them exactly when the
  text so far is complete.

Worked example (a made-up five-token vocabulary; ids 0 and 1 are special)::

    >>> gt = GrammarTokenizer.from_tokens(["<bos>", "<eos>", "a", "b", "ab"], eos_ids=(1,), special_ids=(0,))
    >>> gt.vocab_size, gt.token_bytes()[4]
    (5, b'ab')
    >>> gt.unpack(bytes([0b00010100, 0, 0, 0])).tolist()     # bits 2 and 4 set: "a" and "ab"
    [False, False, True, False, True]

Building the wrapper for a 49k vocabulary takes ~0.3 s, so ``from_lm`` caches one per
(tokenizer, vocab size, eos ids): it is read-only and shared, like the model weights.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import llguidance
import numpy as np
import torch

from decoding_lab.grammar.constraints import GrammarError
from decoding_lab.backends.base import LanguageModel


@dataclass(eq=False)
class GrammarTokenizer:
    ll: llguidance.LLTokenizer          # what llguidance computes masks with
    vocab_size: int                     # width of the model's logits
    n_tokens: int                       # ids >= n_tokens have no tokenizer entry: never allowed
    eos_ids: tuple[int, ...]
    decode_one: Callable[[int], str] | None = field(default=None, repr=False)
    _bytes: list[bytes] | None = field(default=None, repr=False)
    _sorted: tuple[list[bytes], list[int]] | None = field(default=None, repr=False)
    _by_bytes: dict[bytes, list[int]] | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_hf(cls, tokenizer: Any, vocab_size: int | None = None, eos_ids: Sequence[int] | None = None,
                decode_one: Callable[[int], str] | None = None) -> "GrammarTokenizer":
        """Wrap a (fast) Hugging Face tokenizer. ``vocab_size`` is the model's logits width."""
        import llguidance.hf

        n_tokens = len(tokenizer)
        vocab = int(vocab_size or n_tokens)
        eos = tuple(int(i) for i in (eos_ids or [tokenizer.eos_token_id]) if i is not None)
        if not eos:
            raise GrammarError("this tokenizer has no end-of-sequence token, so a grammar could never end")
        try:
            ll = llguidance.hf.from_tokenizer(tokenizer, n_vocab=max(vocab, n_tokens), eos_token=list(eos))
        except Exception as e:  # slow (python-only) tokenizers are not supported by llguidance
            raise GrammarError(f"the grammar engine cannot read this tokenizer ({type(e).__name__}: "
                               f"{' '.join(str(e).split())[:160]}); it needs a fast tokenizer") from None
        return cls(ll, vocab, n_tokens, eos, decode_one or (lambda i: tokenizer.decode([i])))

    @classmethod
    def from_tokens(cls, tokens: Sequence[str | bytes], eos_ids: Sequence[int], special_ids: Sequence[int] = (),
                    vocab_size: int | None = None) -> "GrammarTokenizer":
        """A hand-made vocabulary (tests, tiny models): token i is ``tokens[i]``. Special tokens
        (``eos_ids`` and ``special_ids``) never match grammar text."""
        raw = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in tokens]
        specials = sorted(set(int(i) for i in eos_ids) | set(int(i) for i in special_ids))
        ll = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ListTokenizer(raw, specials, int(eos_ids[0]))),
                                    n_vocab=max(int(vocab_size or len(raw)), len(raw)))
        names = [t.decode("utf-8", "replace") for t in raw]
        return cls(ll, int(vocab_size or len(raw)), len(raw), tuple(int(i) for i in eos_ids),
                   lambda i: names[i] if 0 <= i < len(names) else f"<unused {i}>")

    @classmethod
    def from_lm(cls, lm: LanguageModel) -> "GrammarTokenizer":
        """The shared wrapper for a loaded model (``models.LoadedModel`` or anything with
        ``.tokenizer``, ``.vocab_size``, ``.eos_token_ids``). Built once, then cached."""
        if isinstance(lm, GrammarTokenizer):
            return lm
        own = getattr(lm, "grammar_tokenizer", None)  # e.g. a tiny test model that carries its own
        if isinstance(own, GrammarTokenizer):
            return own
        tok = getattr(lm, "tokenizer", None)
        if tok is None:
            raise GrammarError("this model has no tokenizer, so a grammar cannot be applied to it")
        vocab = int(getattr(lm, "vocab_size", None) or len(tok))
        eos = tuple(getattr(lm, "eos_token_ids", None) or (tok.eos_token_id,))
        key = (vocab, eos)
        with _LOCK:
            try:
                per_tok = _CACHE.setdefault(tok, {})
            except TypeError:  # not weak-referenceable: build without caching
                per_tok = {}
            hit = per_tok.get(key)
        if hit is not None:
            return hit
        built = cls.from_hf(tok, vocab, eos, getattr(lm, "token_str", None))
        with _LOCK:
            return per_tok.setdefault(key, built)

    # ------------------------------------------------------------------ queries
    def token_str(self, token_id: int) -> str:
        if self.decode_one is not None:
            return self.decode_one(int(token_id))
        return self.ll.decode_str([int(token_id)])

    def decode(self, ids: Sequence[int]) -> str:
        return self.ll.decode_str([int(i) for i in ids if 0 <= int(i) < self.n_tokens])

    def is_special(self, token_id: int) -> bool:
        return self.ll.is_special_token(int(token_id))

    def token_bytes(self) -> list[bytes]:
        """The bytes each token writes (b"" for special and unused ids). Built on first use."""
        if self._bytes is None:
            out = []
            for i in range(self.vocab_size):
                out.append(b"" if i >= self.n_tokens or self.ll.is_special_token(i) else self.ll.decode_bytes([i]))
            self._bytes = out
        return self._bytes

    def unpack(self, bitmask: bytes) -> torch.Tensor:
        """llguidance's bitmask (bit i of little-endian u32 word j = token 32j + i) ->
        a bool tensor over the model's logits, with padding rows always False."""
        bits = np.unpackbits(np.frombuffer(bitmask, dtype=np.uint8), bitorder="little")  # 0/1 bytes
        n = min(self.vocab_size, self.n_tokens, bits.size)
        allowed = torch.from_numpy(bits[: self.vocab_size].view(np.bool_))  # no copy: ~10 µs for 49k
        if n < self.vocab_size:
            allowed = torch.cat([allowed[:n], torch.zeros(self.vocab_size - n, dtype=torch.bool)])
        return allowed

    def ids_with_prefix(self, prefix: bytes) -> list[int]:
        """Tokens whose bytes start with ``prefix`` or are a non-empty proper prefix of it
        (token healing). Sorted-vocabulary bisection: no scan over 49k strings per call."""
        if self._sorted is None:
            pairs = sorted((b, i) for i, b in enumerate(self.token_bytes()) if b)
            self._sorted = ([b for b, _ in pairs], [i for _, i in pairs])
            by: dict[bytes, list[int]] = {}
            for b, i in pairs:
                by.setdefault(b, []).append(i)
            self._by_bytes = by
        keys, ids = self._sorted
        out: list[int] = []
        lo = bisect.bisect_left(keys, prefix)
        while lo < len(keys) and keys[lo].startswith(prefix):
            out.append(ids[lo])
            lo += 1
        for k in range(1, len(prefix)):
            out.extend(self._by_bytes.get(prefix[:k], ()))  # type: ignore[union-attr]
        return sorted(set(out))


class _ListTokenizer:
    """The minimal tokenizer object ``llguidance.TokenizerWrapper`` reads: token bytes, eos,
    specials, and an encoder (greedy longest match, enough for llguidance's own use)."""

    def __init__(self, tokens: list[bytes], specials: list[int], eos: int) -> None:
        self.tokens = tokens
        self.eos_token_id = eos
        self.bos_token_id = None
        self.special_token_ids = specials
        skip = set(specials)
        self._lookup = {t: i for i, t in enumerate(tokens) if i not in skip and t}
        self._longest = max((len(t) for t in self._lookup), default=1)

    def __call__(self, s: bytes | str) -> list[int]:
        data = s.encode("utf-8") if isinstance(s, str) else bytes(s)
        out, pos = [], 0
        while pos < len(data):
            for n in range(min(self._longest, len(data) - pos), 0, -1):
                tid = self._lookup.get(data[pos : pos + n])
                if tid is not None:
                    out.append(tid)
                    pos += n
                    break
            else:
                pos += 1  # a byte no token can write: skipped (only llguidance's helpers encode)
        return out


# Read-only wrappers shared by every session, keyed weakly by the HF tokenizer object.
_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
