"""The ``llama.cpp`` presets against llama.cpp itself.

llama.cpp's own sampler chain (``decoding_lab.llamacpp.sampler``: the C samplers through
llama-cpp-python) and our chain with the ``llama.cpp`` order get the same logits and the
same history; they must keep the same tokens, with probabilities within 1e-5.

* hand-built edge cases (ties at top-k, exact top-p / typical-p / min-p boundaries);
* real logits from the bundled SmolLM2 after a chat prompt and a greedy continuation of
  90 tokens, so the 64-token penalty window holds prompt tokens early on and only output
  tokens later, for a grid of temperatures x every truncation, all three penalties, DRY,
  XTC (probability 1, where the coin does not matter), top-n-sigma, dynamic temperature and
  logit bias, under both presets (``llama.cpp`` feeds the prompt into the history, as
  llama-server does; ``llama-cpp-python`` does not, as its ``Llama.generate`` does not).

At temperature 0 llama.cpp keeps only the best token; ours leaves the chain as it is and
the selector takes the argmax, so there the two argmaxes are compared.
"""

from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest
import torch

from decoding_lab.chain import run_chain
from decoding_lab.llamacpp import require
from decoding_lab.llamacpp.sampler import LlamaCppChain
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History

TOL = 1e-5


def ours(s: SamplingSettings, logits: np.ndarray, prompt: list[int], output: list[int], lm=None) -> dict[int, float]:
    final, _, _ = run_chain(s.build_chain(lm=lm), torch.tensor(logits, dtype=torch.float32),
                            History.from_lists(prompt, output))
    p = torch.softmax(final.double(), dim=-1)
    kept = torch.isfinite(final).nonzero().flatten().tolist()
    probs = p.tolist()    # the same floats as float(p[i]), without indexing the tensor once per token
    return {i: probs[i] for i in kept}


def theirs(s: SamplingSettings, logits: np.ndarray, prompt: list[int], output: list[int], vocab=None) -> dict[int, float]:
    chain = LlamaCppChain(s, logits.shape[-1], vocab=vocab)
    try:
        chain.accept((prompt if s.rules.repetition_prompt else []) + output)
        return chain.apply(logits).as_dict()
    finally:
        chain.close()


def compare(s, logits, prompt, output, lm=None, vocab=None, ties: bool = False) -> float:
    """Assert the two chains agree; return the largest probability difference. With ``ties``
    (tokens of exactly equal logit straddle a boundary), which of the tied ids survive is
    std::sort's unspecified order inside llama.cpp: then the count and the sorted
    probabilities must agree, not the ids."""
    a, b = ours(s, logits, prompt, output, lm), theirs(s, logits, prompt, output, vocab)
    if ties:
        assert len(a) == len(b), (s, a, b)
        return float(np.abs(np.sort(list(a.values())) - np.sort(list(b.values()))).max())
    if s.temperature == 0.0:
        assert max(a, key=a.get) == max(b, key=b.get), s
        return 0.0
    assert set(a) == set(b), (f"kept sets differ for {s}: only ours {sorted(set(a) - set(b))[:10]}, "
                              f"only llama.cpp {sorted(set(b) - set(a))[:10]}")
    return max(abs(a[i] - b[i]) for i in a)


# ----------------------------------------------------------------------------- hand-built edge cases
def _z(p: list[float]) -> np.ndarray:
    return np.log(np.array(p, dtype=np.float64)).astype(np.float32)


