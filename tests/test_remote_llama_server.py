"""The remote backend against llama.cpp's own ``llama-server`` on 127.0.0.1, with the bundled GGUF.

The server is built from the llama.cpp source llama-cpp-python vendors (``make llama-server``), so
it is the same llama.cpp commit as the in-process backend (``smollm2-135m-instruct@llama.cpp``).
Its native ``/completion`` takes the context as token ids and reports both the raw top-N and the
top-N after its sampler chain. The three checks:

(a) greedy steps through our stepper give the in-process backend's tokens;
(b) the raw top-N it reports is llama.cpp's own log-softmax of the same context's logits;
(c) the top-N after its sampler chain is what our ``llama.cpp`` preset keeps on that top-N,
    token for token, with the same probabilities.
"""

from __future__ import annotations

import math

import httpx
import pytest
import torch

from conftest_app import configured_endpoints, llama_server_endpoints, loopback_llama_server
from decoding_lab.chain import run_chain
from decoding_lab.models import get_model
from decoding_lab.remote.agreement import engine_agreement
from decoding_lab.backends.remote import load as load_remote
from decoding_lab.remote.payloads import sampling_from_settings
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History
from decoding_lab.stepper import Stepper

pytestmark = pytest.mark.real
GREEDY = SamplingSettings(temperature=0.0)


@pytest.fixture(scope="module")
def server_url():
    with loopback_llama_server() as url:
        yield url


@pytest.fixture(scope="module")
def remote(server_url):
    with configured_endpoints(llama_server_endpoints(server_url)):
        yield load_remote("remote:llama")


@pytest.fixture(scope="module")
def local():
    return get_model("smollm2-135m-instruct@llama.cpp")


def test_it_is_llama_cpps_server_on_loopback(server_url):
    props = httpx.get(server_url + "/props", timeout=10).json()
    assert "default_generation_settings" in props and server_url.startswith("http://127.0.0.1:")
    assert props["default_generation_settings"]["params"]["top_k"] == 40  # llama.cpp's own default


@pytest.mark.parametrize("prompt", ["What is the capital of France?", "Write a haiku about the sea."])
def test_greedy_steps_match_in_process_llamacpp(remote, local, prompt):
    assert remote.source == "remote" and remote.vocab_size == local.vocab_size
    assert remote.model.vocabulary_check == "checked"  # via llama-server's /tokenize
    ours = Stepper.from_prompt(remote, prompt, chat=True, settings=GREEDY)
    theirs = Stepper.from_prompt(local, prompt, chat=True, settings=GREEDY)
    ours.steps(16)
    theirs.steps(16)
    assert ours.tokens == theirs.tokens and len(ours.tokens) >= 8, (remote.decode(ours.tokens), local.decode(theirs.tokens))
    report = ours.traces[-1].reported
    assert report is not None and len(report["ids"]) == 20 and not report["skipped"]
    # the engine's own pick, made by its sampler at T 0, is the token we took
    assert [t.reported["chosen_id"] for t in ours.traces] == ours.tokens
    assert not any("as text" in note for note in report["exact"])  # the context went as token ids


def test_reported_top_n_is_llamacpps_log_softmax(remote, local):
    ids = remote.encode_prompt("Name three colours of the rainbow.", chat=True)
    cache = remote.new_cache()
    remote.forward(torch.tensor([ids]), cache)
    report = cache.last_report
    ref = torch.log_softmax(local.forward(torch.tensor([ids]), local.new_cache())[0].double(), -1)
    assert len(report.ids) == 20
    assert list(report.ids) == torch.topk(ref, 20).indices.tolist()
    got = torch.tensor(report.logprobs, dtype=torch.float64)
    assert float((got - ref[list(report.ids)]).abs().max()) < 1e-3
    assert report.tail_mass == pytest.approx(1 - float(ref[list(report.ids)].exp().sum()), abs=1e-3)


