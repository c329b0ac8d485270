"""Token healing: fix the prompt boundary before the model writes.

A tokenizer prefers long tokens. When the prompt ends in the middle of what the model
would normally write as *one* token, the model sees an unusual split and its next-token
distribution is distorted. Example with SmolLM2: ``'{"name": "'`` ends with the token
``' "'``, but in real JSON the model wrote ``' "'`` glued to what follows (``' "J'``,
``' ""'`` …) only rarely as a separate token — so after the lone ``' "'`` it is
unsure what to do.

Healing backs up: it removes the last prompt token(s) and asks the model to write them
again, allowing at the first step(s) only tokens consistent with the removed text:

    prompt  … ``:`` ``␣"``          →  healed prompt  … ``:``
    first token must start with ``␣"`` (``␣"``, ``␣"J``, ``␣""`` …) — or be a shorter piece
    of it (``␣``), after which the next token must finish it.

``heal_prompt`` returns the healed ids and a ``HealingMask`` stage that enforces that;
the stage is pass-through once the removed text has been written again.
``healing_demo`` shows the model's next-token distribution with and without healing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from decoding_lab.grammar.stage import ForbiddenChoice
from decoding_lab.grammar.vocab import GrammarTokenizer
from decoding_lab.stages.base import History, SettingsError, Stage
from decoding_lab.stats import probs
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import forward_fresh


@dataclass(frozen=True)
class HealingExtra:
    """What a ``HealingMask`` record adds (``StageRecord.extra``)."""

    remaining: str                  # removed prompt text still to be written again ('' once done)
    done: bool                      # pass-through: the removed text has been written again
    allowed: int                    # tokens consistent with ``remaining`` (every live token once done)
    preferred_forbidden: ForbiddenChoice | None = None   # the model's favourite, when healing forbade it


class HealingMask(Stage):
    """Until ``prefix`` has been written again, allow only tokens consistent with it.

    >>> gt = GrammarTokenizer.from_tokens(["<eos>", ' "', ' "J', ' ""', " ", '"', '"J', "J"], eos_ids=(0,))
    >>> h = HealingMask(' "', gt)
    >>> h.allowed_ids()               # tokens starting with ' "', or a shorter piece of it (' ')
    [1, 2, 3, 4]
    >>> h.accept(4); h.allowed_ids()  # after ' ' the next token must start with '"'
    [5, 6]
    >>> h.accept(6); h.done()         # '"J' finished the removed text: pass-through from here
    True
    """

    name = "healing"
    stateful = True

    def __init__(self, prefix: str | bytes, tokenizer: GrammarTokenizer) -> None:
        self.prefix = prefix.encode("utf-8") if isinstance(prefix, str) else bytes(prefix)
        if not self.prefix:
            raise SettingsError("token healing needs the removed text, got an empty string")
        self.vocab = tokenizer
        # A row is the stack of "bytes still to write" before each accepted token.
        self._main: list[bytes] = [self.prefix]
        self._batch: list[list[bytes]] | None = None
        self._masks: dict[bytes, torch.Tensor] = {}

    def params(self) -> dict[str, Any]:
        return {"prefix": self.prefix.decode("utf-8", "replace")}

    # ------------------------------------------------------------------ masks
    def _mask(self, remaining: bytes) -> torch.Tensor | None:
        if not remaining:
            return None
        if remaining not in self._masks:
            m = torch.zeros(self.vocab.vocab_size, dtype=torch.bool)
            m[self.vocab.ids_with_prefix(remaining)] = True
            self._masks[remaining] = m
        return self._masks[remaining]

    def allowed_ids(self, row: int | None = None) -> list[int]:
        m = self._mask(self._stack(row)[-1])
        return list(range(self.vocab.vocab_size)) if m is None else m.nonzero()[:, 0].tolist()

    def done(self, row: int | None = None) -> bool:
        """Has the removed text been written again (the stage is pass-through from now on)?"""
        return not self._stack(row)[-1]

    def allows(self, token_id: int) -> bool:
        m = self._mask(self._main[-1])
        return m is None or (0 <= int(token_id) < m.numel() and bool(m[int(token_id)]))

    def refusal(self, token_id: int) -> str:
        want = self._main[-1].decode("utf-8", "replace")
        return (f"token healing: the next token must continue the removed prompt text {want!r}; "
                f"{self.vocab.token_str(int(token_id))!r} does not")

    # ------------------------------------------------------------------ Stage API
    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        rows = self._batch if self._batch is not None and len(self._batch) == logits.shape[0] else \
            [self._main] * logits.shape[0]
        return self._apply_rows(rows, logits)

    def transform_one(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        """One row (the stepper): the stepper's own state, never a batch row."""
        return self._apply_rows([self._main], logits.unsqueeze(0))[0]

    def record_extra(self, before: torch.Tensor, after: torch.Tensor) -> HealingExtra:
        remaining = self._main[-1]
        m = self._mask(remaining)
        top = int(before.argmax())
        preferred = None
        if m is not None and (top >= m.numel() or not bool(m[top])):
            preferred = ForbiddenChoice(top, self.vocab.token_str(top), float(probs(before)[top]))
        return HealingExtra(remaining=remaining.decode("utf-8", "replace"), done=m is None,
                            allowed=int(m.sum()) if m is not None else int((before > float("-inf")).sum()),
                            preferred_forbidden=preferred)

    def _apply_rows(self, rows: list[list[bytes]], logits: torch.Tensor) -> torch.Tensor:
        out = logits.clone()
        for i, stack in enumerate(rows):
            m = self._mask(stack[-1])
            if m is not None:
                v = out.shape[-1]
                m = torch.cat([m, torch.zeros(max(0, v - m.numel()), dtype=torch.bool)])[:v]
                out[i] = out[i].masked_fill(~m, float("-inf"))
        return out

    def _step(self, stack: list[bytes], token_id: int) -> None:
        remaining = stack[-1]
        if remaining:
            tb = self.vocab.token_bytes()[token_id] if 0 <= token_id < self.vocab.vocab_size else b""
            if tb and tb.startswith(remaining):
                remaining = b""
            elif tb and remaining.startswith(tb):
                remaining = remaining[len(tb):]
            else:
                raise SettingsError(self.refusal(token_id))
        stack.append(remaining)

    def accept(self, token_id: int) -> None:
        self._step(self._main, int(token_id))

    def rollback(self, n_tokens: int) -> None:
        n = int(n_tokens)
        if not 0 <= n < len(self._main):
            raise SettingsError(f"cannot roll token healing back {n} tokens: it has seen {len(self._main) - 1}")
        if n:
            del self._main[-n:]

    def start(self, batch_size: int) -> None:
        self._batch = [list(self._main) for _ in range(int(batch_size))]

    def advance(self, parents: list[int], tokens: list[int]) -> None:
        if self._batch is None:
            raise SettingsError("advance() before start(): call start(n) when a batched generation begins")
        rows = [list(self._batch[int(p)]) for p in parents]
        for stack, tok in zip(rows, tokens):
            self._step(stack, int(tok))
        self._batch = rows

    def _stack(self, row: int | None) -> list[bytes]:
        if row is None:
            return self._main
        if self._batch is None:
            raise SettingsError(f"no batch row {row!r}")
        return self._batch[int(row)]

    def __deepcopy__(self, memo: dict) -> "HealingMask":
        new = copy.copy(self)
        new._main = list(self._main)
        new._batch = None if self._batch is None else [list(r) for r in self._batch]
        return new