EDGES = [
    # top-k with ties straddling k: llama.cpp keeps exactly k (the lower ids), transformers would keep 4
    (dict(top_k=2), np.array([3.0, 2.0, 2.0, 2.0, 1.0], dtype=np.float32)),
    (dict(top_k=3), np.array([1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32)),
    (dict(top_k=1), np.array([0.5, 2.0, 2.0], dtype=np.float32)),
    # top-p where the running mass hits p exactly (0.5 + 0.25 = 0.75 in float32)
    (dict(top_p=0.75), _z([0.5, 0.25, 0.125, 0.125])),
    (dict(top_p=0.5), _z([0.25, 0.25, 0.25, 0.25]), "ties"),
    # typical-p exactly at the boundary, and with equal surprises
    (dict(typical_p=0.5), _z([0.4, 0.3, 0.2, 0.1])),
    (dict(typical_p=0.5), _z([0.25, 0.25, 0.25, 0.25]), "ties"),
    (dict(typical_p=0.9), _z([0.7, 0.1, 0.1, 0.05, 0.05])),
    # min-p at the threshold (0.5 * 0.5 = 0.25 exactly)
    (dict(min_p=0.5), _z([0.5, 0.25, 0.125, 0.125])),
    # several at once
    (dict(top_k=3, top_p=0.6, min_p=0.1, temperature=1.5), _z([0.3, 0.3, 0.2, 0.1, 0.05, 0.05])),
    (dict(top_n_sigma=1.0), np.array([3.0, 2.0, 1.0, 0.0], dtype=np.float32)),
    (dict(xtc_probability=1.0, xtc_threshold=0.1), _z([0.4, 0.3, 0.2, 0.06, 0.04])),
    (dict(dynatemp_range=0.5, temperature=1.0), _z([0.4, 0.3, 0.2, 0.06, 0.04])),
    (dict(logit_bias=((2, 5.0), (0, -100.0))), _z([0.4, 0.3, 0.2, 0.06, 0.04])),
]


@pytest.mark.parametrize("case", EDGES, ids=[repr(c[0]) + (" ties" if len(c) > 2 else "") for c in EDGES])
def test_edge_cases_match_llamacpp(case):
    kw, logits = case[0], case[1]
    s = SamplingSettings(order="llama.cpp", **{"temperature": 1.0, **kw})
    assert compare(s, logits, [], [], ties=len(case) > 2) <= TOL


def test_penalties_count_the_prompt_inside_a_64_token_window():
    """Hand-built history: token 1 only in the prompt, 70 tokens before the end; token 2 in the
    prompt, near the end; token 3 in the output. llama-server's rule penalises 2 and 3, not 1;
    llama-cpp-python's penalises only 3."""
    logits = np.array([1.0, 2.0, 2.0, 2.0, 0.5], dtype=np.float32)
    prompt, output = [1] + [0] * 70 + [2], [3, 3]
    for preset in ("llama.cpp", "llama-cpp-python"):
        s = SamplingSettings(temperature=1.0, repetition_penalty=1.5, frequency_penalty=0.3, presence_penalty=0.2,
                             order=preset)
        assert compare(s, logits, prompt, output) <= TOL
    a = ours(SamplingSettings(temperature=1.0, presence_penalty=1.0, order="llama.cpp"), logits, prompt, output)
    b = ours(SamplingSettings(temperature=1.0, presence_penalty=1.0, order="llama-cpp-python"), logits, prompt, output)
    assert a[1] > a[2] and a[2] < b[2]    # outside the window vs inside; prompt counted vs not


# ----------------------------------------------------------------------------- real logits
@pytest.fixture(scope="module")
def contexts(smollm):
    """(prompt ids, output ids, next-token logits) at several points of a greedy answer."""
    lm = smollm
    text = lm.tokenizer.apply_chat_template([{"role": "user", "content": "Write a short poem about the sea, "
                                              "and repeat its last line twice."}],
                                            add_generation_prompt=True, tokenize=False)
    prompt = lm.tokenizer(text, add_special_tokens=False).input_ids
    with torch.no_grad():
        ids = lm.model.generate(torch.tensor([prompt]), max_new_tokens=90, do_sample=False, min_new_tokens=90,
                                pad_token_id=lm.eos_token_ids[0])[0].tolist()
        all_logits = lm.model(torch.tensor([ids])).logits[0].float().numpy()
    out = []
    for n_out in (0, 6, 40, 89):
        pos = len(prompt) + n_out
        out.append((prompt, ids[len(prompt):pos], all_logits[pos - 1]))
    return out


@pytest.fixture(scope="module")
def vocab(smollm):
    """llama.cpp's vocabulary of the bundled GGUF (vocab only: no weights, no kernels), for DRY."""
    from decoding_lab.models import BUNDLED
    lib = require()
    folder, name = BUNDLED["smollm2-135m-instruct"].locate_gguf()
    params = lib.llama_model_default_params()
    params.vocab_only = True
    model = lib.llama_model_load_from_file(f"{folder}/{name}".encode(), params)
    assert model, "llama.cpp could not load the bundled GGUF's vocabulary"
    yield lib.llama_model_get_vocab(model)
    lib.llama_model_free(model)


TRUNCATION = [dict(temperature=t, top_k=k, top_p=p, min_p=m, typical_p=y)
              for t, k, p, m, y in itertools.product((0.0, 0.5, 1.0, 1.7), (0, 1, 5, 40), (1.0, 0.9, 0.5),
                                                     (0.0, 0.05, 0.2), (1.0, 0.95, 0.5))]
PENALTIES = [dict(temperature=1.0, repetition_penalty=r, frequency_penalty=f, presence_penalty=pr, repetition_window=w,
                  top_k=k)
             for r, f, pr, w, k in itertools.product((1.0, 1.3, 0.8), (0.0, 0.5), (0.0, 0.7), (-1, 16, 200), (0, 40))]
NEW = ([dict(temperature=1.0, top_n_sigma=n) for n in (0.5, 1.0, 2.0)]
       + [dict(temperature=t, xtc_probability=1.0, xtc_threshold=x, min_p=m) for t in (0.7, 1.0) for x in (0.05, 0.1, 0.3)
          for m in (0.0, 0.05)]
       + [dict(temperature=t, dynatemp_range=d, dynatemp_exponent=e) for t in (0.8, 1.2) for d in (0.3, 0.8)
          for e in (1.0, 2.0)]
       + [dict(temperature=1.0, logit_bias=((11, 3.0), (28, -100.0)), top_k=20)])
DRY_GRID = [dict(temperature=1.0, dry_multiplier=m, dry_base=b, dry_allowed_length=a, dry_penalty_last_n=n)
            for m in (0.8, 2.0) for b in (1.75, 1.2) for a in (2, 3) for n in (-1, 32)]


def _run_grid(grid, contexts, presets, lm=None, vocab=None) -> tuple[int, float]:
    cases, worst = 0, 0.0
    for kw in grid:
        for preset in presets:
            s = SamplingSettings(order=preset, **kw)
            for prompt, output, logits in contexts:
                worst = max(worst, compare(s, logits, prompt, output, lm=lm, vocab=vocab))
                cases += 1
    return cases, worst


@pytest.mark.real
def test_truncation_grid_matches_llamacpp(contexts):
    cases, worst = _run_grid(TRUNCATION, contexts, ("llama.cpp",))
    assert cases == len(TRUNCATION) * len(contexts) and worst <= TOL, worst


@pytest.mark.real
def test_penalty_grid_matches_llamacpp(contexts):
    cases, worst = _run_grid(PENALTIES, contexts, ("llama.cpp", "llama-cpp-python"))
    assert cases == 2 * len(PENALTIES) * len(contexts) and worst <= TOL, worst


@pytest.mark.real
def test_new_samplers_match_llamacpp(contexts):
    cases, worst = _run_grid(NEW, contexts, ("llama.cpp",))
    assert cases == len(NEW) * len(contexts) and worst <= TOL, worst


@pytest.mark.real
def test_dry_matches_llamacpp(contexts, smollm, vocab):
    cases, worst = _run_grid(DRY_GRID, contexts, ("llama.cpp",), lm=smollm, vocab=vocab)
    assert cases == len(DRY_GRID) * len(contexts) and worst <= TOL, worst
