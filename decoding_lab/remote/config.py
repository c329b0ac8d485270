"""Which model servers this deployment may use, read from ``DECODING_LAB_ENDPOINTS``.

The operator lists the servers once; a visitor only ever picks one of their *names*
(the app calls the model ``remote:<name>``). A visitor never types a URL, so the app
cannot be turned into a proxy to an arbitrary host, and a key never appears in a file:
the config names an environment variable (``key_env``) that holds it.

``DECODING_LAB_ENDPOINTS`` is either inline JSON or the path of a JSON file, a list of
objects such as::

    [{"name": "vllm-a100", "base_url": "http://10.0.0.5:8000", "model": "HuggingFaceTB/SmolLM2-135M-Instruct",
      "api": "openai", "tokenizer": "smollm2-135m-instruct", "key_env": "VLLM_KEY"}]

``api`` says how to talk to the server:

* ``"openai"``       — ``POST /v1/completions`` with ``logprobs`` (vLLM, SGLang, llama-cpp-python);
* ``"llama-server"`` — llama.cpp's native ``POST /completion`` with ``n_probs``;
* ``"sglang"``       — SGLang's native ``POST /generate`` with ``input_ids`` and ``top_logprobs_num``.

``post_sampling`` (default true; llama-server only) asks, with a second request per step,
for the top-N *after* llama.cpp's sampler chain (``post_sampling_probs``): what the engine
kept and cut, which the Explorer sets beside what our ``llama.cpp`` preset keeps.

``raw_logits`` (default false; ``openai`` only) says the server reports the model's *raw logits* for
the whole vocabulary: vLLM started with ``--logprobs-mode raw_logits --max-logprobs -1``. Each step
then asks for every token (``logprobs: -1``) and the remote backend is exact: every stage runs on the
real logits and the entropy is the real one, nothing is filled in from a top-N.

``prompt_ids`` (default true) sends the context as token ids. llama-cpp-python's server
accepts text only (its request model types ``prompt`` as ``str | list[str]``): set it to
false there, and the context is sent as text that the server tokenises again.

    >>> [e.name for e in parse_endpoints('[{"name": "local", "base_url": "http://127.0.0.1:8080", '
    ...                                  '"model": "m", "api": "llama-server", "tokenizer": "smollm2-135m-instruct"}]')]
    ['local']
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from decoding_lab.errors import ModelError

__all__ = ["Endpoint", "ENV", "APIS", "PREFIX", "endpoints", "endpoint", "parse_endpoints"]

ENV = "DECODING_LAB_ENDPOINTS"
PREFIX = "remote:"  # the app's model name for an endpoint: remote:<name>
APIS = ("openai", "llama-server", "sglang")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,47}")  # shows in a dropdown and in the model name
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_MAX_TOP_N = 100  # vLLM's default --max-logprobs is 20; beyond 100 a response grows without teaching more


class EndpointError(ModelError):
    """The deployment's endpoint configuration is wrong (a message for the operator)."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    base_url: str             # http(s)://host[:port][/prefix], no query, no credentials
    model: str                # the server's model name (sent as "model" in OpenAI requests)
    api: str                  # one of APIS
    tokenizer: str            # bundled name or Hub id whose tokenizer has the server model's token ids
    key_env: str | None = None  # environment variable holding a bearer key (never the key itself)
    top_n: int = 20
    timeout_s: float = 30.0
    retries: int = 2
    prompt_ids: bool = True   # send the context as token ids (False: as text, re-tokenised by the server)
    post_sampling: bool = True  # llama-server: also ask for the top-N after its sampler chain (a 2nd request)
    raw_logits: bool = False  # openai (vLLM --logprobs-mode raw_logits): every step reports all V raw logits

    def key(self) -> str | None:
        """The bearer key from ``key_env`` at call time (None when not configured)."""
        if not self.key_env:
            return None
        value = os.environ.get(self.key_env, "").strip()
        if not value:
            raise EndpointError(f"endpoint {self.name!r}: environment variable {self.key_env} (key_env) is empty")
        return value

    @property
    def model_name(self) -> str:
        return PREFIX + self.name


def _bad(name: str, field: str, why: str) -> EndpointError:
    return EndpointError(f"{ENV}: endpoint {name!r}, field {field!r}: {why}")


