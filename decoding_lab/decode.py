"""The decode core: rows of tokens, one forward for all of them, a chain and a pick for each.

Every complete decoding strategy is a configuration of one loop (gpt-fast's ``decode_one_token``
under plain and speculative decoding alike):

* **rows** — the sequences being written, each with its prompt, its tokens so far, and the
  log-probability and entropy of each choice;
* **chains** — the stage chains; each covers some rows and runs on their logits as one batch
  (a stateful stage, the grammar mask, keeps one state per row);
* **draws** — who picks each row's token: a seeded ``torch.Generator`` drawing for a set of rows of
  one chain, in the order ``torch.multinomial`` sees them, or the argmax.

How the strategies configure it:

========================  =========================================  ===========================
strategy                  chains                                     draws
========================  =========================================  ===========================
greedy                    one, over one row                          argmax
``sample(n)``             one, over n rows                           one generator for all n
Compare's columns         one per column, one row each               one generator per column
``sample_batch`` (P × n)  one, over every row                        one generator per prompt
========================  =========================================  ===========================

``Decoder.step()`` runs one forward for every live row (the prefill on the first step), each
chain over its live rows, each draw, the bookkeeping of what was chosen, and the end of each row
that wrote an end-of-sequence token or reached its limit: its cache row leaves the batch and its
chain forgets it. The stepper (one row, recorded stage by stage, with rewind and branches) and
beam search (its own selection over the same forward) call the same forward helpers here, so the
model's forward is called from this module and the backends only.

    >>> from types import SimpleNamespace
    >>> class Up:     # a stand-in model: the next token is always the last one + 1
    ...     def new_cache(self): return SimpleNamespace(batch_repeat_interleave=lambda n: None,
    ...                                                 batch_select_indices=lambda i: None)
    ...     def forward(self, ids, cache, attention_mask=None):
    ...         return torch.nn.functional.one_hot((ids[:, -1] + 1) % 8, 8).float() * 5
    >>> rows = [Row(prompt=[1], chain=0, draw=None)]
    >>> d = Decoder(Up(), rows, [Chain([], greedy=True)], max_new_tokens=6, eos={4})
    >>> while d.alive:
    ...     _ = d.step()
    >>> rows[0].tokens, rows[0].done
    ([2, 3, 4], True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from decoding_lab.backends.base import Backend, Cache, LanguageModel
from decoding_lab.chain import DeadEndError, apply_stages, select_greedy, select_sample
from decoding_lab.stages import History, Stage
from decoding_lab.fair_share import checkpoint

#: What the forward helpers take: a model (``lm.forward`` goes to its backend) or a backend itself
#: (the Temperature 0 paths run a bfloat16 copy's backend directly).
Forwards = LanguageModel | Backend

__all__ = ["Row", "Chain", "Decoder", "run", "prefill", "forward_next", "forward_more", "forward_fresh", "recompute",
           "row_entropies",
           "stack_caches"]


# ---------------------------------------------------------------------------- the forward helpers
def run(lm: Forwards, cache: Cache, ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``ids`` ``[rows, n]`` through ``cache`` (extended in place): the logits after the last position,
    ``[rows, vocab]``. ``lm`` is a model or a backend. Every forward of the lab goes through here,
    and so through ``fair_share.checkpoint``: between two passes, a job that holds a model slot
    lends it to a waiting visitor who should go first (a no-op outside the app's jobs)."""
    checkpoint()
    return lm.forward(ids, cache, attention_mask) if attention_mask is not None else lm.forward(ids, cache)


def prefill(lm: Forwards, prompt_ids: list[int], rows: int) -> tuple[Cache, torch.Tensor]:
    """Run the prompt once (batch 1), then repeat the cache and the logits to ``rows`` rows:
    n samples or n beams share one prefill instead of paying for n. ``lm`` is a model or a backend."""
    cache = lm.new_cache()
    logits = run(lm, cache, torch.tensor([list(prompt_ids)]))
    if rows > 1:
        cache.batch_repeat_interleave(rows)
        logits = logits.repeat(rows, 1)
    return cache, logits


