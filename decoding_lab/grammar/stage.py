"""``GrammarMask``: the stage that lets the model write only what a grammar allows.

At every step the grammar engine (llguidance) looks at the text written so far and
answers "which tokens could come next and still lead to a valid text?" as a bitmask
over the vocabulary. The stage keeps the model's logits for those tokens and sets the
rest to -inf — nothing else changes, so the model still *ranks* the allowed tokens.

Worked example (a hand-made vocabulary; the grammar is "one of yes / no")::

    >>> gt = GrammarTokenizer.from_tokens(["<eos>", "y", "yes", "no", "n", "o"], eos_ids=(0,))
    >>> g = GrammarMask(choices(["yes", "no"]), tokenizer=gt)
    >>> z = torch.zeros(6)
    >>> out, rec = g.apply(z, History.empty())
    >>> [gt.token_str(i) for i in range(6) if out[i] > float("-inf")]   # "o" cannot start yes/no
    ['y', 'yes', 'no', 'n']
    >>> g.accept(2); g.is_accepting()                                    # "yes" is a complete text
    True
    >>> out, rec = g.apply(z, History.empty()); rec.extra.forced         # only <eos> is left
    True
    >>> rec.extra.forced_token
    ForcedToken(id=0, token='<eos>')

What the record adds (``record.extra``, a ``GrammarExtra``): ``allowed`` (tokens the
grammar allows), ``forced`` (exactly one) and ``forced_token`` (which), ``mask_seconds`` /
``mask_cpu_seconds`` (engine wall and CPU time for this mask), ``accepting`` (may stop
here), and ``preferred_forbidden`` — the model's own favourite token when the grammar
forbade it, with its probability (a ``ForbiddenChoice``): the price the constraint made
the model pay.

State. The grammar is the only stage whose answer depends on what was *chosen*, so it
keeps a matcher per row. The one-row stepper calls ``apply`` → ``accept(token)`` and
``rollback(n)`` on rewind; complete strategies call ``start(n)`` (n copies of the
stepper's current state) and ``advance(parents, tokens)`` (reorder by back-pointers,
then consume). The two never share rows, so a batched generation leaves the stepper's
state untouched. Used as a transformers ``LogitsProcessor`` inside ``model.generate``
(greedy or sampling, not beam search), it follows the growing ``input_ids`` itself.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

import llguidance
import torch

from decoding_lab.chain import DeadEndError
from decoding_lab.grammar.constraints import (Constraint, GrammarError, _is_dead_end, _limits, _short, engine_error,
                                              engine_call,
                                              choices)  # noqa: F401  (choices: used by the docstring example)
from decoding_lab.grammar.vocab import GrammarTokenizer
from decoding_lab.stages.base import History, SettingsError, Stage
from decoding_lab.stats import probs
from decoding_lab.backends.base import LanguageModel


@dataclass(frozen=True)
class ForbiddenChoice:
    """The model's favourite token at a step where a mask forbade it, and the probability it had."""

    id: int
    token: str
    p: float


@dataclass(frozen=True)
class ForcedToken:
    """The one token a mask allowed (a forced step)."""

    id: int
    token: str


@dataclass(frozen=True)
class GrammarExtra:
    """What a ``GrammarMask`` record adds (``StageRecord.extra``)."""

    allowed: int                                  # tokens the grammar allows at this step
    forced: bool                                  # exactly one allowed
    mask_seconds: float                           # engine wall time to compute this mask
    mask_cpu_seconds: float                       # CPU time of this thread for it
    accepting: bool                               # the text so far is complete: generation may stop here
    preferred_forbidden: ForbiddenChoice | None = None   # the model's favourite, when the grammar forbade it
    forced_token: ForcedToken | None = None       # the only allowed token, on a forced step


@dataclass
class _Row:
    """One sequence's grammar state. ``consumed[i]`` says whether token i reached the
    matcher (an EOS after the grammar already stopped is recorded but not consumed), so
    ``rollback(n)`` rewinds the matcher by exactly the right count."""

    matcher: llguidance.LLMatcher
    tokens: list[int] = field(default_factory=list)
    consumed: list[bool] = field(default_factory=list)
    finished: bool = False                  # an EOS was accepted
    mask: torch.Tensor | None = None        # cached allowed set for the current state
    mask_seconds: float = 0.0               # wall time to compute it
    mask_cpu_seconds: float = 0.0           # CPU time of this thread (what the engine really cost)

    def copy(self) -> "_Row":
        return _Row(self.matcher.deep_copy(), list(self.tokens), list(self.consumed), self.finished,
                    self.mask, self.mask_seconds, self.mask_cpu_seconds)


