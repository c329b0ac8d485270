"""Whole samples drawn by a server's own sampler, n of them in one request.

Stepping a server token by token (``backends.remote``) lets *our* chain pick from its top-N: right
for watching one step, but one request per token, and approximate wherever the top-N is
not enough. For many complete samples (a temperature sweep on a served model) the question
is what *the engine* writes, so the engine writes them: one request asks for ``n``
completions of up to ``max_new_tokens`` tokens with the session's settings, the way a
deployment would ask.

* **llama-server** (``/completion``): ``n_cmpl`` completions (at most its ``--parallel``
  slots per request; more go in further requests with the next seeds), the context as token
  ids, llama.cpp's default chain named explicitly, ``return_tokens`` for the ids and
  ``post_sampling_probs`` with ``n_probs`` 1 for each picked token's probability *after* the
  chain: the distribution it was drawn from, as our own samples record it.
* **OpenAI completions** (vLLM, SGLang): ``n`` choices with ``logprobs`` 1; vLLM's
  ``return_tokens_as_token_ids`` gives the ids, otherwise the text is tokenised again (said
  in the result's settings). These log-probabilities are whatever the server reports (vLLM:
  the raw model's by default), which the settings also say.

A sample ends on an end-of-sequence token (then its last id, as in our own samples) or at
``max_new_tokens``. Each problem's requests use seeds of their own (``SEED_BLOCK``). Each request has a time limit that grows with its length,
and the number of requests is bounded by ``n``.

    >>> _sequence_from_llama({"tokens": [5, 2], "stop_type": "eos",
    ...                       "completion_probabilities": [{"id": 5, "prob": 0.5}, {"id": 2, "prob": 1.0}]},
    ...                      decode=lambda ids: "x" * len(ids), eos={2}).text
    'x'
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Callable, Iterator

from decoding_lab import limits
from decoding_lab.errors import ModelError
from decoding_lab.remote.payloads import build_request, sampling_from_settings
from decoding_lab.remote.shapes import _TOKEN_ID_KEY
from decoding_lab.strategies.common import eos_set, settings_json
from decoding_lab.strategies.result import GeneratedSequence, GenerationResult
from decoding_lab.backends.base import LanguageModel

__all__ = ["engine_samples", "iter_engine_sample", "SECONDS_PER_TOKEN", "SEED_BLOCK"]

#: Time allowed per requested token, on top of the endpoint's ``timeout_s`` (a 7B model on a
#: busy server writes tens of tokens a second; this only bounds a server that hangs).
SECONDS_PER_TOKEN = 0.5
#: Request seeds per settings seed (more than any ``n`` the limits allow).
SEED_BLOCK = 1 << 12
_MAX_REQUEST_S = 900.0
def _served(lm: LanguageModel) -> Any:
    """The backend of a model whose engine draws whole samples, or a one-line refusal."""
    if not lm.caps.whole_samples:
        raise ModelError(f"{lm.name} cannot draw whole samples itself: only a served model on llama-server or an "
                         "OpenAI-style completions route can")
    return lm.backend


def _engine_info(ep: Any) -> dict[str, Any]:
    """Who draws the samples, as a result's settings name it (a view reads ``endpoint``)."""
    return {"sampler": f"{ep.api} server's own ({ep.name})", "endpoint": ep.name, "api": ep.api}


def _fail(ep: Any, what: str) -> ModelError:
    return ModelError(f"endpoint {ep.name!r}: unexpected answer to a sampling request: {what}")


def _log(p: Any) -> float:
    return math.log(p) if isinstance(p, (int, float)) and p > 0 else -math.inf


def _checked_ids(ids: list[int], vocab: int | None) -> list[int]:
    """``ids`` if every one is a token of the vocabulary (a negative id or one past it would reach
    the tokenizer and raise there, behind a bare error)."""
    bad = next((i for i in ids if i < 0 or (vocab is not None and i >= vocab)), None)
    if bad is not None:
        raise ModelError(f"token id {bad} is outside the vocabulary" + (f" of {vocab}" if vocab else ""))
    return ids