@dataclass
class Healing:
    """The result of ``heal_prompt``."""

    prompt_ids: list[int]            # the healed prompt (the original minus the removed tokens)
    removed_ids: list[int]
    removed_text: str
    stage: HealingMask | None        # None when nothing was removed
    candidates: int = 0              # tokens allowed at the first step

    @property
    def healed(self) -> bool:
        return self.stage is not None

    def extra_stages(self) -> dict[str, Stage]:
        """For ``Stepper(..., extra_stages=...)`` / ``SamplingSettings.build_chain(extra=...)``."""
        return {"healing": self.stage} if self.stage is not None else {}


def heal_prompt(lm: LanguageModel, prompt_ids: list[int], n_tokens: int = 1) -> Healing:
    """Remove the last ``n_tokens`` prompt tokens (never special ones such as a chat
    template's markers, and never the whole prompt) and build the stage that makes the
    model write their text again. ``lm`` is a loaded model or a ``GrammarTokenizer``."""
    vocab = GrammarTokenizer.from_lm(lm)
    ids = [int(i) for i in prompt_ids]
    k = 0
    while k < int(n_tokens) and k < len(ids) - 1 and not vocab.is_special(ids[-1 - k]) \
            and vocab.token_bytes()[ids[-1 - k]]:
        k += 1
    if k == 0:
        return Healing(ids, [], "", None, 0)
    removed = ids[len(ids) - k:]
    prefix = b"".join(vocab.token_bytes()[i] for i in removed)
    stage = HealingMask(prefix, vocab)
    return Healing(ids[: len(ids) - k], removed, prefix.decode("utf-8", "replace"), stage, len(stage.allowed_ids()))


@dataclass
class HealingDemo:
    """Next-token distributions at the prompt boundary, without and with healing."""

    prompt_text: str
    removed_text: str
    without: list[dict[str, Any]] = field(default_factory=list)   # id, token, p  (after the full prompt)
    with_healing: list[dict[str, Any]] = field(default_factory=list)  # id, token, p_model, p (renormalised)
    allowed: int = 0                 # tokens consistent with the removed text
    consistent_mass: float = 0.0     # model mass on them at the healed position
    p_removed_token: float = 0.0     # chance the model writes the removed token again as it was

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@torch.inference_mode()
def healing_demo(lm: LanguageModel, prompt_ids: list[int], top_n: int = 10, n_tokens: int = 1) -> HealingDemo:
    """Run the model twice — on the full prompt and on the healed one — and list the top
    next tokens of each (``lm``: a loaded model)."""

    h = heal_prompt(lm, prompt_ids, n_tokens)
    p_full = probs(forward_fresh(lm, list(prompt_ids))[1][0])
    demo = HealingDemo(lm.decode(list(prompt_ids)), h.removed_text)
    demo.without = [{"id": int(i), "token": lm.token_str(int(i)), "p": float(p_full[i])}
                    for i in torch.topk(p_full, top_n).indices]
    if h.stage is None:
        return demo
    p_healed = probs(forward_fresh(lm, h.prompt_ids)[1][0])
    allowed = torch.zeros_like(p_healed, dtype=torch.bool)
    allowed[h.stage.allowed_ids()] = True
    mass = float(p_healed[allowed].sum())
    renorm = torch.where(allowed, p_healed, torch.zeros_like(p_healed)) / max(mass, 1e-300)
    demo.with_healing = [{"id": int(i), "token": lm.token_str(int(i)), "p_model": float(p_healed[i]),
                          "p": float(renorm[i])} for i in torch.topk(renorm, min(top_n, int(allowed.sum()))).indices]
    demo.allowed, demo.consistent_mass = int(allowed.sum()), mass
    demo.p_removed_token = float(renorm[h.removed_ids[0]]) if len(h.removed_ids) == 1 else 0.0
    return demo