# Settings whose kept set closes inside the reported top-20, so our chain sees every token the
# engine could keep (top-p, typical-p or a penalty that reaches below the top-20 would not be exact).
CASES = {
    "top-k 8, T 0.7": dict(temperature=0.7, top_k=8),
    "top-p 0.3, T 1.3": dict(temperature=1.3, top_p=0.3),
    "min-p 0.1, T 2": dict(temperature=2.0, min_p=0.1),
    "top-k 12 then top-p 0.8 then min-p 0.05": dict(temperature=1.0, top_k=12, top_p=0.8, min_p=0.05),
    "presence and frequency penalties on the prompt, top-k 10": dict(temperature=1.0, top_k=10,
                                                                     presence_penalty=0.4, frequency_penalty=0.3),
    "logit bias, top-k 6": dict(temperature=0.9, top_k=6, logit_bias=((13, 3.0),)),
    "T 0": dict(temperature=0.0, top_k=5),
}
PROMPT = "The cat sat on the mat. The cat sat on the"


@pytest.mark.parametrize("case", list(CASES))
def test_post_sampling_top_n_is_what_our_llamacpp_preset_keeps(remote, case):
    settings = SamplingSettings(order="llama.cpp", seed=7, **CASES[case])
    ids = remote.encode_prompt(PROMPT, chat=False)
    cache = remote.new_cache()
    cache.engine_sampling = sampling_from_settings(settings)
    raw = remote.forward(torch.tensor([ids]), cache)[0]
    final, _records, _z, _p_raw, p_final = run_chain(settings.build_chain(lm=remote), raw,
                                                     History.from_lists(ids, []), with_probs=True)
    rep = cache.last_report
    assert rep.post_ids is not None and rep.chosen_id in rep.post_ids
    agree = engine_agreement(p_final, rep.post_ids, rep.post_probs, len(rep.ids), settings.greedy)
    assert agree["same_set"] and agree["engine_lists_all"], (case, agree, rep.post_ids)
    if settings.greedy:
        assert rep.post_ids == (int(torch.argmax(final)),) and rep.post_probs == (1.0,)
        return
    assert 1 < agree["engine_kept"] < 20, agree  # a real choice, listed whole
    assert agree["max_dp"] < 1e-3, agree
    assert set(rep.post_ids) <= set(rep.ids) or case.startswith("logit bias")


def test_the_repetition_penalty_needs_raw_logits_which_a_server_does_not_report(remote, local):
    """llama.cpp divides a positive raw logit by the penalty and multiplies a negative one: not a
    shift of the log-probabilities, so it cannot be redone from a top-N report. The engine's kept
    set then differs from ours on the report, and equals ours on llama.cpp's own raw logits."""
    settings = SamplingSettings(order="llama.cpp", seed=7, temperature=1.0, top_k=10, repetition_penalty=1.5)
    ids = remote.encode_prompt(PROMPT, chat=False)
    cache = remote.new_cache()
    cache.engine_sampling = sampling_from_settings(settings)
    raw = remote.forward(torch.tensor([ids]), cache)[0]
    rep = cache.last_report
    assert rep.inexact == ("repetition-penalty",) and any("not exact" in note for note in rep.exact)
    chain, history = settings.build_chain(lm=remote), History.from_lists(ids, [])
    on_report = engine_agreement(run_chain(chain, raw, history, with_probs=True)[4], rep.post_ids, rep.post_probs, 20, False)
    true_raw = local.forward(torch.tensor([ids]), local.new_cache())[0]
    on_logits = engine_agreement(run_chain(settings.build_chain(lm=local), true_raw, history, with_probs=True)[4],
                                 rep.post_ids, rep.post_probs, 20, False)
    assert not on_report["same_set"] and on_report["only_engine"]  # this prompt's repeats are the top tokens
    assert on_logits["same_set"] and on_logits["max_dp"] < 1e-3, on_logits


