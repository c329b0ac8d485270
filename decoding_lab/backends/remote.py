"""A model on a server (vLLM, SGLang, llama-server), as a backend (``backends.base.Backend``).

**Why token ids, not text.** The stepper owns the token list. Sending text would let the
server tokenise it again, and ``decode`` then ``encode`` is not always the identity (a
merge across the boundary, a special token written as text): the server would continue a
*different* context than the one on screen. So the context goes as ids, whole, on every
step (the server's prefix cache makes that cheap). llama-cpp-python's server takes text
only; there (``prompt_ids: false``) the report says the prompt was re-tokenised.

**What a server tells us.** Only the top-N log-probabilities (N ≤ ~20 on vLLM by default),
not the V logits. We build full-vocabulary logits from them:

* the N reported tokens get their exact log-probabilities;
* the remaining mass 1 − S (S = Σ p over the top-N) is spread evenly over the other V − N
  tokens: each gets log((1 − S)/(V − N)). This is the maximum-entropy guess. Every
  unreported token's true p is ≤ the N-th reported p, so their *average* is too: the fill
  never outranks a reported token (checked, and clipped if rounding says otherwise).

So for this step: greedy, top-k (k ≤ N), min-p, and top-p whenever the nucleus closes
inside the top-N are **exact**; the entropy is an **upper bound** (spreading the tail evenly
is the most uncertain way to place it); temperature reshapes the tail as a block, so T < 1
is still exact on the top-N ranks, and T > 1 lifts the invented tail. ``cache.last_report``
keeps what the server said, so a view can print "top-20 of 49,152".

**The engine's own pick.** Every request also asks the server to pick a token with the session's
settings (``tell_engine``); ``step_report`` sets that pick, and what its chain kept, beside ours.
So this backend says ``Caps(batch=False, exact_logits=False, engine_picks=True)``, and
``whole_samples`` where the server's API can draw whole samples (``strategies.engine_samples``).

    >>> logits, tail, fill = fill_logits((2, 0), (math.log(0.5), math.log(0.3)), 4)
    >>> [round(math.exp(x), 3) for x in logits.tolist()], round(tail, 3)
    ([0.3, 0.1, 0.5, 0.1], 0.2)
"""

from __future__ import annotations

import dataclasses
import logging
import math
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

import torch

from decoding_lab.backends.base import Caps, OneSequenceCache
from decoding_lab.backends.loaded import LoadedModel
from decoding_lab.backends.registry import get_model, register
from decoding_lab.errors import ModelError
from decoding_lab.params import PARAMS
from decoding_lab.remote.agreement import engine_agreement
from decoding_lab.remote.client import Client
from decoding_lab.remote.config import PREFIX, Endpoint, endpoint as find_endpoint, endpoints
from decoding_lab.remote.payloads import build_request, check_vocabulary, continuation_request, sampling_from_settings
from decoding_lab.remote.shapes import TopN, parse, resolve_texts, text_index

__all__ = ["RemoteBackend", "RemoteCache", "RemoteReport", "fill_logits", "load", "PREFIX", "WHOLE_SAMPLE_APIS"]

#: The APIs whose servers can be asked for whole samples (SGLang's native /generate cannot: use its OpenAI route).
WHOLE_SAMPLE_APIS = ("llama-server", "openai")

_ONE_SEQUENCE = ("a remote model runs one sequence at a time (no batched beams or samples): "
                 "use a local model for this run")


@dataclass(frozen=True)
class RemoteReport:
    """What the server said about one step, for views that must label "top-N of V" honestly."""

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    tail_mass: float                  # 1 − Σ p(top-N): spread evenly over the other tokens
    fill_logprob: float               # the log-probability each unreported token was given
    chosen_id: int | None             # the engine's own pick under cache.engine_sampling
    n_vocab: int
    post_ids: tuple[int, ...] | None = None
    post_probs: tuple[float, ...] | None = None
    skipped: tuple[str, ...] = ()     # reported texts that named no single token
    exact: tuple[str, ...] = ()       # what is exact and what is a bound, in words
    inexact: tuple[str, ...] = ()     # stages the settings turn on that a top-N report cannot redo exactly
    seconds: float = 0.0
    raw_logits: bool = False          # the server reported every token's raw logit (nothing was filled in)


