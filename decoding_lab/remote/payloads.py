"""What we send each kind of server: the request for one next token, and a tokenizer check.

One step = one request: the whole context as token ids, one new token at most, the top-N
log-probabilities, and the engine's own sampling settings. Every knob is sent explicitly,
even when "off", because servers have different defaults: llama-server samples at T 0.8
with top-k 40, top-p 0.95 and min-p 0.05, llama-cpp-python adds a repeat penalty of 1.1,
vLLM takes the model's generation_config. Unset knobs would silently change the engine's pick.

| api            | path              | prompt as ids           | top-N field             |
|----------------|-------------------|-------------------------|-------------------------|
| openai         | /v1/completions   | vLLM, SGLang: yes; llama-cpp-python: text only | logprobs |
| llama-server   | /completion       | yes (``[12, 34, 56]``)  | n_probs                 |
| sglang         | /generate         | yes (``input_ids``)     | top_logprobs_num        |
"""

from __future__ import annotations

from typing import Any

from decoding_lab.errors import ModelError
from decoding_lab.params import PARAMS, engine_rows
from decoding_lab.remote.client import Client, RemoteError
from decoding_lab.remote.config import Endpoint

__all__ = ["SAMPLING_KEYS", "LLAMA_CPP_SAMPLERS", "neutral_sampling", "sampling_from_settings", "build_request", "check_vocabulary"]

#: What the sampling dict calls a row whose value the settings resolve first: the repetition window
#: is the preset's convention (64 under the ``llama.cpp`` preset) when the row says -1.
_SAMPLING_NAME = {"repetition_window": "penalty_last_n"}

#: The engine-side knobs a caller may set in ``cache.engine_sampling`` (``backends.remote``), with their
#: "off" values as llama.cpp spells them: every row of the parameter table that llama-server has (the
#: others, temperature to the penalties, are the ones every engine has). A request that sets nothing
#: picks greedily (temperature 0) with a fresh seed; the repetition window is llama-server's default.
SAMPLING_KEYS: dict[str, Any] = {
    **{_SAMPLING_NAME.get(p.key, p.key): p.engine_off("llama-server") for p, _ in engine_rows("llama-server")},
    "temperature": 0.0, "seed": None, "penalty_last_n": PARAMS["repetition_window"].engine_default("llama-server")}

#: llama.cpp's default sampler chain, sent with every llama-server request so that a server
#: started with another ``--samplers`` still runs the chain our ``llama.cpp`` preset models.
LLAMA_CPP_SAMPLERS = ("penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature")
PROBE = "The capital of France is Paris. 1234 ünïcödé!"  # a test sentence for the tokenizer check


def neutral_sampling(**overrides: Any) -> dict[str, Any]:
    """Every knob at its "off" value (greedy), with ``overrides`` on top; unknown keys are refused.

    >>> neutral_sampling(temperature=1.0, top_k=5)["top_k"]
    5
    """
    unknown = sorted(set(overrides) - set(SAMPLING_KEYS))
    if unknown:
        raise ModelError(f"unknown engine sampling setting {unknown[0]!r}; known: {', '.join(SAMPLING_KEYS)}")
    return {**SAMPLING_KEYS, **overrides}


def sampling_from_settings(settings: Any) -> dict[str, Any]:
    """The engine-side equivalent of a ``SamplingSettings``: every knob it shares with the engines,
    and llama.cpp's own (sent to llama-server only). The penalty window is the settings' (the
    ``llama.cpp`` preset's is 64, llama-server's default); our 0 ("whole history") is llama.cpp's -1.

    >>> from decoding_lab.settings import SamplingSettings
    >>> s = sampling_from_settings(SamplingSettings(temperature=0.7, top_k=40, order="llama.cpp", seed=3))
    >>> s["temperature"], s["top_k"], s["penalty_last_n"], s["seed"]
    (0.7, 40, 64, 3)
    """
    direct = {k: getattr(settings, k) for k in SAMPLING_KEYS if hasattr(settings, k) and k != "seed"}
    sigma = direct.get("top_n_sigma", 0.0)
    direct["top_n_sigma"] = sigma if sigma > 0 else PARAMS["top_n_sigma"].engine_off("llama-server")  # n <= 0: off
    window = int(getattr(settings, "penalty_window", 64))
    direct["penalty_last_n"] = window if window > 0 else -1
    direct["logit_bias"] = tuple(getattr(settings, "logit_bias", ()) or ())
    return neutral_sampling(**direct, seed=getattr(settings, "seed", None))


def _window(last_n: int, ids: list[int]) -> int:
    """A penalty window for llama-server: -1 ("the whole history") becomes the context's length,
    since its HTTP API takes 0 … 2³¹ − 1 only (and allocates a buffer of that size)."""
    return max(1, len(ids)) if last_n < 0 else int(last_n)


def _knobs(api: str, s: dict[str, Any], ids: list[int], n_vocab: int) -> dict[str, Any]:
    """Every knob ``api`` has, spelled its way (the parameter table's engine columns), from the
    sampling dict ``s``. An "off" value is sent as the engine's own "off"."""
    out: dict[str, Any] = {}
    for p, key in engine_rows(api):
        value = s[_SAMPLING_NAME.get(p.key, p.key)]
        if p.key == "seed":
            if value is not None:   # llama.cpp's seed is 32-bit and 0xFFFFFFFF (-1) means "random": fold ours below
                out[key.name] = int(value) % 0xFFFFFFFF if api == "llama-server" else int(value)
            elif api == "llama-server":
                out[key.name] = -1
            continue
        if p.key == "logit_bias":
            value = [[int(t), float(b)] for t, b in value]
        elif key.windowed:
            value = _window(value, ids)
        elif key.off is not None and value == p.engine_off("llama-server"):   # "off", in this API's spelling
            value = n_vocab if key.off == "vocabulary" else key.off             # e.g. top-k: -1 on SGLang
        out[key.name] = value
    return out


