"""What a hostile API caller sends, against the real app on loopback: numbers that are not
numbers, lone surrogates, markup in the constraint text. Each gets one line that names the
field, the session keeps its steps, and the server keeps serving.

``gradio_client`` refuses to send NaN or Infinity (they are not JSON), and a browser never
does; a raw HTTP client can (Python's JSON reader on the server accepts them), so these tests
post to gradio's queue the way any such client would (``raw_call``)."""

from __future__ import annotations

import functools
import json
import math
import uuid
from typing import Any

import httpx
import pytest
from gradio_client import Client

from conftest_app import explorer_args

pytestmark = pytest.mark.real

GENERIC = "upstream Gradio app has raised an exception"
STEP_TABLE = 5          # position of the step table in /explorer_step's outputs
GRAMMAR_ARGS = {"model": "smollm2-135m-instruct", "hub_id": "", "kind": "preset", "preset": "integer",
                "constraint": "", "prompt": "How many legs does a spider have?", "chat": "chat", "temperature": 0.0,
                "seed": 0, "max_new_tokens": 16}


def raw_call(url: str, api_name: str, values: dict[str, Any], session_hash: str | None = None,
             timeout: float = 120.0) -> tuple[bool, Any]:
    """One event through gradio's queue with a hand-made JSON body (NaN and Infinity as JSON
    literals, lone surrogates as ``\\udcxx`` escapes). Returns (success, output data or error text). A refusal comes from the handler (an error event) or
    from the event's validator before the event is queued (HTTP 422, naming each field)."""
    http = _http(url)
    fn_index, slots = _endpoint(url, http.get("gradio_api/app_id").json()["app_id"], api_name)
    data = [None if slot is None else values.get(slot[0], slot[1]) for slot in slots]
    session_hash = session_hash or uuid.uuid4().hex[:10]
    body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session_hash, "event_data": None,
                       "trigger_id": None})  # json.dumps writes NaN / Infinity and escapes surrogates
    r = http.post("gradio_api/queue/join", content=body, headers={"content-type": "application/json"}, timeout=timeout)
    if r.status_code == 422:   # refused by the event's validator, before it ran: its messages
        return False, "; ".join(f"{d.get('parameter_name')}: {d.get('message')}" for d in r.json()["detail"]
                                if d.get("is_valid") is False)
    r.raise_for_status()
    event_id = r.json()["event_id"]
    with http.stream("GET", "gradio_api/queue/data", params={"session_hash": session_hash}, timeout=timeout) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("event_id") != event_id or msg.get("msg") != "process_completed":
                continue
            out = msg.get("output") or {}
            if msg.get("success"):
                return True, out.get("data")
            return False, str(out.get("error") or out)
    raise AssertionError("the queue closed without an answer")


@functools.lru_cache(maxsize=None)
def _http(url: str) -> httpx.Client:
    """One HTTP client per app address for the whole run (each new client loads the system's
    certificates for a TLS context, ~25 ms of CPU, though these apps speak plain HTTP)."""
    return httpx.Client(base_url=url, timeout=30)


@functools.lru_cache(maxsize=None)
def _endpoint(url: str, app_id: int, api_name: str) -> tuple[int, tuple[tuple[str, Any] | None, ...]]:
    """The event behind ``api_name`` on the app at ``url`` (``app_id``: gradio's random id of that
    app, so an app started later on the same port is read anew): its index, and one slot per input
    in order, ``None`` for a state input (the server's; the slot must be there) or (parameter name,
    its default). Read from the app's /gradio_api/info and /config, a large page each."""
    http = _http(url)
    info = http.get("gradio_api/info").json()["named_endpoints"]["/" + api_name]
    config = http.get("config").json()
    dep = next(d for d in config["dependencies"] if d.get("api_name") == api_name)
    types = {c["id"]: c["type"] for c in config["components"]}
    params = iter(info["parameters"])
    slots: list[tuple[str, Any] | None] = []
    for cid in dep["inputs"]:
        if types[cid] == "state":
            slots.append(None)
        else:
            p = next(params)
            slots.append((p["parameter_name"], p.get("parameter_default")))
    return dep["id"], tuple(slots)


def refused_by_name(url: str, api_name: str, values: dict, session_hash: str, field: str) -> str:
    ok, err = raw_call(url, api_name, values, session_hash)
    assert not ok, f"{api_name} accepted {values}"
    assert GENERIC not in err and "\n" not in err and field in err, err
    return err