def fill_logits(ids: tuple[int, ...], logprobs: tuple[float, ...], vocab: int) -> tuple[torch.Tensor, float, float]:
    """Full-vocabulary log-probabilities from a top-N report (see the module docstring).
    Returns (logits [V] float32, tail mass, fill log-probability)."""
    if len(ids) != len(logprobs) or not ids:
        raise ModelError("the server reported no top tokens")
    if len(set(ids)) != len(ids) or not all(0 <= i < vocab for i in ids):
        raise ModelError(f"the server reported token ids outside the vocabulary of {vocab} (or twice): "
                         "is 'tokenizer' the served model's tokenizer?")
    lp = torch.tensor(logprobs, dtype=torch.float64).clamp(max=0.0)  # a logprob above 0 is rounding
    if bool(torch.isnan(lp).any()) or not bool(torch.isfinite(lp).any()):
        raise ModelError("the server reported log-probabilities that are NaN or all -inf: "
                         "no distribution can be read from them")
    covered = float(lp.exp().sum())
    tail = max(0.0, 1.0 - covered)
    rest = vocab - len(ids)
    lowest = float(lp.min())
    if rest == 0:
        fill = -math.inf
    elif tail <= 1e-12:  # the top-N hold all the mass (to rounding): the rest is far below
        fill = lowest - 30.0
    else:
        fill = min(math.log(tail / rest), lowest - 1e-4)  # never outranks a reported token
    out = torch.full((vocab,), fill, dtype=torch.float64)
    out[torch.tensor(ids)] = lp
    return out.float(), tail, fill


