"""One-token responses of real servers, parsed into one small record (``TopN``).

Every server answers "what are the N most likely next tokens, and which did you pick?",
each in its own shape (files under ``tests/data/remote/`` show each one):

* **OpenAI completions** (vLLM, SGLang, llama-cpp-python): ``choices[0].logprobs`` holds
  ``tokens`` (the picked token), ``token_logprobs`` (its log-probability) and
  ``top_logprobs`` — one dict per position, *token text* -> log-probability. Text keys are
  lossy: two tokens with the same text collapse into one key, and a token that is only part
  of a UTF-8 character decodes to "" or "\\ufffd". vLLM with ``return_tokens_as_token_ids``
  writes the keys as ``"token_id:123"``: exact ids, used whenever present.
* **llama-server** ``/completion`` with ``n_probs``: ``completion_probabilities[0]`` has
  ``id``, ``token``, ``logprob`` and ``top_logprobs`` (``id``/``token``/``bytes``/``logprob``),
  a softmax of the raw logits. With ``post_sampling_probs`` the same entries carry ``prob``
  and ``top_probs`` instead: probabilities *after* the sampler chain (what it drew from).
* **SGLang native** ``/generate`` with ``return_logprob`` and ``top_logprobs_num``:
  ``meta_info.output_top_logprobs[0]`` is a list of ``[logprob, token_id, text|null]`` and
  ``meta_info.output_token_logprobs[0]`` the picked token in the same form.

A shape that lacks what we need is a ``ModelError`` naming the missing part, never a guess.

    >>> t = parse_llama_server({"completion_probabilities": [{"id": 5, "token": " Paris", "logprob": -0.1,
    ...     "top_logprobs": [{"id": 5, "token": " Paris", "logprob": -0.1}, {"id": 9, "token": " Lyon", "logprob": -2.5}]}]})
    >>> t.ids, t.chosen_id
    ((5, 9), 5)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Sequence

from decoding_lab.errors import ModelError

__all__ = ["TopN", "parse", "parse_openai", "parse_llama_server", "parse_sglang", "resolve_texts", "text_index"]

_TOKEN_ID_KEY = re.compile(r"token_id:(\d+)")  # vLLM's return_tokens_as_token_ids


@dataclass(frozen=True)
class TopN:
    """The engine's report on one next-token distribution."""

    ids: tuple[int, ...]              # reported token ids, most likely first (empty until texts are resolved)
    logprobs: tuple[float, ...]       # their log-probabilities under the engine's raw distribution
    chosen_id: int | None             # the token the engine itself picked (None: given as text only)
    chosen_logprob: float | None = None
    post_ids: tuple[int, ...] | None = None    # llama-server post_sampling_probs: after the chain
    post_probs: tuple[float, ...] | None = None
    texts: tuple[str, ...] | None = None       # text keys, when the server gave no ids
    chosen_text: str | None = None
    pieces: tuple[str, ...] | None = None      # the server's text of each id, when it gave both
    skipped: tuple[str, ...] = ()              # texts that could not be mapped to one id (honestly dropped)
    shape: str = ""                            # which parser read it


def _fail(shape: str, what: str) -> ModelError:
    return ModelError(f"unexpected {shape} response: {what}")