def _check(raw: Any, index: int) -> Endpoint:
    if not isinstance(raw, dict):
        raise EndpointError(f"{ENV}: entry {index} must be an object, got {type(raw).__name__}")
    name = raw.get("name")
    label = name if isinstance(name, str) else f"#{index}"
    known = {f.name for f in fields(Endpoint)}
    unknown = sorted(set(raw) - known - {"comment"})
    if unknown:
        raise _bad(label, unknown[0], f"unknown field (known: {', '.join(sorted(known))})")
    for req in ("name", "base_url", "model", "api", "tokenizer"):
        if not isinstance(raw.get(req), str) or not raw[req].strip():
            raise _bad(label, req, "required, a non-empty string")
    if not _NAME.fullmatch(name):
        raise _bad(label, "name", "1-48 characters: letters, digits, '_', '.', '-' (starting with a letter or digit)")
    url = raw["base_url"].strip().rstrip("/")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a malformed port
    except ValueError as e:
        raise _bad(name, "base_url", f"not a URL ({e})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad(name, "base_url", "must be an http:// or https:// URL with a host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise _bad(name, "base_url", "no credentials, query or fragment (put a key in key_env)")
    del port
    if raw["api"] not in APIS:
        raise _bad(name, "api", f"{raw['api']!r} is not one of {', '.join(APIS)}")
    key_env = raw.get("key_env")
    if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env)):
        raise _bad(name, "key_env", "the NAME of an environment variable (letters, digits, '_'), never the key")
    values: dict[str, Any] = {}
    for field, lo, hi, kind in (("top_n", 1, _MAX_TOP_N, int), ("timeout_s", 0.1, 600.0, float), ("retries", 0, 5, int)):
        if field in raw:
            v = raw[field]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and v != int(v)):
                raise _bad(name, field, f"must be {'an integer' if kind is int else 'a number'}, got {v!r}")
            if not lo <= v <= hi:
                raise _bad(name, field, f"must be in [{lo}, {hi}], got {v!r}")
            values[field] = kind(v)
    for flag in ("prompt_ids", "post_sampling", "raw_logits"):
        if flag in raw:
            if not isinstance(raw[flag], bool):
                raise _bad(name, flag, f"must be true or false, got {raw[flag]!r}")
            values[flag] = raw[flag]
    if values.get("raw_logits") and raw["api"] != "openai":
        raise _bad(name, "raw_logits", "only an 'openai' endpoint (vLLM with --logprobs-mode raw_logits) reports them")
    return Endpoint(name=name, base_url=url, model=raw["model"].strip(), api=raw["api"],
                    tokenizer=raw["tokenizer"].strip(), key_env=key_env, **values)


def parse_endpoints(text: str) -> list[Endpoint]:
    """Inline JSON (starting with ``[``) or the path of a JSON file -> validated endpoints."""
    text = (text or "").strip()
    if not text:
        return []
    if not text.startswith("["):
        path = Path(text).expanduser()
        if not path.is_file():
            raise EndpointError(f"{ENV} is neither inline JSON (a list) nor the path of a file: {text[:80]!r}")
        text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise EndpointError(f"{ENV}: invalid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(data, list):
        raise EndpointError(f"{ENV}: expected a list of endpoint objects, got {type(data).__name__}")
    out = [_check(raw, i) for i, raw in enumerate(data)]
    seen: set[str] = set()
    for e in out:
        if e.name.lower() in seen:
            raise _bad(e.name, "name", "used by two endpoints (names are case-insensitive)")
        seen.add(e.name.lower())
    return out


def endpoints() -> list[Endpoint]:
    """The configured endpoints, read at call time (the UI offers their names)."""
    return parse_endpoints(os.environ.get(ENV, ""))


def endpoint(name: str) -> Endpoint:
    """One endpoint by name (``remote:`` prefix allowed); only configured names resolve."""
    key = (name or "").strip()
    if key.lower().startswith(PREFIX):
        key = key[len(PREFIX):]
    found = {e.name.lower(): e for e in endpoints()}
    if key.lower() not in found:
        listed = ", ".join(e.name for e in found.values()) or f"none are configured ({ENV})"
        raise EndpointError(f"unknown remote endpoint {key[:48]!r}; configured: {listed}")
    return found[key.lower()]
