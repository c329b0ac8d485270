"""The stepper: one user's step-by-step decoding session.

The prompt is prefilled once; each ``step()`` runs the stage chain on the waiting
logits, picks (or is told) a token, records a ``StepTrace`` and runs one cached forward
for the next position. ``rewind(k)`` goes back to step k (the cache is cropped, the
random generator's state restored, stateful stages rolled back), and the abandoned
continuation is kept as a branch that ``checkout(i)`` can bring back. With the same
seed and settings the same tokens come out.

The model is shared and read-only; everything else here belongs to one session, so a
``Stepper`` lives in the user's session state and never in a global.
"""

from __future__ import annotations

import copy
import functools
import threading
import time
from dataclasses import dataclass
from typing import Any

import torch

from decoding_lab import limits, stats
from decoding_lab.chain import check_token_id, run_chain, select_greedy, select_sample
from decoding_lab.backends.base import cache_bytes, crop_cache
from decoding_lab.memory_budget import memory_budget
from decoding_lab.decode import forward_fresh, forward_more
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError, Stage
from decoding_lab.trace import StepTrace, TokenRow
from decoding_lab.errors import SessionError  # noqa: F401  (re-exported: callers import it from here)
from decoding_lab.backends.base import LanguageModel


def check_prompt_ids(lm: LanguageModel, prompt_ids: Any) -> list[int]:
    """A non-empty list of token ids inside the model's vocabulary, no longer than the
    deployment allows (``DECODING_LAB_MAX_PROMPT_TOKENS``)."""
    try:
        ids = list(prompt_ids)
    except TypeError:
        raise SettingsError(f"the prompt must be a list of token ids, got {type(prompt_ids).__name__}") from None
    if not ids:
        raise SettingsError("the prompt is empty: type something to continue from")
    vocab = int(lm.vocab_size)
    bad = [t for t in ids if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab]
    if bad:
        raise SettingsError(f"prompt token ids must be integers in [0, {vocab}), got {bad[:5]!r}")
    limits.check_prompt_tokens(len(ids))
    return ids


#: More candidate rows than anyone can read; each row costs a rank and a token string per step.
MAX_TOP_N = 1000


def max_new_tokens_limit() -> int:
    """The deployment's cap on new tokens (``DECODING_LAB_MAX_NEW_TOKENS``, see ``limits``)."""
    return limits.current().max_new_tokens


@dataclass
class Branch:
    """A continuation that was abandoned by a rewind, kept so it can be restored."""

    from_step: int
    tokens: list[int]
    traces: list[StepTrace]
    snapshots: list["_Snapshot"]
    text: str = ""
    rng_after: torch.Tensor | None = None


@dataclass
class _Snapshot:
    rng_state: torch.Tensor


def _holding_the_cache(method: Any) -> Any:
    """``method`` runs with the session's lock held (so the memory budget never drops the cache
    under it) and reports the cache's size to the budget when it is done."""
    @functools.wraps(method)
    def call(self: "Stepper", *args: Any, **kw: Any) -> Any:
        with self._lock:
            result = method(self, *args, **kw)
        memory_budget().used(self)
        return result
    return call