def _num(x: Any, shape: str, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        raise _fail(shape, f"{where} is not a number ({x!r:.40})")
    return float(x)


def _id(x: Any, shape: str, where: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise _fail(shape, f"{where} is not a token id ({x!r:.40})")
    return x


def _sorted(pairs: list[tuple[Any, float]]) -> list[tuple[Any, float]]:
    return sorted(pairs, key=lambda kv: -kv[1])  # stable: the server's order breaks ties


def parse_openai(body: Any) -> TopN:
    """OpenAI ``/v1/completions`` with ``logprobs=N`` and ``max_tokens=1``."""
    shape = "OpenAI completions"
    try:
        lp = body["choices"][0]["logprobs"]
    except (KeyError, IndexError, TypeError):
        raise _fail(shape, "no choices[0].logprobs (did the server ignore 'logprobs'?)") from None
    if not isinstance(lp, dict):
        raise _fail(shape, "choices[0].logprobs is null (the server returned no log-probabilities)")
    tokens, token_lps, tops = lp.get("tokens"), lp.get("token_logprobs"), lp.get("top_logprobs")
    if not isinstance(tokens, list) or not tokens or not isinstance(token_lps, list) or not token_lps:
        raise _fail(shape, "logprobs.tokens / logprobs.token_logprobs missing or empty")
    if not isinstance(tops, list) or not tops or not isinstance(tops[0], dict) or not tops[0]:
        raise _fail(shape, "logprobs.top_logprobs[0] missing or empty (was logprobs > 0 sent?)")
    pairs = _sorted([(k, _num(v, shape, f"top_logprobs[0][{k!r}]")) for k, v in tops[0].items()])
    chosen_key, chosen_lp = tokens[0], _num(token_lps[0], shape, "token_logprobs[0]")
    if not isinstance(chosen_key, str):
        raise _fail(shape, "logprobs.tokens[0] is not text")
    as_ids = [_TOKEN_ID_KEY.fullmatch(k) for k, _ in pairs]
    if all(as_ids):  # vLLM return_tokens_as_token_ids: exact ids
        chosen = _TOKEN_ID_KEY.fullmatch(chosen_key)
        return TopN(ids=tuple(int(m.group(1)) for m in as_ids), logprobs=tuple(v for _, v in pairs),
                    chosen_id=int(chosen.group(1)) if chosen else None, chosen_logprob=chosen_lp,
                    shape="openai-token-ids")
    return TopN(ids=(), logprobs=tuple(v for _, v in pairs), chosen_id=None, chosen_logprob=chosen_lp,
                texts=tuple(k for k, _ in pairs), chosen_text=chosen_key, shape="openai-text")


def parse_llama_server(body: Any) -> TopN:
    """llama.cpp's native ``/completion`` with ``n_probs`` (and optionally ``post_sampling_probs``)."""
    shape = "llama-server /completion"
    try:
        entry = body["completion_probabilities"][0]
    except (KeyError, IndexError, TypeError):
        raise _fail(shape, "no completion_probabilities[0] (was n_probs > 0 and n_predict 1 sent?)") from None
    if not isinstance(entry, dict) or "id" not in entry:
        raise _fail(shape, "completion_probabilities[0] has no 'id' (a llama.cpp server older than 2025?)")
    chosen = _id(entry["id"], shape, "completion_probabilities[0].id")
    if isinstance(entry.get("top_logprobs"), list):  # raw softmax of the logits
        rows = entry["top_logprobs"]
        pairs = [(_id(r.get("id"), shape, "top_logprobs[].id"), _num(r.get("logprob"), shape, "top_logprobs[].logprob"))
                 for r in rows if isinstance(r, dict)]
        if not pairs:
            raise _fail(shape, "top_logprobs is empty")
        pieces = {r.get("id"): r.get("token") for r in rows if isinstance(r, dict)}
        pairs = _sorted(pairs)
        return TopN(ids=tuple(i for i, _ in pairs), logprobs=tuple(v for _, v in pairs), chosen_id=chosen,
                    chosen_logprob=_num(entry.get("logprob"), shape, "completion_probabilities[0].logprob"),
                    pieces=tuple(str(pieces[i]) if isinstance(pieces[i], str) else "" for i, _ in pairs),
                    shape="llama-server")
    if isinstance(entry.get("top_probs"), list):  # post_sampling_probs: after the sampler chain
        rows = [r for r in entry["top_probs"] if isinstance(r, dict)]
        pairs = _sorted([(_id(r.get("id"), shape, "top_probs[].id"), _num(r.get("prob"), shape, "top_probs[].prob"))
                         for r in rows])
        return TopN(ids=(), logprobs=(), chosen_id=chosen, post_ids=tuple(i for i, _ in pairs),
                    post_probs=tuple(p for _, p in pairs), shape="llama-server-post")
    raise _fail(shape, "completion_probabilities[0] has neither top_logprobs nor top_probs")


def parse_sglang(body: Any) -> TopN:
    """SGLang's native ``/generate`` with ``return_logprob`` and ``top_logprobs_num``."""
    shape = "SGLang /generate"
    try:
        meta = body["meta_info"]
        top = meta["output_top_logprobs"][0]
        picked = meta["output_token_logprobs"][0]
    except (KeyError, IndexError, TypeError):
        raise _fail(shape, "no meta_info.output_top_logprobs[0] / output_token_logprobs[0] "
                           "(were return_logprob and top_logprobs_num sent?)") from None
    if not isinstance(top, list) or not top:
        raise _fail(shape, "meta_info.output_top_logprobs[0] is empty")
    rows = []
    for r in top:
        if not isinstance(r, (list, tuple)) or len(r) < 2:
            raise _fail(shape, "an output_top_logprobs entry is not [logprob, token_id, text]")
        rows.append((_id(r[1], shape, "output_top_logprobs[][1]"), _num(r[0], shape, "output_top_logprobs[][0]"),
                     r[2] if len(r) > 2 and isinstance(r[2], str) else None))
    if not isinstance(picked, (list, tuple)) or len(picked) < 2:
        raise _fail(shape, "output_token_logprobs[0] is not [logprob, token_id, text]")
    rows.sort(key=lambda r: -r[1])
    texts = tuple(r[2] or "" for r in rows)
    return TopN(ids=tuple(r[0] for r in rows), logprobs=tuple(r[1] for r in rows),
                chosen_id=_id(picked[1], shape, "output_token_logprobs[0][1]"),
                chosen_logprob=_num(picked[0], shape, "output_token_logprobs[0][0]"),
                pieces=texts if any(texts) else None, shape="sglang")


_PARSERS = {"openai": parse_openai, "llama-server": parse_llama_server, "sglang": parse_sglang}


def parse(api: str, body: Any) -> TopN:
    if api not in _PARSERS:
        raise ModelError(f"no parser for api {api!r}; known: {', '.join(_PARSERS)}")
    return _PARSERS[api](body)


def text_index(token_texts: Sequence[str]) -> dict[str, list[int]]:
    """text -> every id whose decoded text it is (build once per tokenizer: ~50k entries)."""
    index: dict[str, list[int]] = {}
    for i, text in enumerate(token_texts):
        index.setdefault(text, []).append(i)
    return index


def resolve_texts(top: TopN, index: dict[str, list[int]]) -> TopN:
    """Map text keys to ids with the local tokenizer's table. A text that names no token or
    several (e.g. "" for every partial UTF-8 byte) is skipped and listed in ``skipped``:
    its mass then counts as unreported, which is honest; a wrong id would not be.

    >>> t = resolve_texts(TopN((), (-0.1, -2.0, -3.0), None, texts=(" Paris", " Lyon", ""), chosen_text=" Paris"),
    ...                   {" Paris": [5], " Lyon": [9], "": [1, 2]})
    >>> t.ids, t.logprobs, t.chosen_id, t.skipped
    ((5, 9), (-0.1, -2.0), 5, ('',))
    """
    if top.texts is None:
        return top
    ids, lps, skipped = [], [], []
    for text, lp in zip(top.texts, top.logprobs):
        found = index.get(text, [])
        if len(found) == 1 and found[0] not in ids:
            ids.append(found[0])
            lps.append(lp)
        else:
            skipped.append(text)
    chosen = index.get(top.chosen_text or "", [])
    return replace(top, ids=tuple(ids), logprobs=tuple(lps), skipped=tuple(skipped),
                   chosen_id=chosen[0] if len(chosen) == 1 else None)
