"""Endpoint configuration: every field validated with a message naming the endpoint and the field."""

from __future__ import annotations

import json

import pytest

from decoding_lab.remote.config import ENV, Endpoint, EndpointError, endpoint, endpoints, parse_endpoints

GOOD = {"name": "local", "base_url": "http://127.0.0.1:8080/", "model": "m", "api": "llama-server",
        "tokenizer": "smollm2-135m-instruct"}


def one(**changes) -> str:
    entry = {**GOOD, **changes}
    return json.dumps([{k: v for k, v in entry.items() if v is not ...}])


def test_a_good_entry_gets_defaults_and_a_trimmed_url():
    (ep,) = parse_endpoints(one())
    assert ep == Endpoint("local", "http://127.0.0.1:8080", "m", "llama-server", "smollm2-135m-instruct")
    assert (ep.top_n, ep.timeout_s, ep.retries, ep.prompt_ids, ep.key_env) == (20, 30.0, 2, True, None)
    assert ep.model_name == "remote:local"


@pytest.mark.parametrize("changes, field", [
    ({"base_url": "ftp://host/x"}, "base_url"),
    ({"base_url": "file:///etc/passwd"}, "base_url"),
    ({"base_url": "http://user:pw@host"}, "base_url"),
    ({"base_url": "http://host/?q=1"}, "base_url"),
    ({"base_url": "http://host:99999"}, "base_url"),
    ({"base_url": "not a url"}, "base_url"),
    ({"name": "bad name!"}, "name"),
    ({"name": "x" * 49}, "name"),
    ({"name": ...}, "name"),
    ({"model": ""}, "model"),
    ({"api": "ollama"}, "api"),
    ({"tokenizer": 3}, "tokenizer"),
    ({"key_env": "sk-abc123-secret"}, "key_env"),
    ({"top_n": 0}, "top_n"), ({"top_n": 101}, "top_n"), ({"top_n": 2.5}, "top_n"), ({"top_n": True}, "top_n"),
    ({"timeout_s": 0}, "timeout_s"), ({"timeout_s": "30"}, "timeout_s"),
    ({"retries": -1}, "retries"), ({"retries": 6}, "retries"),
    ({"prompt_ids": "yes"}, "prompt_ids"),
    ({"url": "http://x"}, "url"),
])
def test_each_bad_field_is_named(changes, field):
    with pytest.raises(EndpointError) as e:
        parse_endpoints(one(**changes))
    assert f"field {field!r}" in str(e.value) and "\n" not in str(e.value)


def test_duplicate_names_bad_json_and_not_a_list():
    twice = json.dumps([GOOD, {**GOOD, "name": "LOCAL"}])
    with pytest.raises(EndpointError, match="used by two endpoints"):
        parse_endpoints(twice)
    with pytest.raises(EndpointError, match="invalid JSON"):
        parse_endpoints("[{")
    with pytest.raises(EndpointError, match="neither inline JSON"):
        parse_endpoints("/no/such/file.json")
    with pytest.raises(EndpointError, match="entry 0 must be an object"):
        parse_endpoints("[1]")
    assert parse_endpoints("") == []


def test_env_inline_or_file_and_only_configured_names(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, one())
    assert [e.name for e in endpoints()] == ["local"]
    assert endpoint("remote:local").name == endpoint("LOCAL").name == "local"
    with pytest.raises(EndpointError, match="unknown remote endpoint 'http://evil'.*configured: local"):
        endpoint("http://evil")
    path = tmp_path / "endpoints.json"
    path.write_text(one(name="from-file"))
    monkeypatch.setenv(ENV, str(path))
    assert [e.name for e in endpoints()] == ["from-file"]
    monkeypatch.delenv(ENV)
    with pytest.raises(EndpointError, match="none are configured"):
        endpoint("local")


def test_the_key_comes_from_the_named_variable(monkeypatch):
    (ep,) = parse_endpoints(one(key_env="LAB_TEST_KEY"))
    monkeypatch.delenv("LAB_TEST_KEY", raising=False)
    with pytest.raises(EndpointError, match="LAB_TEST_KEY"):
        ep.key()
    monkeypatch.setenv("LAB_TEST_KEY", "s3cret")
    assert ep.key() == "s3cret" and "s3cret" not in repr(ep)
