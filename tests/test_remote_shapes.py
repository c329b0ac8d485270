"""Every captured response shape parses to the same top-N; wrong shapes fail with one line;
the top-N -> logits fill keeps the reported values exact and the tail below them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from decoding_lab.errors import ModelError
from decoding_lab.backends.remote import fill_logits
from decoding_lab.remote.payloads import build_request, neutral_sampling
from decoding_lab.remote.config import parse_endpoints
from decoding_lab.remote.shapes import parse, resolve_texts, text_index
from decoding_lab.stages import SettingsError

DATA = Path(__file__).parent / "data" / "remote"
FILES = sorted(DATA.glob("*.json"))
# A tiny text table standing in for token_texts(): "\ufffd" names several ids (partial UTF-8 bytes).
TEXTS = {7042: " Paris", 260: " the", 4528: " London", 1315: " New", 5145: " La", 200: "\ufffd", 201: "\ufffd"}


def table() -> dict[str, list[int]]:
    texts = [""] * 8000
    for i, t in TEXTS.items():
        texts[i] = t
    return text_index(texts)


def test_there_is_a_file_for_every_shape():
    names = {f.name for f in FILES}
    assert {"openai_llama_cpp_python.json", "openai_vllm_token_ids.json", "openai_sglang_text.json",
            "llama_server_completion.json", "llama_server_post_sampling.json", "sglang_generate.json"} <= names
    assert sum(n.startswith("wrong_shape") for n in names) >= 2


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_file_parses_as_documented(path):
    case = json.loads(path.read_text())
    assert case["comment"] and case["api"]
    want = case["expect"]
    if "error" in want:
        with pytest.raises(ModelError, match=want["error"]) as e:
            parse(case["api"], case["response"])
        assert "\n" not in str(e.value)
        return
    top = parse(case["api"], case["response"])
    if "texts" in want:
        assert list(top.texts) == want["texts"] and top.ids == ()
        top = resolve_texts(top, table())
    assert list(top.ids) == want["ids"]
    assert list(top.logprobs) == pytest.approx(want["logprobs"])
    assert top.chosen_id == want["chosen_id"]
    assert list(top.skipped) == want.get("skipped", [])
    if "post_ids" in want:
        assert list(top.post_ids) == want["post_ids"] and list(top.post_probs) == want["post_probs"]


@pytest.mark.parametrize("api, body, missing", [
    ("openai", {}, "no choices"), ("openai", {"choices": []}, "no choices"),
    ("openai", {"choices": [{"logprobs": {"tokens": [], "token_logprobs": [], "top_logprobs": []}}]}, "missing or empty"),
    ("openai", {"choices": [{"logprobs": {"tokens": ["a"], "token_logprobs": [-1], "top_logprobs": [None]}}]},
     "top_logprobs"),
    ("openai", {"choices": [{"logprobs": {"tokens": ["a"], "token_logprobs": ["x"], "top_logprobs": [{"a": -1}]}}]},
     "not a number"),
    ("llama-server", {"content": "x"}, "no completion_probabilities"),
    ("llama-server", {"completion_probabilities": [{"id": 1, "logprob": -1}]}, "neither top_logprobs"),
    ("llama-server", {"completion_probabilities": [{"id": -3, "top_logprobs": []}]}, "not a token id"),
    ("sglang", {"text": "x", "meta_info": {}}, "output_top_logprobs"),
    ("sglang", {"meta_info": {"output_top_logprobs": [[[-1.0]]], "output_token_logprobs": [[-1.0, 5, None]]}},
     "not \\[logprob, token_id, text\\]"),
    ("nope", {}, "no parser"),
])
def test_what_is_missing_is_said(api, body, missing):
    with pytest.raises(ModelError, match=missing):
        parse(api, body)


def test_fill_keeps_reported_values_and_spreads_the_tail():
    ids, lps, vocab = (7, 3, 11), (math.log(0.5), math.log(0.2), math.log(0.1)), 1000
    logits, tail, fill = fill_logits(ids, lps, vocab)
    assert logits.dtype == torch.float32 and logits.shape == (vocab,)
    p = torch.softmax(logits.double(), -1)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-6)
    assert [float(p[i]) for i in ids] == pytest.approx([0.5, 0.2, 0.1], rel=1e-5)   # exact, not renormalised
    assert tail == pytest.approx(0.2) and math.exp(fill) == pytest.approx(0.2 / 997)
    assert torch.topk(logits, 3).indices.tolist() == list(ids)                        # order kept
    assert float(logits.max()) == pytest.approx(math.log(0.5))


def test_fill_never_outranks_a_reported_token_and_survives_rounding():
    # tiny vocabulary: the even share (0.45 / 2) would beat the reported 0.05: clipped below it
    logits, tail, fill = fill_logits((0, 1), (math.log(0.5), math.log(0.05)), 4)
    assert fill < math.log(0.05) and torch.topk(logits, 2).indices.tolist() == [0, 1]
    # reported mass a hair above 1 (float rounding): the rest is far below, never NaN
    logits, tail, fill = fill_logits((0, 1), (math.log(0.7), math.log(0.3000001)), 50)
    assert tail == 0.0 and bool(torch.isfinite(logits).all()) and fill < math.log(0.3) - 20
    logits, _, _ = fill_logits((1, 0), (-0.1, -2.4), 2)   # the whole vocabulary reported
    assert logits.tolist() == pytest.approx([-2.4, -0.1])


@pytest.mark.parametrize("ids, lps, msg", [((), (), "no top tokens"), ((5, 5), (-1, -2), "outside"),
                                           ((99,), (-1,), "outside"),
                                           ((1, 2), (float("-inf"), float("-inf")), "all -inf"),   # was a
                                           ((1, 2), (float("nan"), -1.0), "NaN")])                 # sampler crash
def test_fill_refuses_impossible_reports(ids, lps, msg):
    with pytest.raises(ModelError, match=msg):
        fill_logits(ids, lps, 10)


@pytest.mark.parametrize("api, path, prompt_key", [("openai", "/v1/completions", "prompt"),
                                                   ("llama-server", "/completion", "prompt"),
                                                   ("sglang", "/generate", "input_ids")])
def test_requests_send_ids_one_token_and_every_knob(api, path, prompt_key):
    (ep,) = parse_endpoints(json.dumps([{"name": "e", "base_url": "http://127.0.0.1:1", "model": "m", "api": api,
                                         "tokenizer": "smollm2-135m-instruct", "top_n": 7}]))
    got_path, body = build_request(ep, [1, 2, 3], {"temperature": 1.0, "top_k": 5})
    assert got_path == path and body[prompt_key] == [1, 2, 3]
    flat = {**body, **body.get("sampling_params", {})}
    assert flat["temperature"] == 1.0 and flat["top_k"] == 5 and flat["min_p"] == 0.0 and flat["top_p"] == 1.0
    assert 7 in (body.get("logprobs"), body.get("n_probs"), body.get("top_logprobs_num"))
    _, off = build_request(ep, [1], None, n_vocab=500)
    assert {**off, **off.get("sampling_params", {})}["top_k"] == {"openai": 500, "llama-server": 0, "sglang": -1}[api]
    _, text_body = build_request(ep, [1, 2, 3], None, text="abc")
    assert "abc" in (text_body.get("prompt"), text_body.get("text"))
    with pytest.raises(ModelError, match="unknown engine sampling setting 'typo'"):
        neutral_sampling(typo=1)


def test_llama_server_requests_carry_llamacpps_own_knobs_and_chain():
    from decoding_lab.remote.payloads import LLAMA_CPP_SAMPLERS, sampling_from_settings
    from decoding_lab.settings import SamplingSettings
    (ep,) = parse_endpoints(json.dumps([{"name": "e", "base_url": "http://127.0.0.1:1", "model": "m",
                                         "api": "llama-server", "tokenizer": "smollm2-135m-instruct"}]))
    settings = SamplingSettings(order="llama.cpp", temperature=0.9, typical_p=0.8, top_n_sigma=1.5,
                                dry_multiplier=0.8, xtc_probability=0.5, xtc_threshold=0.2,
                                repetition_penalty=1.2, logit_bias=((13, -2.0),), seed=2**40 + 5)
    _, raw = build_request(ep, [1, 2], sampling_from_settings(settings))
    _, post = build_request(ep, [1, 2], sampling_from_settings(settings), post_sampling=True)
    assert raw["samplers"] == list(LLAMA_CPP_SAMPLERS) and raw["post_sampling_probs"] is False
    assert post["post_sampling_probs"] is True and {**post, "post_sampling_probs": False} == raw
    assert (raw["typical_p"], raw["top_n_sigma"], raw["dry_multiplier"], raw["xtc_probability"]) == (0.8, 1.5, 0.8, 0.5)
    assert raw["repeat_last_n"] == 64 and raw["repeat_penalty"] == 1.2 and raw["logit_bias"] == [[13, -2.0]]
    assert raw["seed"] == (2**40 + 5) % 0xFFFFFFFF  # folded to 32 bits, never llama.cpp's "random" (-1)
    # other presets' window "whole history" is the whole context (here 1 token); top-n-sigma 0 (off) is -1
    _, whole = build_request(ep, [1], sampling_from_settings(SamplingSettings(temperature=1.0, order="vllm")))
    assert whole["repeat_last_n"] == 1 and whole["top_n_sigma"] == -1.0 and whole["seed"] == 0
    (other,) = parse_endpoints(json.dumps([{"name": "o", "base_url": "http://127.0.0.1:1", "model": "m",
                                            "api": "openai", "tokenizer": "smollm2-135m-instruct"}]))
    with pytest.raises(ModelError, match="only llama-server"):
        build_request(other, [1], None, post_sampling=True)


def test_agreement_when_the_engine_lists_only_part_of_what_it_kept():
    from decoding_lab.remote.agreement import engine_agreement
    p = torch.tensor([0.4, 0.3, 0.2, 0.1])
    part = engine_agreement(p, (0, 1), (0.4, 0.3), top_n=2, greedy=False)  # listed 2, mass 0.7 < 1
    assert not part["engine_lists_all"] and part["same_set"] and part["max_dp"] == pytest.approx(0.0, abs=1e-7)
    wrong = engine_agreement(p, (0, 2), (0.4, 0.2), top_n=2, greedy=False)
    assert not wrong["same_set"] and wrong["only_engine"] == []
    cut = engine_agreement(torch.tensor([0.7, 0.3, 0.0]), (0, 1, 2), (0.6, 0.3, 0.1), top_n=20, greedy=False)
    assert not cut["same_set"] and cut["only_engine"] == [2] and cut["max_dp"] == pytest.approx(0.1)
    assert engine_agreement(p, (0,), (1.0,), top_n=20, greedy=True)["same_set"]
    assert not engine_agreement(p, (1,), (1.0,), top_n=20, greedy=True)["same_set"]


class _FakeClient:
    """Answers every POST with the next canned body and keeps what it was sent."""

    def __init__(self, *bodies):
        self.bodies, self.sent = list(bodies), []

    def post(self, path, payload, **kw):
        self.sent.append((path, payload, kw))
        return self.bodies.pop(0)

    def get(self, path, **kw):
        return {"total_slots": 2}


def _served(api: str, client: _FakeClient, prompt_ids: bool = True):
    from types import SimpleNamespace
    (ep,) = parse_endpoints(json.dumps([{"name": "e", "base_url": "http://127.0.0.1:1", "model": "m", "api": api,
                                         "tokenizer": "smollm2-135m-instruct", "prompt_ids": prompt_ids}]))
    from decoding_lab.backends.remote import RemoteBackend
    words = {"a": 5, "b": 6}
    backend = RemoteBackend(ep, SimpleNamespace(vocab_size=10), client=client)  # the real caps for this api
    return SimpleNamespace(backend=backend, caps=backend.caps, name="remote:e", vocab_size=10,
                           eos_token_ids=(2,), decode=lambda ids: "".join({5: "a", 6: "b"}.get(i, "?") for i in ids),
                           tokenizer=lambda text, add_special_tokens=False: {"input_ids": [words[c] for c in text]})


def test_engine_samples_read_openai_choices_with_ids_or_text():
    from decoding_lab.strategies.engine_samples import engine_samples
    from decoding_lab.settings import SamplingSettings
    vllm = {"choices": [
        {"index": 1, "text": "b", "finish_reason": "length",
         "logprobs": {"tokens": ["token_id:6"], "token_logprobs": [-0.5]}},
        {"index": 0, "text": "ab", "finish_reason": "stop",
         "logprobs": {"tokens": ["token_id:5", "token_id:6", "token_id:2"], "token_logprobs": [-0.1, -0.2, -0.3]}}]}
    client = _FakeClient(vllm)
    res = engine_samples(_served("openai", client), [1, 2], SamplingSettings(temperature=0.7, seed=4), n=2,
                         max_new_tokens=8)
    first, second = res.sequences
    assert (first.token_ids, first.text, first.finished, first.score) == ([5, 6, 2], "ab", True, pytest.approx(-0.6))
    assert (second.token_ids, second.finished) == ([6], False) and "token_ids" not in res.settings
    assert res.settings["logprobs_after_chain"] is False and res.settings["endpoint"] == "e"
    path, body, kw = client.sent[0]
    assert path == "/v1/completions" and body["n"] == 2 and body["max_tokens"] == 8 and body["logprobs"] == 1
    assert body["prompt"] == [1, 2] and body["seed"] == 4 * 4096 and kw["timeout_s"] > 30
    texts = {"choices": [{"index": 0, "text": "ba", "finish_reason": "length",
                          "logprobs": {"tokens": ["b", "a"], "token_logprobs": [-1.0, -1.0]}}]}
    res = engine_samples(_served("openai", _FakeClient(texts), prompt_ids=False), [5], SamplingSettings(), n=1,
                         max_new_tokens=2)
    assert res.sequences[0].token_ids == [6, 5] and "tokenised again" in res.settings["token_ids"]


def test_engine_samples_split_n_over_llama_servers_slots_and_refuse_a_short_answer():
    from decoding_lab.strategies.engine_samples import engine_samples
    from decoding_lab.settings import SamplingSettings
    one = lambda i, toks, stop: {"index": i, "tokens": toks, "stop_type": stop,  # noqa: E731
                                 "completion_probabilities": [{"id": t, "prob": 0.5} for t in toks]}
    client = _FakeClient([one(0, [5, 2], "eos"), one(1, [6, 6], "limit")], [one(0, [5], "eos")])
    res = engine_samples(_served("llama-server", client), [1], SamplingSettings(temperature=1.0, seed=10), n=3,
                         max_new_tokens=2)
    # "eos": the server's last id is its end token, whatever our tokenizer's list says; the text leaves it out
    assert [s.token_ids for s in res.sequences] == [[5, 2], [6, 6], [5]]
    assert [s.finished for s in res.sequences] == [True, False, True] and res.sequences[2].text == ""
    assert res.settings["logprobs_after_chain"] is True
    # two slots: 2 + 1 completions, seeds from this settings seed's own block (10 * 4096 …)
    assert [(b["n_cmpl"], b["seed"]) for _, b, _ in client.sent] == [(2, 40960), (1, 40962)]
    assert all(b["post_sampling_probs"] and b["return_tokens"] and b["n_predict"] == 2 for _, b, _ in client.sent)
    with pytest.raises(ModelError, match="asked for 2 completions, got 1"):
        engine_samples(_served("llama-server", _FakeClient([one(0, [5], "limit")])), [1], SamplingSettings(), n=2,
                       max_new_tokens=2)


def test_a_token_without_a_reported_probability_is_nan_not_a_shift():
    """llama-server lists no probability for a token that ends inside a UTF-8 character: the
    entries are matched by id, so the later tokens keep their own probabilities."""
    import math

    from decoding_lab.strategies.engine_samples import _sequence_from_llama
    seq = _sequence_from_llama({"tokens": [7, 8, 9], "stop_type": "limit",
                                "completion_probabilities": [{"id": 7, "prob": 0.5}, {"id": 9, "prob": 0.25}]},
                               decode=lambda ids: "", eos={2})
    assert seq.logprobs[0] == pytest.approx(math.log(0.5)) and math.isnan(seq.logprobs[1])
    assert seq.logprobs[2] == pytest.approx(math.log(0.25)) and seq.score == pytest.approx(math.log(0.125))


@pytest.mark.parametrize("tokens", [[5, -3], [5, 2 ** 65], [5, 49_152]])
def test_a_whole_sample_with_ids_outside_the_vocabulary_is_one_line(tokens):
    """Ids from a misbehaving server reached the tokenizer, which raised OverflowError."""
    from decoding_lab.strategies.engine_samples import _sequence_from_llama
    with pytest.raises(ModelError, match="outside the vocabulary"):
        _sequence_from_llama({"tokens": tokens, "stop_type": "limit"}, decode=lambda ids: "", eos={2},
                             vocab=49_152)


class _SlowClient(_FakeClient):
    """A fake server that takes ``delay`` seconds to answer."""

    def __init__(self, delay, *bodies):
        super().__init__(*bodies)
        self.delay = delay

    def post(self, path, payload, **kw):
        import time
        time.sleep(self.delay)
        return super().post(path, payload, **kw)


def test_a_whole_sample_streams_waiting_snapshots_until_the_server_answers():
    """Compare steps its columns in turn: while the server writes, the engine column yields empty
    running snapshots instead of holding the others; then the server's sample, done; a failed
    request raises from the generator."""
    from decoding_lab.strategies.engine_samples import iter_engine_sample
    from decoding_lab.settings import SamplingSettings
    body = [{"index": 0, "tokens": [5, 6], "stop_type": "limit",
             "completion_probabilities": [{"id": 5, "prob": 0.5}, {"id": 6, "prob": 0.25}]}]
    lm = _served("llama-server", _SlowClient(0.5, body))
    snaps = list(iter_engine_sample(lm, [1], SamplingSettings(temperature=1.0, seed=1), 2, poll_s=0.05))
    assert len(snaps) >= 3 and all(not s.done and s.text == "" for s in snaps[:-1])
    assert snaps[-1].done and snaps[-1].text == "ab" and snaps[-1].settings["endpoint"] == "e"
    assert lm.caps.whole_samples
    with pytest.raises(ModelError, match="asked for 1 completions, got 0"):
        list(iter_engine_sample(_served("llama-server", _FakeClient([])), [1], SamplingSettings(), 2))
    with pytest.raises(SettingsError):   # the limits are checked when called, before any request
        iter_engine_sample(lm, [1], SamplingSettings(), 10 ** 9)
    # SGLang's native route gives no whole samples here: Compare steps it token by token instead
    sglang = _served("sglang", _FakeClient())
    assert not sglang.caps.whole_samples
    with pytest.raises(ModelError, match="cannot draw whole samples"):
        iter_engine_sample(sglang, [1], SamplingSettings(), 2)


# ----------------------------------------------------------------------------- raw-logits endpoints (vLLM)
def _raw_answer(logits: list[float], chosen: int) -> dict:
    """vLLM's answer in --logprobs-mode raw_logits with logprobs -1: every token's raw logit."""
    top = {f"token_id:{i}": v for i, v in enumerate(logits)}
    return {"choices": [{"text": "x", "logprobs": {"tokens": [f"token_id:{chosen}"], "token_logprobs": [logits[chosen]],
                                                   "top_logprobs": [top]}}]}


def test_a_raw_logits_endpoint_is_exact_on_the_whole_vocabulary():
    from types import SimpleNamespace

    from decoding_lab.backends.remote import RemoteBackend
    (ep,) = parse_endpoints(json.dumps([{"name": "v", "base_url": "http://127.0.0.1:1", "model": "m", "api": "openai",
                                         "tokenizer": "smollm2-135m-instruct", "raw_logits": True, "top_n": 3}]))
    assert build_request(ep, [1, 2], None)[1]["logprobs"] == -1          # every token, every step
    logits = [2.5, -1.0, 7.25, 0.0, 3.0]
    client = _FakeClient(_raw_answer(logits, 2), _raw_answer(logits[:4], 2))
    backend = RemoteBackend(ep, SimpleNamespace(vocab_size=5), client=client)
    assert backend.caps.exact_logits and backend.caps.engine_picks
    cache = backend.new_cache()
    out = backend.forward(torch.tensor([[1, 2]]), cache)
    assert out[0].tolist() == logits                                       # used as they are, positive ones too
    report = cache.last_report
    assert report.ids == (2, 4, 0) and report.tail_mass == 0.0 and report.inexact == ()
    assert report.logprobs[0] == pytest.approx(float(torch.log_softmax(torch.tensor(logits, dtype=torch.float64), 0)[2]))
    with pytest.raises(ModelError, match="reported 4 of 5 tokens: start vLLM with --logprobs-mode raw_logits"):
        backend.forward(torch.tensor([[3]]), cache)
    assert cache.tokens == [1, 2]                                          # the failed step left the cache as it was


def test_raw_logits_is_refused_on_an_api_that_cannot_report_them():
    with pytest.raises(ModelError, match="field 'raw_logits': only an 'openai' endpoint"):
        parse_endpoints(json.dumps([{"name": "l", "base_url": "http://127.0.0.1:1", "model": "m",
                                     "api": "llama-server", "tokenizer": "smollm2-135m-instruct", "raw_logits": True}]))