def test_the_explorer_trace_carries_the_engines_kept_set(remote):
    settings = SamplingSettings(order="llama.cpp", temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=1)
    st = Stepper.from_prompt(remote, "Tell me a story about a dog.", chat=True, settings=settings)
    traces = st.steps(6)
    agreements = [t.reported["agreement"] for t in traces]
    # llama-server's default chain with its default settings: our preset keeps the same tokens, and
    # the same probabilities whenever the engine's kept set is listed whole (fewer than 20 tokens)
    assert all(a["same_set"] for a in agreements), agreements
    whole = [a for a in agreements if a["engine_lists_all"]]
    assert whole and all(a["max_dp"] < 1e-3 for a in whole), agreements


# ---------------------------------------------------------------- whole samples by the engine
def test_the_engine_draws_n_samples_itself_reproducibly(remote, monkeypatch):
    from decoding_lab.strategies.engine_samples import _slots, engine_samples
    settings = SamplingSettings(order="llama.cpp", temperature=0.9, top_k=10, seed=5)
    ids = remote.encode_prompt("Tell me a story about a dog.", chat=True)
    client = remote.backend.client
    assert _slots(client) == 4  # the fixture's --parallel 4
    posts = []
    real_post = client.post
    monkeypatch.setattr(client, "post", lambda path, body, **kw: posts.append(body["n_cmpl"]) or real_post(path, body, **kw))
    res = engine_samples(remote, ids, settings, n=6, max_new_tokens=24)
    monkeypatch.undo()
    assert posts == [4, 2] and len(res.sequences) == 6 and res.settings["sampler"].startswith("llama-server")
    assert all(1 <= len(s) <= 24 and len(s.logprobs) == len(s) and all(lp <= 0 for lp in s.logprobs)
               for s in res.sequences)
    # a sample that ended did so on the server's end token, which is the tokenizer's too (<|im_end|>)
    assert all(s.token_ids[-1] in remote.eos_token_ids for s in res.sequences if s.finished)
    assert len({tuple(s.token_ids) for s in res.sequences}) >= 3  # samples, not one text six times
    # each sample's first token is one the engine's chain keeps at the first step, with that probability
    cache = remote.new_cache()
    cache.engine_sampling = sampling_from_settings(settings)
    remote.forward(torch.tensor([ids]), cache)
    kept = dict(zip(cache.last_report.post_ids, cache.last_report.post_probs))
    for s in res.sequences:
        assert s.token_ids[0] in kept and math.exp(s.logprobs[0]) == pytest.approx(kept[s.token_ids[0]], abs=1e-4)
    again = engine_samples(remote, ids, settings, n=6, max_new_tokens=24)
    assert [s.token_ids for s in again.sequences] == [s.token_ids for s in res.sequences]  # one seed, one answer


def test_the_engines_greedy_sample_is_the_in_process_greedy_text(remote, local):
    from decoding_lab.strategies.engine_samples import engine_samples
    from decoding_lab.strategies import greedy
    ids = remote.encode_prompt("What is the capital of France?", chat=True)
    (seq,) = engine_samples(remote, ids, GREEDY, n=1, max_new_tokens=20).sequences
    assert seq.token_ids == greedy(local, ids, max_new_tokens=20).sequences[0].token_ids
    assert len(seq) >= 8 and seq.logprobs == [0.0] * len(seq)  # T 0 keeps one token: p = 1 after the chain


def test_a_sweep_on_a_served_model_uses_the_engines_own_samples(remote):
    from decoding_lab.experiments.grid import SweepConfig
    from decoding_lab.experiments.sweep import run_sweep
    config = SweepConfig(model="remote:llama", task="addition", problems=3, n=4, temperatures=(0.0, 0.8),
                         truncations=("none",), max_new_tokens=24, order="llama.cpp")
    result = run_sweep(config, lm=remote)
    assert result.complete and [len(c.outcomes) for c in result.cells] == [3, 3]
    assert "remote:llama's own" in result.environment["sampler"]
    for cell in result.cells:
        assert all(len(o.correct) == 4 and all(1 <= n <= 24 for n in o.lengths) for o in cell.outcomes)
    greedy_cell = result.cells[0]
    assert all(len(set(o.answers)) == 1 for o in greedy_cell.outcomes)  # one greedy answer, counted n times
