"""The remote backend against a real server: llama-cpp-python's, on 127.0.0.1, with the bundled GGUF.

The same weights run in-process on llama.cpp (``smollm2-135m-instruct@llama.cpp``), so the server's
numbers can be checked against ours: (a) greedy steps through the stepper agree, (b) the reported
top-N log-probabilities are llama.cpp's log-softmax of its logits, (c) the engine's own sampled
token always lies in the set our llama.cpp preset keeps on the filled logits.
"""

from __future__ import annotations

import httpx
import pytest
import torch

from conftest_app import configured_endpoints, loopback_endpoints, loopback_llama_cpp_python_server
from decoding_lab.chain import run_chain
from decoding_lab.errors import ModelError
from decoding_lab.models import get_model
from decoding_lab.backends.remote import load as load_remote
from decoding_lab.remote.payloads import sampling_from_settings
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History
from decoding_lab.stepper import Stepper

pytestmark = pytest.mark.real
GREEDY = SamplingSettings(temperature=0.0)


@pytest.fixture(scope="module")
def server_url():
    with loopback_llama_cpp_python_server() as url:
        yield url


@pytest.fixture(scope="module")
def remote(server_url):
    with configured_endpoints(loopback_endpoints(server_url)):
        yield load_remote("remote:loop")


@pytest.fixture(scope="module")
def local():
    return get_model("smollm2-135m-instruct@llama.cpp")


def server_tokens(url: str, text: str) -> list[int]:
    return httpx.post(url + "/extras/tokenize", json={"input": text}, timeout=30).json()["tokens"]


def test_greedy_steps_match_in_process_llamacpp(remote, local, server_url):
    assert remote.source == "remote" and remote.name == "remote:loop" and remote.vocab_size == local.vocab_size
    assert remote.model.vocabulary_check == "checked"  # via llama-cpp-python's /extras/tokenize
    prompt = "What is the capital of France?"
    ours = Stepper.from_prompt(remote, prompt, chat=True, settings=GREEDY)
    theirs = Stepper.from_prompt(local, prompt, chat=True, settings=GREEDY)
    ours.steps(12)
    theirs.steps(12)
    assert ours.tokens == theirs.tokens and len(ours.tokens) >= 6, (remote.decode(ours.tokens), local.decode(theirs.tokens))
    # the context went as text: the server's own tokenisation of it is our id list (no drift here)
    context = ours.prompt_ids + ours.tokens[:-1]
    assert server_tokens(server_url, remote.decode(context)) == context
    report = ours._cache.last_report
    assert report is not None and len(report.ids) >= 15 and 0 <= report.tail_mass < 1
    assert any("re-tokenised" in note for note in report.exact)


def test_reported_logprobs_are_llamacpps_log_softmax(remote, local):
    ids = remote.encode_prompt("Name three colours of the rainbow.", chat=True)
    cache = remote.new_cache()
    remote.forward(torch.tensor([ids]), cache)
    report = cache.last_report
    logits = local.forward(torch.tensor([ids]), local.new_cache())[0]
    ref = torch.log_softmax(logits.double(), -1)
    assert len(report.skipped) <= 2 and len(report.ids) >= 18
    got = torch.tensor(report.logprobs, dtype=torch.float64)
    assert float((got - ref[list(report.ids)]).abs().max()) < 2e-3
    top = torch.topk(ref, len(report.ids) + len(report.skipped)).indices.tolist()
    assert set(report.ids) <= set(top) and report.ids[0] == top[0]
    assert report.tail_mass == pytest.approx(1 - float(ref[list(report.ids)].exp().sum()), abs=2e-3)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_engine_sample_lies_in_the_set_our_preset_keeps(remote, seed):
    settings = SamplingSettings(temperature=1.0, top_k=5, top_p=0.6, seed=seed, order="llama.cpp")
    ids = remote.encode_prompt("Once upon a time, in a small", chat=False)
    cache = remote.new_cache()
    cache.engine_sampling = sampling_from_settings(settings)
    raw = remote.forward(torch.tensor([ids]), cache)[0]
    final, _, _ = run_chain(settings.build_chain(lm=remote), raw, History.from_lists(ids, []))
    kept = set(torch.nonzero(final > float("-inf")).flatten().tolist())
    assert 1 < len(kept) <= 5  # a real choice, inside the reported top-20 (so exact)
    assert cache.last_report.chosen_id in kept


def test_this_server_refuses_token_id_prompts(remote):
    with pytest.raises(ModelError, match="valid string"):
        lm = load_remote("loop-ids")
        Stepper(lm, [504, 3575], settings=GREEDY)