def forward_next(lm: Forwards, cache: Cache, last_tokens: Sequence[int]) -> torch.Tensor:
    """One new position for each row of ``cache`` (its last chosen token), read from the cache:
    the logits ``[rows, vocab]`` of the next step."""
    return run(lm, cache, torch.tensor([[int(t)] for t in last_tokens]))


def forward_more(lm: Forwards, cache: Cache, ids: Sequence[int]) -> torch.Tensor:
    """Extend a one-row cache by several tokens (a rebuilt cache, a restored branch): ``[1, vocab]``."""
    return run(lm, cache, torch.tensor([list(ids)]))


def forward_fresh(lm: Forwards, ids: Sequence[int]) -> tuple[Cache, torch.Tensor]:
    """A new cache holding ``ids`` (one row), and the logits after them ``[1, vocab]``."""
    cache = lm.new_cache()
    return cache, run(lm, cache, torch.tensor([list(ids)]))


def recompute(backend: Any, ids: Sequence[int]) -> torch.Tensor:
    """The logits after ``ids`` ``[1, vocab]`` computed with no cache at all (a transformers backend's
    ``forward_uncached``): other matrix shapes than a cached step, so other rounding."""
    checkpoint()
    return backend.forward_uncached(torch.tensor([list(ids)]))


def stack_caches(caches: Sequence[Any]) -> Any:
    """One transformers ``DynamicCache`` holding the rows of ``caches`` in order (all of one
    length); reuses the first. Only a backend with ``caps.batch`` stacks rows."""
    out = caches[0]
    for i, layer in enumerate(out.layers):
        layer.keys = torch.cat([c.layers[i].keys for c in caches], dim=0)
        layer.values = torch.cat([c.layers[i].values for c in caches], dim=0)
    return out


def row_entropies(logits: torch.Tensor) -> list[float]:
    """Entropy (nats) of softmax of each row, in float64; -inf entries contribute 0 (``entr`` is
    -p ln p, 0 at p = 0: three passes over the vocabulary instead of five)."""
    h = torch.special.entr(torch.softmax(logits.double(), dim=-1)).sum(dim=-1)
    return (h + 0.0).tolist()  # + 0.0 turns -0.0 (a one-hot row) into 0.0


# ---------------------------------------------------------------------------- rows, chains, draws
@dataclass
class Row:
    """One sequence being written."""

    prompt: list[int]
    chain: int                       # index of the chain whose stages it runs through
    draw: int | None                 # index of the generator that picks its tokens (None: argmax)
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)    # of each choice, under its chain's final distribution
    entropies: list[float] = field(default_factory=list)   # of the raw distribution at each step
    done: bool = False


@dataclass
class Chain:
    """A stage chain over some rows. ``dead_end`` names a row in the message when the stages leave
    it no token (``{row}`` is its index, ``{label}`` the chain's label)."""

    stages: list[Stage]
    greedy: bool
    label: str = ""
    dead_end: str = "the stages left no token for sample {row}"