BAD_NUMBERS = ["abc", None, math.nan, math.inf, -math.inf, "NaN", "Infinity", True]


@pytest.mark.parametrize("field,label", [("top_p", "top-p"), ("top_k", "top-k"), ("temperature", "temperature"),
                                         ("min_p", "min-p")])
def test_explorer_numbers_that_are_not_numbers(app_url, field, label):
    client = Client(app_url, verbose=False)
    first = client.predict(**explorer_args(), api_name="/explorer_step")
    assert len(first[STEP_TABLE]["data"]) == 1
    for bad in BAD_NUMBERS:
        refused_by_name(app_url, "explorer_step", explorer_args(**{field: bad}), client.session_hash, label)
    # A fraction where a whole number belongs is refused by name, not rounded.
    if field == "top_k":
        err = refused_by_name(app_url, "explorer_step", explorer_args(top_k=1.5), client.session_hash, label)
        assert "whole number" in err
    again = client.predict(**explorer_args(), api_name="/explorer_step")
    assert len(again[STEP_TABLE]["data"]) == 2      # the refused calls left the session's step in place


@pytest.mark.parametrize("field,label", [("temperature", "temperature"), ("seed", "seed"),
                                         ("max_new_tokens", "token budget")])
def test_grammar_numbers_that_are_not_numbers(app_url, field, label):
    client = Client(app_url, verbose=False)
    assert "Step 0" in client.predict(**GRAMMAR_ARGS, api_name="/grammar_step")[0]
    for bad in [*BAD_NUMBERS, 1.5]:
        if bad is None and field == "seed":
            continue                                  # an empty seed box is a fresh random seed, not an error
        if bad == 1.5 and field == "temperature":
            continue                                  # a real temperature
        refused_by_name(app_url, "grammar_step", {**GRAMMAR_ARGS, field: bad}, client.session_hash, label)
    assert "Step 1" in client.predict(**GRAMMAR_ARGS, api_name="/grammar_step")[0]


def test_grammar_counts_hold_their_ranges(app_url):
    sh = uuid.uuid4().hex[:10]
    err = refused_by_name(app_url, "grammar_step_n", {**GRAMMAR_ARGS, "n_steps": 10_000}, sh, "N (steps)")
    assert "<= 64" in err
    err = refused_by_name(app_url, "grammar_compare", {**GRAMMAR_ARGS, "n": 2.5, "max_new_tokens": 16}, sh,
                          "samples per side")
    assert "whole number" in err


def test_lone_surrogates_are_refused_by_name(app_url):
    sh = uuid.uuid4().hex[:10]
    err = refused_by_name(app_url, "explorer_step", explorer_args(prompt="caf\udce9 au lait"), sh, "lone surrogate")
    assert "prompt" in err
    refused_by_name(app_url, "grammar_step", {**GRAMMAR_ARGS, "prompt": "legs\udcff?"}, sh, "lone surrogate")
    err = refused_by_name(app_url, "grammar_step", {**GRAMMAR_ARGS, "kind": "regex", "constraint": "[0-9]\udcff"}, sh,
                          "lone surrogate")
    assert "regex" in err
    ok, _ = raw_call(app_url, "explorer_step", explorer_args(), sh)
    assert ok                                         # the server is still serving


def test_markup_in_a_constraint_is_refused_by_name_as_sent(app_url):
    """The regex is compiled by the Step's validator: the refusal names the grammar field and
    echoes the regex exactly as sent, as JSON data (the page shows a validator's message as
    text, never as markup: ``test_hostile_browser.test_markup_in_a_grammar_shows_text_only``)."""
    sh = uuid.uuid4().hex[:10]
    payload = '<img src=x onerror=alert(1)><a href="https://evil.example">['
    ok, err = raw_call(app_url, "grammar_step", {**GRAMMAR_ARGS, "kind": "regex", "constraint": payload}, sh)
    assert not ok and err.startswith("constraint: ") and "invalid regex" in err
    assert payload in err and err.count("constraint:") == 1   # one message, on the one field at fault
    ok, _ = raw_call(app_url, "grammar_step", GRAMMAR_ARGS, sh)
    assert ok                                         # the visitor's tab still steps