def _sequence_from_llama(r: Any, decode: Callable[[list[int]], str], eos: set[int],
                         vocab: int | None = None) -> GeneratedSequence:
    """One llama-server result (``return_tokens``, ``post_sampling_probs``) -> a sequence.

    ``stop_type`` "eos" means the last id is an end-of-generation token *of the GGUF* (which may
    be one our tokenizer's config does not list): it is kept as the last id and left out of the
    text. A token whose text ends inside a UTF-8 character gets no probability entry from the
    server, so entries are matched to tokens by id; a token without one has NaN."""
    if not isinstance(r, dict) or not isinstance(r.get("tokens"), list):
        raise ModelError("a llama-server result without 'tokens' (was return_tokens sent?)")
    ids = _checked_ids([int(t) for t in r["tokens"]], vocab)
    entries = [c for c in (r.get("completion_probabilities") or []) if isinstance(c, dict)]
    logprobs, k = [], 0
    for tok in ids:
        if k < len(entries) and entries[k].get("id") == tok:
            logprobs.append(_log(entries[k].get("prob")))
            k += 1
        else:
            logprobs.append(math.nan)
    finished = r.get("stop_type") == "eos"
    if finished and not ids:  # an end with no token listed: write ours
        ids, logprobs = [min(eos)], [math.nan]
    text = decode(ids[:-1] if finished else ids)
    return GeneratedSequence(ids, text, _score(logprobs), logprobs, finished)


def _score(logprobs: list[float]) -> float:
    """Sum of the known log-probabilities (a NaN entry was not reported)."""
    return float(sum(x for x in logprobs if not math.isnan(x)))