class Decoder:
    """Rows, chains and generators stepped together; see the module docstring.

    All rows start together from their prompts. Rows of one prompt share one prefill; prompts of
    one length are stacked (``sample_batch``). ``eos`` ends a row at that token (kept as its last);
    ``max_new_tokens`` at that length."""

    def __init__(self, lm: Forwards, rows: list[Row], chains: list[Chain], max_new_tokens: int, eos: set[int],
                 generators: Sequence[torch.Generator] = ()) -> None:
        self.lm, self.rows, self.chains = lm, rows, chains
        self.generators = list(generators)
        self.max_new_tokens, self.eos = max_new_tokens, eos
        self.alive = list(range(len(rows)))       # batch row b holds rows[alive[b]]
        self.step_index = 0
        self._cache: Cache | None = None
        self._logits: torch.Tensor | None = None
        for c, chain in enumerate(chains):
            for s in chain.stages:
                s.start(sum(1 for r in rows if r.chain == c))

    def _prefill(self) -> None:
        groups: list[tuple[list[int], int]] = []       # (prompt, how many consecutive rows start from it)
        for r in self.rows:
            if groups and groups[-1][0] == r.prompt:
                groups[-1] = (groups[-1][0], groups[-1][1] + 1)
            else:
                groups.append((r.prompt, 1))
        filled = [prefill(self.lm, p, n) for p, n in groups]     # batch-1 prefills: each prompt's own logits
        self._cache = filled[0][0] if len(filled) == 1 else stack_caches([c for c, _ in filled])
        self._logits = filled[0][1] if len(filled) == 1 else torch.cat([z for _, z in filled])

    def step(self) -> list[int]:
        """One token for every live row; returns the rows that ended at this step."""
        if not self.alive:
            raise RuntimeError("every row has ended")
        step = self.step_index
        if self._cache is None:
            self._prefill()
        else:   # every live row feeds its last token, all in one forward
            self._logits = forward_next(self.lm, self._cache, [self.rows[i].tokens[-1] for i in self.alive])
        logits = self._logits
        assert logits is not None
        entropies = row_entropies(logits)
        chosen = torch.empty(len(self.alive), dtype=torch.long)
        lps = torch.empty(len(self.alive), dtype=torch.float64)
        for c, chain in enumerate(self.chains):
            mine = [b for b, i in enumerate(self.alive) if self.rows[i].chain == c]
            if not mine:
                continue
            whole = len(mine) == len(self.alive)
            z = logits if whole else logits[mine]
            history = History(torch.tensor([self.rows[self.alive[b]].prompt + self.rows[self.alive[b]].tokens
                                            for b in mine]), len(self.rows[self.alive[mine[0]]].prompt))
            final = apply_stages(chain.stages, z, history)                          # [rows of this chain, vocab]
            dead = (~torch.isfinite(final).any(dim=-1)).nonzero().flatten().tolist()
            if dead:
                raise DeadEndError(f"step {step}: " + chain.dead_end.format(row=self.alive[mine[dead[0]]],
                                                                            label=chain.label))
            if chain.greedy:
                picks = select_greedy(final)
            else:   # each generator draws for its own rows, in their order: the stream of a lone run
                picks = torch.empty(len(mine), dtype=torch.long)
                for g in sorted({self.rows[self.alive[b]].draw for b in mine}, key=lambda g: (g is None, g)):
                    ours = [k for k, b in enumerate(mine) if self.rows[self.alive[b]].draw == g]
                    picks[ours] = select_sample(final[ours], self.generators[g]) if g is not None \
                        else select_greedy(final[ours])
            chosen[mine] = picks
            lps[mine] = torch.log_softmax(final.double(), dim=-1).gather(1, picks[:, None])[:, 0]
        ended = []
        for b, i in enumerate(self.alive):
            r = self.rows[i]
            r.tokens.append(int(chosen[b]))
            r.logprobs.append(float(lps[b]))
            r.entropies.append(entropies[b])
            if r.tokens[-1] in self.eos or len(r.tokens) >= self.max_new_tokens:
                r.done = True
                ended.append(i)
        self.step_index += 1
        self._drop_ended()
        return ended

    def _drop_ended(self) -> None:
        """Rows that ended leave the batch, their cache rows too; the chains' stateful stages take
        the kept rows' tokens."""
        keep = [b for b, i in enumerate(self.alive) if not self.rows[i].done]
        if not keep:
            self.alive = []
            return
        for c, chain in enumerate(self.chains):
            mine = [b for b, i in enumerate(self.alive) if self.rows[i].chain == c]
            kept = [k for k, b in enumerate(mine) if b in keep]
            if kept:
                for s in chain.stages:
                    s.advance(kept, [self.rows[self.alive[mine[k]]].tokens[-1] for k in kept])
        if len(keep) < len(self.alive):
            assert self._cache is not None
            self._cache.batch_select_indices(torch.tensor(keep))
            self.alive = [self.alive[b] for b in keep]

    def stop(self) -> None:
        """End every live row now (a caller's stop)."""
        for i in self.alive:
            self.rows[i].done = True
        self.alive = []