class Stepper:
    def __init__(self, lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None, top_n: int = 20,
                 extra_stages: dict[str, Stage] | None = None, max_new_tokens: int | None = None) -> None:
        self.lm = lm
        self.prompt_ids: list[int] = check_prompt_ids(lm, prompt_ids)
        if settings is not None and not isinstance(settings, SamplingSettings):
            raise SettingsError(f"settings must be a SamplingSettings, got {type(settings).__name__}")
        self.settings = settings or SamplingSettings()
        self.top_n = limits.check_count("top_n", top_n, MAX_TOP_N)
        self.extra_stages: dict[str, Stage] = dict(extra_stages or {})
        # None: as many as the deployment allows; a number above that is refused, not cut.
        self.max_new_tokens = (max_new_tokens_limit() if max_new_tokens is None
                               else limits.check_new_tokens(max_new_tokens))
        self.tokens: list[int] = []
        self.traces: list[StepTrace] = []
        self.branches: list[Branch] = []
        self._snapshots: list[_Snapshot] = []
        self.generator = torch.Generator().manual_seed(self.settings.seed if self.settings.seed is not None else 0)
        if self.settings.seed is None:
            self.generator.seed()
        self.build_chain()  # validate order / stages early
        self._lock = threading.RLock()  # held while the cache is in use (``park_for_memory`` waits for none)
        self.parked_for_memory = False  # the memory budget dropped the cache; the next forward rebuilds it
        self.last_rebuild: tuple[int, float] | None = None  # (tokens, seconds) if the last call rebuilt it
        t0 = time.perf_counter()
        self._cache = lm.new_cache()
        self._tell_engine()
        self._next_logits = forward_more(lm, self._cache, self.prompt_ids)[0]
        self.prefill_seconds = time.perf_counter() - t0
        self._last_forward = self.prefill_seconds
        self._last_z: torch.Tensor | None = None  # logits entering temperature at the last step
        memory_budget().used(self)

    @classmethod
    def from_prompt(cls, lm: LanguageModel, prompt: str, chat: bool = True, settings: SamplingSettings | None = None,
                    **kw: Any) -> "Stepper":
        return cls(lm, lm.encode_prompt(prompt, chat), settings, **kw)

    # ------------------------------------------------------------------ sharing
    def __deepcopy__(self, memo: dict) -> "Stepper":
        """Session state may be deep-copied (gradio does); the model must stay shared."""
        new = copy.copy(self)
        for k, v in self.__dict__.items():
            if k not in ("lm", "_lock"):
                setattr(new, k, copy.deepcopy(v, memo))
        new._lock = threading.RLock()
        return new

    # ------------------------------------------------------------------ queries
    @property
    def finished(self) -> bool:
        return bool(self.traces) and self.traces[-1].finished

    def text(self) -> str:
        return self.lm.decode(self.tokens)

    def prompt_text(self) -> str:
        return self.lm.decode(self.prompt_ids)

    def build_chain(self) -> list[Stage]:
        return self.settings.build_chain(self.extra_stages, lm=self.lm)

    def set_settings(self, settings: SamplingSettings) -> None:
        """New settings apply from the next step on; earlier traces keep what they recorded."""
        if not isinstance(settings, SamplingSettings):
            raise SettingsError(f"settings must be a SamplingSettings, got {type(settings).__name__}")
        settings.build_chain(self.extra_stages)
        self.settings = settings

    def entropy_curve(self, temperatures: list[float] | None = None) -> list[tuple[float, float]]:
        """H(T) of the logits that entered temperature at the latest step (raw logits if none)."""
        if self._last_z is None:
            return []
        return stats.entropy_curve(self._last_z, temperatures or stats.default_temperature_grid())

    def park(self) -> None:
        """Drop the KV cache and keep every tensor on the CPU, between two calls that may run on
        different devices (on ZeroGPU, each model job gets a GPU for its own duration only; a cache
        left on a released GPU is gone). What the session shows stays: the logits waiting for the
        next step, the traces, the random state. The next forward rebuilds the cache with one
        prefill of the prompt and the tokens so far (on a GPU, milliseconds for these models);
        rewinding and checking out a branch rebuild it the same way."""
        self._cache = None
        self._next_logits = self._next_logits.cpu()
        if self._last_z is not None:
            self._last_z = self._last_z.cpu()
        memory_budget().released(self)

    def park_for_memory(self) -> bool:
        """Park for the memory budget (``memory_budget``), unless the session is working right now
        (then False: its cache stays). The next step says it rebuilt the cache (``last_rebuild``)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._cache is None:
                return False
            self.park()
            self.parked_for_memory = True
            return True
        finally:
            self._lock.release()

    def cache_bytes(self) -> int:
        """Bytes the KV cache holds now (0 when parked)."""
        return cache_bytes(self._cache)

    @property
    def parked(self) -> bool:
        return self._cache is None

    def _rebuilt(self, tokens: int, seconds: float) -> None:
        """A forward just rebuilt a parked cache: say so if the memory budget had parked it."""
        if self.parked_for_memory:
            self.last_rebuild = (tokens, seconds)
            self.parked_for_memory = False

    def _tell_engine(self) -> None:
        """An engine that picks a token itself on every forward (``caps.engine_picks``: a server)
        is asked to pick with this session's settings, so the report can set its choice beside ours."""
        if self.lm.caps.engine_picks:
            self.lm.backend.tell_engine(self._cache, self.settings)

    # ------------------------------------------------------------------ stepping
    @_holding_the_cache
    def step(self, force_token_id: int | None = None) -> StepTrace:
        self.last_rebuild = None
        if self.finished:
            raise SessionError("generation reached an end-of-sequence token; undo or reset to go on")
        if len(self.tokens) >= self.max_new_tokens:
            raise SessionError(f"reached the limit of {self.max_new_tokens} new tokens")
        vocab = int(self._next_logits.shape[-1])
        stages = self.build_chain()
        if force_token_id is not None:
            check_token_id(force_token_id, vocab)
            for stage in stages:  # a constraint may refuse a forced token: say so before anything moves
                allows = getattr(stage, "allows", None)
                if allows is not None and not allows(force_token_id):
                    refusal = getattr(stage, "refusal", None)
                    raise SettingsError(refusal(force_token_id) if refusal else
                                        f"the {stage.name} stage does not allow token {force_token_id}")
        t_start = time.perf_counter()
        raw = self._next_logits
        history = History.from_lists(self.prompt_ids, self.tokens)
        final, records, z_temp, p_raw, p_final = run_chain(stages, raw, history, with_probs=True)
        t_chain = time.perf_counter()

        rng_before = self.generator.get_state()
        if force_token_id is not None:
            chosen = int(force_token_id)
        elif self.settings.greedy:
            chosen = int(select_greedy(final))
        else:
            chosen = int(select_sample(final, self.generator))
        t_select = time.perf_counter()

        trace = self._make_trace(raw, final, records, z_temp, chosen, force_token_id is not None, p_raw, p_final)
        # what the engine said about these logits (a server's top-N, its own pick and what it kept), if anything
        trace.reported = self.lm.backend.step_report(self._cache, p_final, self.settings.greedy)
        t_stats = time.perf_counter()
        for stage in stages:
            stage.accept(chosen)
        self._snapshots.append(_Snapshot(rng_before))
        self.tokens.append(chosen)
        self.traces.append(trace)
        forward_before = self._last_forward
        if not trace.finished:
            t0 = time.perf_counter()
            rebuilding = self._cache is None
            if rebuilding:  # parked (``park``): one prefill of everything so far rebuilds it
                self._cache = self.lm.new_cache()
                self._tell_engine()
                ids = self.prompt_ids + self.tokens
            else:
                self._tell_engine()
                ids = [chosen]
            self._next_logits = forward_more(self.lm, self._cache, ids)[0]
            self._last_forward = time.perf_counter() - t0
            if rebuilding:
                self._rebuilt(len(ids), self._last_forward)
        trace.timings = {"forward": forward_before, "chain": t_chain - t_start, "select": t_select - t_chain,
                         "stats": t_stats - t_select, "next_forward": self._last_forward if not trace.finished else 0.0}
        for rec in trace.stages:
            rec.drop_tensors()  # the per-token masks were only needed to label the top rows
        return trace

    def steps(self, n: int) -> list[StepTrace]:
        """Up to ``n`` steps; fewer if the text ends or the session reaches its token limit."""
        n = limits.check_count("number of steps", n, hi=10**9, lo=0)
        out: list[StepTrace] = []
        for _ in range(n):
            if self.finished or len(self.tokens) >= self.max_new_tokens:
                break
            out.append(self.step())
        return out

    def _make_trace(self, raw: torch.Tensor, final: torch.Tensor, records: list, z_temp: torch.Tensor | None,
                    chosen: int, forced: bool, p_raw: torch.Tensor, p_final: torch.Tensor) -> StepTrace:
        T = self.settings.temperature
        z = z_temp if z_temp is not None else raw
        self._last_z = z
        n = min(self.top_n, raw.numel())
        top_vals, top_idx = torch.topk(raw, n)
        top_ids = top_idx.tolist()
        extra = [i for i in torch.topk(final, n).indices.tolist() if i not in top_ids and final[i] > float("-inf")]
        ids = top_ids + extra[: max(0, n // 2)]
        if chosen not in ids:
            ids.append(chosen)
        ranks = self._ranks(raw, ids, top_ids, top_vals.tolist())
        rows = []
        for tid in ids:
            cut = next((i for i, r in enumerate(records) if r.removed is not None and bool(r.removed[tid])), None)
            # the distribution entering the cutting stage: the previous stage's output (or the raw one)
            p_in = None if cut is None else (p_raw if cut == 0 else records[cut - 1].probs_after)
            rows.append(TokenRow(tid, self.lm.token_str(tid), float(raw[tid]), float(p_raw[tid]),
                                 float(p_final[tid]), ranks[tid], None if cut is None else records[cut].name,
                                 None if p_in is None else float(p_in[tid])))
        greedy = self.settings.greedy
        eos = set(getattr(self.lm, "eos_token_ids", ()) or ())
        entropy_raw = stats.entropy_of_probs(p_raw)
        h_T, slope = (None, None) if greedy else stats.entropy_and_dH_dT(z, T)
        if not greedy and T == 1.0 and z is raw:
            h_T = entropy_raw                      # p_T is p_raw: the entropy is already known
        return StepTrace(
            step=len(self.tokens), chosen_token_id=chosen, chosen_token=self.lm.token_str(chosen),
            chosen_rank=ranks[chosen], chosen_p_raw=float(p_raw[chosen]), chosen_p_final=float(p_final[chosen]),
            forced=forced, greedy=greedy, temperature=T,
            entropy=entropy_raw, entropy_T=h_T, entropy_final=stats.entropy_of_probs(p_final), dH_dT=slope,
            margin=float(top_vals[0] - top_vals[1]) if n > 1 and bool(torch.isfinite(top_vals[1])) else float("inf"),
            tail=stats.tail_mass(raw, self.top_n, p=p_raw),
            tail_final=stats.tail_mass(final, self.top_n, p=p_final), kept_final=int((final > float("-inf")).sum()),
            stages=records, top=rows, finished=chosen in eos)

    @staticmethod
    def _ranks(raw: torch.Tensor, ids: list[int], top_ids: list[int], top_vals: list[float]) -> dict[int, int]:
        """1-based rank of each id under the raw logits (ties share the better rank). Ids in
        the top-N get theirs from the sorted top values; only the others scan the vocabulary."""
        ranks: dict[int, int] = {}
        for i in ids:
            if i in top_ids:
                v = top_vals[top_ids.index(i)]
                ranks[i] = next(k for k, tv in enumerate(top_vals) if tv == v) + 1
            else:
                ranks[i] = int((raw > raw[i]).sum()) + 1
        return ranks

    # ------------------------------------------------------------------ rewinding and branches
    @_holding_the_cache
    def rewind(self, to_step: int) -> None:
        """Go back so that only the first ``to_step`` generated tokens remain. The dropped
        continuation is saved as a branch."""
        if isinstance(to_step, bool) or not isinstance(to_step, int) or not 0 <= to_step <= len(self.tokens):
            raise SessionError(f"cannot rewind to step {to_step!r}: the session has {len(self.tokens)} steps")
        if to_step == len(self.tokens):
            return
        dropped = len(self.tokens) - to_step
        branch = Branch(to_step, self.tokens[to_step:], self.traces[to_step:], self._snapshots[to_step:])
        branch.text = self.lm.decode(branch.tokens)
        branch.rng_after = self.generator.get_state()
        self.branches.append(branch)
        rng = self._snapshots[to_step].rng_state
        for stage in self.extra_stages.values():
            stage.rollback(dropped)
        self.tokens = self.tokens[:to_step]
        self.traces = self.traces[:to_step]
        self._snapshots = self._snapshots[:to_step]
        self.generator.set_state(rng)
        self._restore_logits()

    def undo(self) -> None:
        if not self.tokens:
            raise SessionError("nothing to undo")
        self.rewind(len(self.tokens) - 1)

    def _restore_logits(self) -> None:
        """Recompute the logits waiting at the current position.

        Crop the cache to one position short and redo the last forward, so the logits come
        from the very same computation as the first time."""
        seq = self.prompt_ids + self.tokens
        self.last_rebuild = None
        if crop_cache(self._cache, len(seq) - 1):
            self._next_logits = forward_more(self.lm, self._cache, [seq[-1]])[0]
        else:  # caches that cannot be cropped, and a parked one: prefill again
            t0 = time.perf_counter()
            self._cache, logits = forward_fresh(self.lm, seq)
            self._next_logits = logits[0]
            self._rebuilt(len(seq), time.perf_counter() - t0)

    @_holding_the_cache
    def checkout(self, branch_index: int) -> None:
        """Swap the current continuation for a saved branch (the current one is saved in turn)."""
        if isinstance(branch_index, bool) or not isinstance(branch_index, int) \
                or not 0 <= branch_index < len(self.branches):
            raise SessionError(f"no branch {branch_index!r}; there are {len(self.branches)}")
        branch = self.branches.pop(branch_index)
        self.rewind(branch.from_step)
        for stage in self.extra_stages.values():
            for tok in branch.tokens:
                stage.accept(tok)
        self.tokens += branch.tokens
        self.traces += branch.traces
        self._snapshots += branch.snapshots
        # The generator continues from where the branch's last step left it.
        self.generator.set_state(branch.rng_after)
        if crop_cache(self._cache, len(self.prompt_ids) + branch.from_step):
            self._next_logits = forward_more(self.lm, self._cache, branch.tokens)[0]
        else:
            t0 = time.perf_counter()
            self._cache, logits = forward_fresh(self.lm, self.prompt_ids + self.tokens)
            self._next_logits = logits[0]
            self._rebuilt(len(self.prompt_ids) + len(self.tokens), time.perf_counter() - t0)

    def export(self) -> dict[str, Any]:
        """Everything a user may want to keep: prompt, settings, tokens, traces, branches."""
        return {
            "model": getattr(self.lm, "name", "?"),
            "prompt_ids": self.prompt_ids,
            "prompt": self.prompt_text(),
            "settings": self.settings.to_json(),
            "tokens": self.tokens,
            "text": self.text(),
            "steps": [t.to_json() for t in self.traces],
            "branches": [{"from_step": b.from_step, "tokens": b.tokens, "text": b.text} for b in self.branches],
        }