class GrammarMask(Stage):
    """Allow only tokens that keep the output inside ``constraint``'s language."""

    name = "grammar"
    stateful = True

    def __init__(self, constraint: Constraint, lm: LanguageModel | None = None, *, tokenizer: GrammarTokenizer | None = None) -> None:
        if not isinstance(constraint, Constraint):
            raise GrammarError("GrammarMask needs a Constraint (see decoding_lab.grammar: regex, json_schema, "
                               "choices, lark, gbnf, preset)")
        if tokenizer is None and lm is None:
            raise GrammarError("GrammarMask needs the model (or its GrammarTokenizer) to know the vocabulary")
        self.constraint = constraint
        self.vocab = tokenizer or GrammarTokenizer.from_lm(lm)
        t0 = time.perf_counter()
        matcher = engine_call(constraint.label(), llguidance.LLMatcher, self.vocab.ll, constraint.grammar, log_level=0,
                              limits=_limits())
        if matcher.is_error():
            raise engine_error(constraint.kind, constraint.source, matcher.get_error())
        self._main = _Row(matcher)
        try:
            self._row_mask(self._main)
        except DeadEndError:
            err = matcher.get_error()
            if err and not _is_dead_end(err):
                raise engine_error(constraint.kind, constraint.source, err) from None
            raise GrammarError(f"no token of this model's vocabulary can start a text of the grammar "
                               f"({constraint.label()})") from None
        self.compile_seconds = time.perf_counter() - t0
        self._batch: list[_Row] | None = None
        self._lp_seen: int | None = None     # LogitsProcessor mode: sequence length seen last call

    # ------------------------------------------------------------------ Stage API
    def params(self) -> dict[str, Any]:
        return {"kind": self.constraint.kind, "grammar": self.constraint.label()}

    def transform_one(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        """One row (the stepper): always the stepper's own state, never a batch row."""
        return self._masked([self._main], logits.unsqueeze(0))[0]

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        """``[batch, vocab]``: the rows of the running batch (``start``/``advance``), or the
        stepper's state repeated when no batch was started."""
        b = logits.shape[0]
        if self._batch is None:
            rows = [self._main] * b
        elif len(self._batch) == b:
            rows = self._batch
        else:
            raise SettingsError(f"the grammar stage tracks {len(self._batch)} rows but got {b}; "
                                "call start(n) before a batched generation")
        return self._masked(rows, logits)

    def record_extra(self, before: torch.Tensor, after: torch.Tensor) -> GrammarExtra:
        row = self._main
        mask = self._row_mask(row)
        allowed = int(mask.sum())
        top = int(before.argmax())
        forced_token = None
        if allowed == 1:
            only = int(mask.nonzero()[0, 0])
            forced_token = ForcedToken(only, self.vocab.token_str(only))
        preferred = None
        if top >= mask.numel() or not bool(mask[top]):
            preferred = ForbiddenChoice(top, self.vocab.token_str(top), float(probs(before)[top]))
        return GrammarExtra(allowed=allowed, forced=allowed == 1, mask_seconds=row.mask_seconds,
                            mask_cpu_seconds=row.mask_cpu_seconds, accepting=self.is_accepting(),
                            preferred_forbidden=preferred, forced_token=forced_token)

    # ------------------------------------------------------------------ the one-row stepper
    def allows(self, token_id: int) -> bool:
        """May the stepper's next token be ``token_id``? (Check forced tokens with this *before*
        committing a step; ``refusal`` gives the message.)"""
        mask = self._row_mask(self._main)
        return 0 <= int(token_id) < mask.numel() and bool(mask[int(token_id)])

    def refusal(self, token_id: int) -> str:
        mask = self._row_mask(self._main)
        examples = ", ".join(repr(self.vocab.token_str(int(i))) for i in mask.nonzero()[:5, 0].tolist())
        more = "" if int(mask.sum()) <= 5 else f" … ({int(mask.sum())} in all)"
        return (f"the grammar ({self.constraint.label()}) does not allow token {int(token_id)} "
                f"{self.vocab.token_str(int(token_id))!r} here; it allows {examples}{more}")

    def accept(self, token_id: int) -> None:
        self._consume(self._main, int(token_id))

    def rollback(self, n_tokens: int) -> None:
        self._rollback(self._main, int(n_tokens))

    def reset(self) -> None:
        """Back to the empty text (the stepper's state) and no batch."""
        self._rollback(self._main, len(self._main.tokens))
        self._batch = None

    def is_accepting(self, row: int | None = None) -> bool:
        """Could generation stop here with a valid text? (``row``: a batch row; None: the stepper.)"""
        r = self._row(row)
        return r.finished or (not r.matcher.is_error() and r.matcher.is_accepting())

    def is_finished(self, row: int | None = None) -> bool:
        """Is the text complete with nothing more allowed (EOS accepted, or only EOS left)?"""
        r = self._row(row)
        return r.finished or (not r.matcher.is_error() and r.matcher.is_stopped())

    def status(self, row: int | None = None) -> str:
        """'finished' | 'complete' (may stop, may go on) | 'incomplete' — for "not finished within N tokens"."""
        return "finished" if self.is_finished(row) else "complete" if self.is_accepting(row) else "incomplete"

    def allowed_ids(self, row: int | None = None) -> list[int]:
        return self._row_mask(self._row(row)).nonzero()[:, 0].tolist()

    # ------------------------------------------------------------------ batched generation
    def start(self, batch_size: int) -> None:
        if int(batch_size) < 1:
            raise SettingsError(f"batch size must be >= 1, got {batch_size!r}")
        self._batch = [self._main.copy() for _ in range(int(batch_size))]

    def advance(self, parents: list[int], tokens: list[int]) -> None:
        if self._batch is None:
            raise SettingsError("advance() before start(): call start(n) when a batched generation begins")
        if len(parents) != len(tokens):
            raise SettingsError(f"advance: {len(parents)} parents but {len(tokens)} tokens")
        old, used, rows = self._batch, set(), []
        for p in parents:  # copy every state before consuming anything: children of one parent stay independent
            p = int(p)
            if not 0 <= p < len(old):
                raise SettingsError(f"advance: parent {p} out of range (batch has {len(old)} rows)")
            rows.append(old[p] if p not in used else old[p].copy())
            used.add(p)
        for row, tok in zip(rows, tokens):
            self._consume(row, int(tok))
        self._batch = rows

    # ------------------------------------------------------------------ transformers LogitsProcessor
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Inside ``model.generate``: the first call starts one row per sequence, later calls
        consume the token each row gained since (greedy / sampling; beam search reorders rows
        without telling processors, so use the lab's own beam search for that)."""
        length, b = int(input_ids.shape[1]), int(input_ids.shape[0])
        if self._lp_seen is None or length <= self._lp_seen or self._batch is None:
            self.start(b)
        else:
            for step in range(self._lp_seen, length):
                self.advance(list(range(b)), input_ids[:, step].tolist())
        self._lp_seen = length
        return self.transform(scores, History(input_ids, self.prompt_len))

    # ------------------------------------------------------------------ sharing
    def __deepcopy__(self, memo: dict) -> "GrammarMask":
        """Session state is deep-copied (gradio): copy the matchers, share the vocabulary."""
        new = copy.copy(self)
        new._main = self._main.copy()
        new._batch = None if self._batch is None else [r.copy() for r in self._batch]
        return new

    # ------------------------------------------------------------------ internals
    def _row(self, row: int | None) -> _Row:
        if row is None:
            return self._main
        if self._batch is None or not 0 <= int(row) < len(self._batch):
            raise SettingsError(f"no batch row {row!r}")
        return self._batch[int(row)]

    def _row_mask(self, row: _Row) -> torch.Tensor:
        """The allowed set for ``row``'s current state (computed once per state)."""
        if row.mask is not None:
            return row.mask
        if row.finished:  # after EOS only EOS (finished rows of a batch keep "writing" EOS)
            mask = torch.zeros(self.vocab.vocab_size, dtype=torch.bool)
            mask[[i for i in self.vocab.eos_ids if i < self.vocab.vocab_size]] = True
            row.mask, row.mask_seconds, row.mask_cpu_seconds = mask, 0.0, 0.0
            return mask
        m = row.matcher
        if m.is_error():
            raise DeadEndError(self._engine_error(row))
        t0, c0 = time.perf_counter(), time.thread_time()
        bits = m.compute_bitmask()
        mask = self.vocab.unpack(bits)
        seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
        if m.is_error():
            raise DeadEndError(self._engine_error(row))
        if m.is_accepting():  # a complete text may always end here
            mask[[i for i in self.vocab.eos_ids if i < self.vocab.vocab_size]] = True
        if not bool(mask.any()):
            raise DeadEndError(f"dead end: no token can continue {self._tail(row)} under the grammar "
                               f"({self.constraint.label()})")
        row.mask, row.mask_seconds, row.mask_cpu_seconds = mask, seconds, cpu
        return mask

    def _masked(self, rows: list[_Row], logits: torch.Tensor) -> torch.Tensor:
        v = logits.shape[-1]
        masks = []
        for row in rows:
            m = self._row_mask(row)
            if m.numel() != v:  # logits wider/narrower than the vocabulary we were built for
                m = torch.cat([m, torch.zeros(max(0, v - m.numel()), dtype=torch.bool)])[:v]
            masks.append(m)
        allowed = torch.stack(masks)
        out = logits.masked_fill(~allowed, float("-inf"))
        alive = out > float("-inf")
        for i in range(out.shape[0]):
            if not bool(alive[i].any()):
                n = int(allowed[i].sum())
                raise DeadEndError(f"the grammar allows {n} token{'s' if n != 1 else ''} here but the stages before "
                                   "it removed all of them; put 'grammar' first in the stage order")
        return out

    def _consume(self, row: _Row, tok: int) -> None:
        eos = tok in self.vocab.eos_ids
        if row.finished or (eos and not row.matcher.is_error() and row.matcher.is_stopped()):
            # Past the end: nothing left to match (vLLM does the same). Recorded so rollback stays exact.
            row.tokens.append(tok)
            row.consumed.append(False)
            row.finished = row.finished or eos
            row.mask = None
            return
        mask = self._row_mask(row)
        if not (0 <= tok < mask.numel() and bool(mask[tok])):
            raise SettingsError(self.refusal(tok) if row is self._main else
                                f"the grammar does not allow token {tok} {self.vocab.token_str(tok)!r} here")
        if row.matcher.validate_tokens([tok]) != 1:
            # The mask allowed it but the parser refuses: llguidance assumes any byte string can be
            # tokenized, so this happens when the vocabulary cannot write the text the grammar forces next.
            forced = row.matcher.compute_ff_bytes().decode("utf-8", "replace")
            raise DeadEndError(f"dead end: the grammar requires {forced!r} next, which no sequence of this "
                               f"vocabulary's tokens starting with {self.vocab.token_str(tok)!r} can write")
        if not row.matcher.consume_token(tok):
            raise DeadEndError(self._engine_error(row))
        row.tokens.append(tok)
        row.consumed.append(True)
        row.finished = eos
        row.mask = None

    def _rollback(self, row: _Row, n: int) -> None:
        if n < 0 or n > len(row.tokens):
            raise SettingsError(f"cannot roll the grammar back {n} tokens: it has seen {len(row.tokens)}")
        if n == 0:
            return
        k = sum(row.consumed[-n:])
        if k and not row.matcher.rollback(k):
            raise DeadEndError(self._engine_error(row))
        del row.tokens[-n:], row.consumed[-n:]
        row.finished = any(t in self.vocab.eos_ids for t in row.tokens)
        row.mask = None

    def _tail(self, row: _Row) -> str:
        text = self.vocab.decode(row.tokens)
        return repr(_short(text[-40:], 40)) if text else "the empty text"

    def _engine_error(self, row: _Row) -> str:
        err = row.matcher.get_error()
        if _is_dead_end(err):
            return (f"dead end: no token can continue {self._tail(row)} under the grammar "
                    f"({self.constraint.label()})")
        return f"the grammar engine stopped: {_short(err.strip().splitlines()[0] if err.strip() else 'unknown error', 200)}"


def mask_seconds_per_token(records: list[Any]) -> list[float]:
    """The ``mask_seconds`` of each grammar record in a list of StageRecords (for plots)."""
    return [r.extra.mask_seconds for r in records if isinstance(getattr(r, "extra", None), GrammarExtra)]