class RemoteBackend:
    """The backend for one endpoint: one request per forward, no state on the server."""

    device = torch.device("cpu")

    def __init__(self, ep: Endpoint, tokenizer_model: LoadedModel, client: Client | None = None) -> None:
        self.endpoint = ep
        self.client = client or Client(ep)
        self.twin = tokenizer_model              # supplies the vocabulary, texts and decode
        self.n_vocab = int(tokenizer_model.vocab_size)
        self._index: dict[str, list[int]] | None = None
        self.vocabulary_check = "unchecked"  # set by load: did the server tokenise a test sentence as we do?
        self.caps = Caps(batch=False, exact_logits=ep.raw_logits, engine_picks=True,
                         whole_samples=ep.api in WHOLE_SAMPLE_APIS, shared=True)

    def new_cache(self) -> "RemoteCache":
        return RemoteCache(self)

    def index(self) -> dict[str, list[int]]:
        if self._index is None:  # only text-keyed servers need it
            self._index = text_index(self.twin.token_texts())
        return self._index

    def tell_engine(self, cache: "RemoteCache", settings: Any) -> None:
        """The next request asks the server to pick with these settings (greedy until told)."""
        cache.engine_sampling = sampling_from_settings(settings)

    def step_report(self, cache: "RemoteCache", p_final: torch.Tensor, greedy: bool) -> dict[str, Any] | None:
        """The server's report on the logits ``cache`` last produced, with what its own chain kept
        set beside ``p_final`` (ours) where it said (llama-server's post-sampling top-N)."""
        report = cache.last_report
        if report is None:
            return None
        out = dataclasses.asdict(report)
        if out.get("post_ids") is not None:
            out["agreement"] = engine_agreement(p_final, out["post_ids"], out["post_probs"], len(out["ids"]) or 1,
                                                greedy)
        return out

    def forward(self, input_ids: torch.Tensor, cache: "RemoteCache",
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Append ``input_ids`` (``[1, n]``) to the cache and ask the server about the next token."""
        if input_ids.dim() != 2 or input_ids.shape[0] != 1:
            raise ModelError(_ONE_SEQUENCE)
        new = [int(t) for t in input_ids[0].tolist()]
        if not new or not all(0 <= t < self.n_vocab for t in new):
            raise ModelError(f"token ids must lie in [0, {self.n_vocab})")
        before = len(cache.tokens)
        cache.tokens.extend(new)
        try:
            logits = self._ask(cache)
        except BaseException:
            del cache.tokens[before:]  # a failed step leaves the cache as it was
            raise
        return logits.view(1, -1)

    def continue_greedily(self, ids: list[int], tokens: int) -> None:
        """Ask the server for ``tokens`` greedy tokens after ``ids`` and drop the answer: another
        client's request, to share the server's batch with ours (``determinism``'s served paths)."""
        text = None if self.endpoint.prompt_ids else self.twin.decode(ids)
        path, payload = continuation_request(self.endpoint, ids, tokens, text, self.n_vocab)
        self.client.post(path, payload)

    def _ask(self, cache: "RemoteCache") -> torch.Tensor:
        ep, t0 = self.endpoint, time.perf_counter()
        mismatch = ""
        text = None if ep.prompt_ids else self.twin.decode(cache.tokens)
        sampling = dict(cache.engine_sampling)
        post_wanted = ep.api == "llama-server" and ep.post_sampling
        if post_wanted and sampling.get("seed") is None:
            # both requests must draw with one seed, or the engine's two picks could differ
            sampling["seed"] = secrets.randbelow(2**31)
        path, payload = build_request(ep, cache.tokens, sampling, text, self.n_vocab)
        top: TopN = parse(ep.api, self.client.post(path, payload))
        if post_wanted:  # the same request again, reporting the top-N after the sampler chain
            path, payload = build_request(ep, cache.tokens, sampling, text, self.n_vocab, post_sampling=True)
            post = parse(ep.api, self.client.post(path, payload))
            if post.post_ids is None:
                raise ModelError(f"endpoint {ep.name!r} ignored post_sampling_probs (no top_probs in its answer)")
            if post.chosen_id == top.chosen_id:
                top = replace(top, post_ids=post.post_ids, post_probs=post.post_probs)
            else:  # not reproducible with one seed: the kept set cannot be set beside this step's pick
                mismatch = (f"the engine picked {top.chosen_id} and then {post.chosen_id} with one seed, so its "
                            "post-sampling report is left out of this step")
        top = resolve_texts(top, self.index()) if top.texts is not None else top
        if ep.raw_logits:
            return self._raw(cache, top, text, time.perf_counter() - t0)
        if not top.ids:
            raise ModelError(f"endpoint {ep.name!r} reported no usable top tokens "
                             f"({len(top.skipped)} texts matched no single token of {ep.tokenizer})")
        logits, tail, fill = fill_logits(top.ids, top.logprobs, self.n_vocab)
        notes = [f"top-{len(top.ids)} of {self.n_vocab} reported: their log-probabilities are exact",
                 f"the other {self.n_vocab - len(top.ids)} tokens share the unreported mass {tail:.4g} evenly "
                 "(entropy is an upper bound; top-k for k ≤ N, min-p and a top-p nucleus inside the top-N are exact)"]
        if top.skipped:
            notes.append(f"{len(top.skipped)} reported texts named no single token and were left in the tail")
        if text is not None:
            notes.append("the context was sent as text and re-tokenised by the server (it takes no token ids)")
        es = cache.engine_sampling
        # the knobs a top-N report cannot redo exactly, as the parameter table says (its top_n_inexact column)
        inexact = list(dict.fromkeys((p.stage, p.top_n_inexact) for p in PARAMS.values()
                                     if p.key in es and p.inexact_from_top_n(es[p.key])))
        if inexact:
            notes.append("not exact from a top-N report, since the server gives log-probabilities, not raw logits: "
                         + "; ".join(f"{stage} ({why})" for stage, why in inexact))
        if mismatch:
            notes.append(mismatch)
        if top.post_ids is not None:
            notes.append(f"the engine's own sampler chain (llama.cpp's default order) kept the tokens in post_ids, "
                         f"with post_probs after its temperature (at most {ep.top_n} are listed)")
        cache.last_report = RemoteReport(
            ids=top.ids, logprobs=top.logprobs, tail_mass=tail, fill_logprob=fill, chosen_id=top.chosen_id,
            n_vocab=self.n_vocab, post_ids=top.post_ids, post_probs=top.post_probs, skipped=top.skipped,
            exact=tuple(notes), inexact=tuple(stage for stage, _ in inexact), seconds=time.perf_counter() - t0)
        return logits


    def _raw(self, cache: "RemoteCache", top: TopN, text: str | None, seconds: float) -> torch.Tensor:
        """A raw-logits server's answer (``Endpoint.raw_logits``): the model's logits for every token,
        used as they are. The report keeps the top-N of their log-softmax for the views."""
        ep = self.endpoint
        if len(top.ids) != self.n_vocab or len(set(top.ids)) != self.n_vocab:
            raise ModelError(f"endpoint {ep.name!r} is configured with raw_logits but reported {len(top.ids)} of "
                             f"{self.n_vocab} tokens: start vLLM with --logprobs-mode raw_logits --max-logprobs -1")
        logits = torch.empty(self.n_vocab, dtype=torch.float32)
        logits[torch.tensor(top.ids)] = torch.tensor(top.logprobs, dtype=torch.float32)
        if not bool(torch.isfinite(logits).all()):
            raise ModelError(f"endpoint {ep.name!r} reported logits that are not finite")
        lp = torch.log_softmax(logits.double(), dim=-1)
        best = torch.topk(lp, min(ep.top_n, self.n_vocab))
        notes = [f"the raw logits of all {self.n_vocab} tokens were reported (vLLM --logprobs-mode raw_logits): "
                 "every stage and the entropy are exact"]
        if text is not None:
            notes.append("the context was sent as text and re-tokenised by the server (it takes no token ids)")
        cache.last_report = RemoteReport(
            ids=tuple(best.indices.tolist()), logprobs=tuple(best.values.tolist()), tail_mass=0.0,
            fill_logprob=-math.inf, chosen_id=top.chosen_id, n_vocab=self.n_vocab, exact=tuple(notes),
            seconds=seconds, raw_logits=True)
        return logits


class RemoteCache(OneSequenceCache):
    """The token ids so far: the server keeps no state for us, so crop and copy are list operations."""

    ONE_SEQUENCE_MESSAGE = _ONE_SEQUENCE

    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend
        self.tokens: list[int] = []
        self.engine_sampling: dict[str, Any] = {"temperature": 0.0}  # the engine's own pick: greedy by default
        self.last_report: RemoteReport | None = None

    def get_seq_length(self) -> int:
        return len(self.tokens)

    def crop(self, length: int) -> None:
        if not 0 <= length <= len(self.tokens):
            raise ValueError(f"cannot crop a cache of {len(self.tokens)} positions to {length}")
        del self.tokens[length:]

    def __deepcopy__(self, memo: dict) -> "RemoteCache":
        twin = RemoteCache(self.backend)  # the backend (and its HTTP pool) stays shared
        twin.tokens = list(self.tokens)
        twin.engine_sampling = dict(self.engine_sampling)
        twin.last_report = self.last_report  # frozen: safe to share
        return twin


def _claims(name: str) -> str | None:
    """``remote:<name>`` of a configured endpoint (never a typed URL)."""
    return find_endpoint(name).model_name if name.lower().startswith(PREFIX) else None


def load(key: str, device: str | None = None, **_: Any) -> LoadedModel:
    """A model whose forward passes run on a configured server. The tokenizer, vocabulary,
    end-of-sequence ids and chat template come from the endpoint's ``tokenizer`` model; the server's
    tokenizer is checked against it on a test sentence where the server can tokenise."""
    start = time.perf_counter()
    ep = find_endpoint(key)
    twin = get_model(ep.tokenizer)
    backend = RemoteBackend(ep, twin)
    backend.vocabulary_check = check_vocabulary(backend.client, ep, twin.tokenizer)  # "checked" | "unchecked"
    return LoadedModel(name=ep.model_name, backend=backend, tokenizer=twin.tokenizer, vocab_size=backend.n_vocab,
                       has_chat_template=twin.has_chat_template, source="remote",
                       load_seconds=time.perf_counter() - start, eos_token_ids=twin.eos_token_ids)


def _offers() -> list[str]:
    """The servers this deployment configured (``DECODING_LAB_ENDPOINTS``), as ``remote:<name>``.
    A broken configuration is the operator's to fix: it is logged, and the menus still fill."""
    try:
        return [e.model_name for e in endpoints()]
    except ModelError as e:
        logging.getLogger("decoding_lab").error("%s", e)
        return []


register("remote", _claims, load, offers=_offers)
