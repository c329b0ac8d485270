"""The verifier-tilted temperature: logits' = (z + eta * V) / T.

A recent analysis of pass@k-optimal decoding (seed text 003) finds that, under an
entropy floor and a cross-entropy ceiling, the best sampling distribution has the form

    q*(y) ∝ (p(y) · exp(eta · V(y)))^(1/T)

where V is a *verifier potential* (how likely the text so far is to end up passing),
eta a multiplier and T a temperature. At the token level, with raw logits z (log p up
to a constant), that is exactly the logits ``(z + eta * V) / T``: add eta·V to each
candidate's logit, then divide by T. Special cases:

* ``eta = 0``: plain temperature sampling, ``z / T`` (bit for bit: V is not even computed);
* ``T -> 0``: the distribution concentrates on the argmax of ``z + eta * V`` (split evenly
  on an exact tie); greedy selection (settings temperature 0) takes that argmax, the
  lowest token id on an exact tie. With ``outside`` = "min" or "cut" the argmax is always
  a scored candidate: a non-candidate has lower z *and* no higher V than every candidate;
* verifier-greedy: when eta is large enough that ``eta * (V_a - V_b) > z_b - z_a`` for
  every pair with ``V_a > V_b``, that argmax is the candidate with the highest V, and
  among candidates with equal V the one with the highest z. (T -> 0 alone is *not*
  verifier-greedy: with small eta the model's preference can still win.)

V is only known for candidates we pay to score: ``VerifierTilt`` scores the ``top_m``
tokens by z; every other token gets ``outside``: ``"min"`` (the lowest candidate V: no
token outside the candidates gains on them), ``"cut"`` (-inf: the stage also truncates
to the top m), or a number.

Worked example (V favours token 2)::

    >>> V = lambda prefix, prompt_len, cands: [1.0 if c == 2 else 0.0 for c in cands]
    >>> z = torch.tensor([[2.0, 1.0, 0.0]])
    >>> VerifierTilt(V, eta=3.0, temperature=0.5, top_m=3).transform(z, History.empty()).tolist()
    [[4.0, 2.0, 6.0]]
    >>> _, rec = VerifierTilt(V, eta=3.0, top_m=3).apply(z[0], History.empty())
    >>> rec.extra.potential                  # the record keeps what was scored (a ``TiltExtra``)
    ScoredCandidates(candidates=(0, 1, 2), V=(0.0, 0.0, 1.0))

In a chain the stage goes before temperature (``SamplingSettings.build_chain`` puts an
extra stage missing from the order first), so leave its own ``temperature`` at 1 and
let the chain's temperature divide: ``(z + eta·V) / T`` either way.

An example potential, ``RolloutPotential``: for each candidate, a short greedy rollout
from (prefix + candidate), scored by a task verifier. It costs one batched rollout of
``rollout_tokens`` steps per decoding step: a teaching device, not a fast sampler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from decoding_lab.stages.base import History, SettingsError, Stage, check_number
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import forward_more, forward_next, prefill

#: ``potential(ids, prompt_len, candidate_ids) -> V per candidate``; ``ids`` is the prompt
#: followed by the tokens generated so far (one row).
Potential = Callable[[list[int], int, list[int]], Sequence[float]]


@dataclass(frozen=True)
class ScoredCandidates:
    """The candidates a ``VerifierTilt`` scored at one step (the top m by z) and their V, in that order."""

    candidates: tuple[int, ...]
    V: tuple[float, ...]


@dataclass(frozen=True)
class TiltExtra:
    """What a ``VerifierTilt`` record adds (``StageRecord.extra``); no extra when V was not computed (eta 0)."""

    potential: ScoredCandidates


class VerifierTilt(Stage):
    name = "verifier-tilt"

    def __init__(self, potential: Potential, eta: float = 1.0, temperature: float = 1.0, top_m: int = 8,
                 outside: str | float = "min") -> None:
        if not callable(potential):
            raise SettingsError("the verifier potential must be a function (ids, prompt_len, candidates) -> values")
        self.potential = potential
        self.eta = check_number("eta", eta, lo=0.0, hi=1e6)
        self.temperature = check_number("temperature", temperature, lo=0.0, lo_open=True, hi=100.0)
        self.top_m = int(check_number("top-m", top_m, lo=1, hi=4096, integer=True))
        if outside not in ("min", "cut") and not isinstance(outside, (int, float)):
            raise SettingsError(f"outside must be 'min', 'cut' or a number, got {outside!r}")
        self.outside = outside
        self.last: ScoredCandidates | None = None     # the last row scored (for records)

    def params(self) -> dict[str, Any]:
        return {"eta": self.eta, "T": self.temperature, "top_m": self.top_m, "outside": self.outside}

    def is_active(self) -> bool:
        return self.eta != 0.0 or self.temperature != 1.0

    def tilt_row(self, z: torch.Tensor, ids: list[int], prompt_len: int) -> torch.Tensor:
        """``eta * V`` over the full vocabulary for one row of logits ``z``."""
        finite = int(torch.isfinite(z).sum())
        m = min(self.top_m, finite)
        cands = torch.topk(z, m).indices.tolist() if m else []
        values = [float(v) for v in self.potential(list(ids), prompt_len, cands)]
        if len(values) != len(cands):
            raise SettingsError(f"the potential returned {len(values)} values for {len(cands)} candidates")
        if self.outside == "cut":
            fill = -math.inf
        elif self.outside == "min":
            fin = [v for v in values if math.isfinite(v)]
            fill = min(fin) if fin else 0.0
        else:
            fill = float(self.outside)
        v = torch.full_like(z, fill)
        if cands:
            v[torch.tensor(cands)] = torch.tensor(values, dtype=z.dtype)
        self.last = ScoredCandidates(tuple(cands), tuple(values))
        return self.eta * v

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.eta == 0.0:
            return logits / self.temperature
        rows = []
        for r in range(logits.shape[0]):
            ids = history.ids[r].tolist() if history.ids.shape[0] > r else []
            tilt = self.tilt_row(logits[r], ids, history.prompt_len)
            row = logits[r] + tilt
            row = torch.where(torch.isneginf(logits[r]), logits[r], row)    # cut tokens stay cut
            rows.append(torch.where(torch.isnan(row), torch.full_like(row, -math.inf), row))   # -inf + inf
        return torch.stack(rows) / self.temperature

    def record_extra(self, before: torch.Tensor, after: torch.Tensor) -> TiltExtra | None:
        return TiltExtra(self.last) if self.last is not None else None


class RolloutPotential:
    """V(candidate) = verifier(text after a short greedy rollout from prefix + candidate).

    ``verifier(text) -> float`` sees the *generated* text only (no prompt), e.g.
    ``lambda t: float(task.verify(problem, t).correct)``. With ``log=True`` V is
    ``log(score + floor)``: for a pass/fail verifier that makes eta·V a log-likelihood tilt.
    Results are cached per (prefix, candidate).

    What a step costs, and how it is kept down:

    * the prefix is read once: a KV cache of the text so far is kept between calls and
      extended by the tokens added since (one new token a step), instead of a prefill of the
      whole prefix at every step;
    * the candidates' rollouts run as one batch (one forward a step for all rows, the
      prefix's cache copied to each row); a row leaves off at its end-of-sequence token;
    * a rollout already on record is reused: greedy is a function of the text, so when
      prefix + candidate lies on an earlier rollout's path (the decoder just followed that
      path, which is what a tilted decoder usually does), that path's next tokens *are* the
      rollout, as long as it reaches the horizon or its end. Only the other candidates run.

    Reused rollouts and the incremental prefix cache follow other floating-point paths than
    a fresh prefill would (see ``decoding_lab.determinism``): a choice whose top-2 margin is
    ~1e-5 logit could come out differently; ``reuse=False`` and ``keep_prefix=False`` give
    the plain computation."""

    def __init__(self, lm: LanguageModel, verifier: Callable[[str], float], rollout_tokens: int = 16, log: bool = False,
                 floor: float = 1e-3, reuse: bool = True, keep_prefix: bool = True) -> None:
        self.lm, self.verifier = lm, verifier
        self.rollout_tokens = int(check_number("rollout tokens", rollout_tokens, lo=1, hi=256, integer=True))
        self.log, self.floor = bool(log), float(floor)
        self.reuse, self.keep_prefix = bool(reuse), bool(keep_prefix)
        self.cache: dict[tuple, float] = {}
        self.rollouts: dict[tuple, str] = {}
        self.paths: list[tuple[int, ...]] = []          # every rollout run: prefix + candidate + its tokens
        self.computed = 0                               # rollouts run (the rest came from ``paths``)
        self.forwards = 0                               # calls of the model (a batch of rows is one call)
        self._prefix: list[int] = []                    # the text the prefix cache holds
        self._prefix_cache: Any = None

    @classmethod
    def for_problem(cls, lm: LanguageModel, task: Any, problem: Any, **kw: Any) -> "RolloutPotential":
        return cls(lm, lambda text: float(task.verify(problem, text).correct), **kw)

    def __call__(self, ids: list[int], prompt_len: int, candidates: list[int]) -> list[float]:
        todo = [c for c in candidates if (tuple(ids), c) not in self.cache]
        if todo:
            texts = self._rollout(ids, prompt_len, todo)
            for c, text in zip(todo, texts):
                score = float(self.verifier(text))
                self.rollouts[(tuple(ids), c)] = text
                self.cache[(tuple(ids), c)] = math.log(score + self.floor) if self.log else score
        return [self.cache[(tuple(ids), c)] for c in candidates]

    def _on_record(self, start: list[int], eos: set[int]) -> list[int] | None:
        """The rollout from ``start`` (prefix + candidate) read off an earlier rollout's path:
        the tokens after the prefix, up to the horizon or the first end-of-sequence token;
        None when no path on record covers it."""
        n, begin = len(start), len(start) - 1
        for path in self.paths:
            if len(path) < n or list(path[:n]) != start:
                continue
            row = list(path[begin:begin + self.rollout_tokens])
            ended = next((i for i, t in enumerate(row) if t in eos), None)
            if ended is not None:
                return row[:ended + 1]
            if len(row) == self.rollout_tokens:
                return row
        return None

    def _prefix_state(self, ids: list[int]) -> Any:
        """A KV cache holding ``ids`` (batch 1), grown from the last call's when it is a prefix."""
        if (not self.keep_prefix or self._prefix_cache is None or len(self._prefix) > len(ids)
                or ids[:len(self._prefix)] != self._prefix):   # another text (a rewind, a new run): start over
            self._prefix_cache = self.lm.new_cache()
            self._prefix = []
        if len(ids) > len(self._prefix):
            forward_more(self.lm, self._prefix_cache, ids[len(self._prefix):])
            self.forwards += 1
            self._prefix = list(ids)
        return self._prefix_cache

    @torch.inference_mode()
    def _rollout(self, ids: list[int], prompt_len: int, cands: list[int]) -> list[str]:
        import copy
        from decoding_lab.strategies.common import eos_set
        eos = eos_set(self.lm)
        rows: dict[int, list[int]] = {}
        fresh = []
        for c in cands:
            known = self._on_record(list(ids) + [c], eos) if self.reuse else None
            if known is not None:
                rows[c] = known
            else:
                fresh.append(c)
        if fresh:
            if self.keep_prefix:
                cache = copy.deepcopy(self._prefix_state(list(ids)))   # the prefix read once, copied per row
                if len(fresh) > 1:
                    cache.batch_repeat_interleave(len(fresh))
            else:
                cache, _ = prefill(self.lm, ids, len(fresh))
                self.forwards += 1
            new = [[c] for c in fresh]
            last = list(fresh)
            for _ in range(self.rollout_tokens - 1):
                if all(r[-1] in eos for r in new):
                    break
                nxt = forward_next(self.lm, cache, last).argmax(dim=-1)
                self.forwards += 1
                for r, t in zip(new, nxt.tolist()):
                    if r[-1] not in eos:
                        r.append(t)
                last = nxt.tolist()
            for c, r in zip(fresh, new):
                rows[c] = r
                self.paths.append(tuple(ids) + tuple(r))
            self.computed += len(fresh)
        generated = ids[prompt_len:]
        return [self.lm.decode(generated + [t for t in rows[c] if t not in eos]) for c in cands]
