"""Every captured response shape parses to the same top-N; wrong shapes fail with one line;
the top-N -> logits fill keeps the reported values exact and the tail below them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from decoding_lab.models import ModelError
from decoding_lab.remote.backend import fill_logits
from decoding_lab.remote.payloads import build_request, neutral_sampling
from decoding_lab.remote.config import parse_endpoints
from decoding_lab.remote.shapes import parse, resolve_texts, text_index

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
                                           ((99,), (-1,), "outside")])
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