def build_request(ep: Endpoint, ids: list[int], sampling: dict[str, Any] | None, text: str | None = None,
                  n_vocab: int = 1 << 20, post_sampling: bool = False) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) asking ``ep`` for one token after ``ids`` (or after ``text`` when the
    endpoint takes no ids). ``n_vocab`` spells "top-k off" where no other value means off everywhere.
    ``post_sampling`` (llama-server only) asks for the top-N *after* the sampler chain instead of
    the raw top-N: the same request otherwise, so with the same seed the engine picks the same token."""
    if post_sampling and ep.api != "llama-server":
        raise ModelError(f"endpoint {ep.name!r}: only llama-server reports the top-N after its sampler chain")
    s = neutral_sampling(**(sampling or {}))
    prompt: Any = list(ids) if text is None else text
    if ep.api == "openai":
        # a raw-logits server reports every token (-1: the whole vocabulary), else the top-N
        body = {"model": ep.model, "prompt": prompt, "max_tokens": 1, "logprobs": -1 if ep.raw_logits else ep.top_n,
                "echo": False,
                "n": 1, "stream": False, **_knobs("openai", s, ids, n_vocab),
                "repeat_penalty": s["repetition_penalty"],   # llama-cpp-python's name (its default is 1.1)
                "return_tokens_as_token_ids": True}          # vLLM: "token_id:123" keys; others ignore it
        return "/v1/completions", body
    if ep.api == "llama-server":
        body = {"prompt": prompt, "n_predict": 1, "n_probs": ep.top_n, "post_sampling_probs": post_sampling,
                "cache_prompt": True, "stream": False, "samplers": list(LLAMA_CPP_SAMPLERS), "mirostat": 0,
                # the raw-top-N request never samples on the backend (llama.cpp needs the logits for it):
                # the post-sampling one must not either, or the two could pick differently
                "backend_sampling": False,
                "min_keep": 0, **_knobs("llama-server", s, ids, n_vocab)}
        return "/completion", body
    if ep.api == "sglang":
        if text is not None:
            body_prompt: dict[str, Any] = {"text": text}
        else:
            body_prompt = {"input_ids": list(ids)}
        params = {"max_new_tokens": 1, **_knobs("sglang", s, ids, n_vocab)}
        return "/generate", {**body_prompt, "sampling_params": params, "return_logprob": True,
                             "top_logprobs_num": ep.top_n, "return_text_in_logprobs": True, "stream": False}
    raise ModelError(f"endpoint {ep.name!r}: unknown api {ep.api!r}")


def continuation_request(ep: Endpoint, ids: list[int], tokens: int, text: str | None = None,
                         n_vocab: int = 1 << 20) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) asking ``ep`` for ``tokens`` greedy tokens after ``ids``, with no
    log-probabilities: the request of a client that only wants text.

    >>> from decoding_lab.remote.config import Endpoint
    >>> ep = Endpoint(name="v", base_url="http://127.0.0.1:1", model="m", api="openai", tokenizer="t")
    >>> path, body = continuation_request(ep, [1, 2], 16)
    >>> path, body["max_tokens"], "logprobs" in body, body["temperature"]
    ('/v1/completions', 16, False, 0.0)
    """
    path, body = build_request(ep, ids, {"temperature": 0.0}, text, n_vocab)
    if ep.api == "openai":
        body["max_tokens"] = tokens
        body.pop("logprobs")
    elif ep.api == "llama-server":
        body.update(n_predict=tokens, n_probs=0)
    else:  # sglang's native route
        body["sampling_params"]["max_new_tokens"] = tokens
        body["return_logprob"] = False
    return path, body


def _server_tokens(client: Client, ep: Endpoint) -> list[int] | None:
    """The server's own token ids for PROBE, or None when it offers no tokenize route."""
    if ep.api == "llama-server":
        tries = [("/tokenize", {"content": PROBE, "add_special": False})]
    elif ep.api == "openai":  # vLLM's route, then llama-cpp-python's
        tries = [("/tokenize", {"model": ep.model, "prompt": PROBE, "add_special_tokens": False}),
                 ("/extras/tokenize", {"input": PROBE})]
    else:
        return None
    for path, body in tries:
        try:
            answer = client.post(path, body, retries=0)
        except RemoteError as e:
            if " 404" in str(e) or " 405" in str(e):
                continue  # no such route on this server
            raise
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
            return tokens
    return None


def check_vocabulary(client: Client, ep: Endpoint, tokenizer: Any) -> str:
    """Compare the server's tokenisation of a test sentence with the local ``tokenizer``'s.
    Returns "checked" or "unchecked" (no tokenize route); raises when they disagree."""
    theirs = _server_tokens(client, ep)
    if theirs is None:
        return "unchecked"
    ours = list(tokenizer(PROBE, add_special_tokens=False)["input_ids"])
    bos = getattr(tokenizer, "bos_token_id", None)
    if theirs[:1] == [bos] and ours[:1] != [bos]:
        theirs = theirs[1:]  # a route that always adds BOS (llama-cpp-python's /extras/tokenize)
    if theirs != ours:
        raise ModelError(f"endpoint {ep.name!r} tokenises a test sentence differently from {ep.tokenizer!r} "
                         f"(server {theirs[:8]}…, local {ours[:8]}…): set 'tokenizer' to the served model's")
    return "checked"