def _sequences_openai(body: Any, lm: LanguageModel, eos: set[int]) -> tuple[list[GeneratedSequence], bool]:
    """OpenAI completions choices -> sequences; the flag says whether the ids were re-tokenised."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ModelError("an OpenAI completions answer without choices")
    out, retokenised = [], False
    for c in sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0):
        lp = c.get("logprobs") or {}
        toks, lps = lp.get("tokens") or [], lp.get("token_logprobs") or []
        keyed = [_TOKEN_ID_KEY.fullmatch(t) if isinstance(t, str) else None for t in toks]
        text = c.get("text") if isinstance(c.get("text"), str) else ""
        if toks and all(keyed):
            ids = _checked_ids([int(m.group(1)) for m in keyed], lm.vocab_size)
        else:  # text keys only: tokenise the text again (it may not give the server's ids)
            ids, retokenised = list(lm.tokenizer(text, add_special_tokens=False)["input_ids"]), True
        finished = c.get("finish_reason") == "stop"
        if finished and (not ids or ids[-1] not in eos):
            ids.append(min(eos))
        logprobs = [float(x) if isinstance(x, (int, float)) else -math.inf for x in lps]
        out.append(GeneratedSequence(ids, lm.decode(ids[:-1] if finished else ids), _score(logprobs),
                                     logprobs, finished))
    return out, retokenised


def _slots(client: Any) -> int:
    """How many completions llama-server takes per request (its ``--parallel``), from /props."""
    try:
        props = client.get("/props", retries=0)
        return max(1, int(props.get("total_slots", 1)))
    except Exception:  # an older server without the field: one at a time
        return 1


def engine_samples(lm: LanguageModel, prompt_ids: list[int], settings: Any, n: int, max_new_tokens: int) -> GenerationResult:
    """``n`` complete samples of ``lm`` (a backend with ``caps.whole_samples``: a served model)
    after ``prompt_ids``, drawn by the server itself with ``settings``."""
    ep, client = _served(lm).endpoint, _served(lm).client
    n = limits.check_samples(n)
    max_new_tokens = limits.check_new_tokens(max_new_tokens)
    eos = eos_set(lm) or {0}
    sampling = sampling_from_settings(settings)
    for window in ("penalty_last_n", "dry_penalty_last_n"):  # "the whole history" reaches to the last token
        if sampling[window] < 0:
            sampling[window] = len(prompt_ids) + max_new_tokens
    seed = 0 if sampling["seed"] is None else int(sampling["seed"])
    # Request seeds: a block of SEED_BLOCK per settings seed, so two problems (seed, seed + 1) never
    # share one; llama-server gives a request's k completions the seeds s, s + 1, … s + k - 1.
    base = seed * SEED_BLOCK
    timeout = min(_MAX_REQUEST_S, ep.timeout_s + SECONDS_PER_TOKEN * max_new_tokens)
    t0 = time.perf_counter()
    seqs: list[GeneratedSequence] = []
    extra = _engine_info(ep)
    if ep.api == "llama-server":
        per_request = min(n, _slots(client))
        while len(seqs) < n:  # at most ceil(n / slots) requests, each with the next seed
            k = min(per_request, n - len(seqs))
            path, body = build_request(ep, prompt_ids, {**sampling, "seed": base + len(seqs)}, n_vocab=lm.vocab_size,
                                       post_sampling=True)
            body.update(n_predict=max_new_tokens, n_probs=1, n_cmpl=k, return_tokens=True)
            answer = client.post(path, body, timeout_s=timeout)
            results = answer if isinstance(answer, list) else [answer]
            if len(results) != k:
                raise _fail(ep, f"asked for {k} completions, got {len(results)}")
            try:
                seqs += [_sequence_from_llama(r, lm.decode, eos, lm.vocab_size) for r in
                         sorted(results, key=lambda r: r.get("index", 0) if isinstance(r, dict) else 0)]
            except (ModelError, TypeError, ValueError) as e:
                raise _fail(ep, str(e)) from None
        extra.update(logprobs="after the engine's chain (post_sampling_probs)", logprobs_after_chain=True)
    elif ep.api == "openai":
        text = None if ep.prompt_ids else lm.decode(prompt_ids)
        path, body = build_request(ep, prompt_ids, {**sampling, "seed": base}, text, n_vocab=lm.vocab_size)
        body.update(max_tokens=max_new_tokens, n=n, logprobs=1)
        try:
            seqs, retokenised = _sequences_openai(client.post(path, body, timeout_s=timeout), lm, eos)
        except (ModelError, TypeError, ValueError, AttributeError) as e:
            raise _fail(ep, str(e)) from None
        if len(seqs) != n:
            raise _fail(ep, f"asked for {n} choices, got {len(seqs)} (does this server take 'n'?)")
        extra.update(logprobs="as the server reports them (vLLM: the raw model's by default)",
                     logprobs_after_chain=False)
        if retokenised:
            extra["token_ids"] = "the server gave text only: its text was tokenised again"
    else:
        raise ModelError(f"endpoint {ep.name!r}: whole samples from the engine are built for llama-server and "
                         f"OpenAI completions, not {ep.api!r}")
    info = settings_json(lm, settings, n=n, max_new_tokens=max_new_tokens, seed_used=seed, request_seed=base, **extra)
    return GenerationResult("sample", seqs, len(prompt_ids), info, time.perf_counter() - t0,
                            steps=max((len(s) for s in seqs), default=0), done=True)


def iter_engine_sample(lm: LanguageModel, prompt_ids: list[int], settings: Any, max_new_tokens: int,
                       poll_s: float = 0.1) -> Iterator[GenerationResult]:
    """One whole sample drawn by the server (``engine_samples`` with n = 1), as the snapshots an
    ``iter_*`` strategy yields: while the request is out, an empty running snapshot every
    ``poll_s`` seconds (so a caller stepping several columns in turn keeps the others moving), then
    the result, ``done``. The limits are checked when this is called; a failed request raises
    from the generator, as a failed step would."""
    max_new_tokens = limits.check_new_tokens(max_new_tokens)
    ep = _served(lm).endpoint
    waiting = GenerationResult("sample", [GeneratedSequence([], "", 0.0, [], False)], len(prompt_ids),
                               _engine_info(ep), 0.0, steps=0, done=False)

    def run() -> Iterator[GenerationResult]:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"engine-{ep.name}")
        try:
            # the request's own time limit bounds this wait (engine_samples: timeout per token)
            future = pool.submit(engine_samples, lm, prompt_ids, settings, 1, max_new_tokens)
            while True:
                try:
                    yield future.result(timeout=poll_s)
                    return
                except FutureTimeout:
                    yield waiting
        finally:
            pool.shutdown(wait=False)
    return run()
