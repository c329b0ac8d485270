"""The temperature-0 paths stop where the text ends: at an end-of-sequence token, which is
kept as the path's last token, on every path (cached, full recompute, batched)."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from decoding_lab.backends.base import Caps, SilentEngine
from decoding_lab.determinism import greedy_variants

VOCAB, EOS = 8, 5


class NextToken(torch.nn.Module):
    """A stand-in model: the next token is always (last token + 1), with a logit margin of 1."""

    device = torch.device("cpu")

    def new_cache(self) -> object:
        return SimpleNamespace()

    def forward(self, input_ids, **kw):
        last = input_ids[:, -1]
        logits = torch.zeros(input_ids.shape[0], 1, VOCAB)
        logits[torch.arange(input_ids.shape[0]), 0, (last + 1) % VOCAB] = 1.0
        return SimpleNamespace(logits=logits)


class NextTokenBackend(SilentEngine):
    """``NextToken`` behind the backend protocol (its cache keeps nothing: each forward reads the last id)."""

    caps = Caps(transformers=True)
    device = torch.device("cpu")

    def __init__(self) -> None:
        self.module = NextToken()

    def new_cache(self) -> object:
        return SimpleNamespace()

    def forward(self, input_ids, cache, attention_mask=None):
        return self.module(input_ids).logits[:, -1]

    def forward_uncached(self, input_ids):
        return self.module(input_ids).logits[:, -1]


def test_every_path_stops_at_its_end_of_sequence_token():
    backend = NextTokenBackend()
    lm = SimpleNamespace(model=backend.module, backend=backend, caps=backend.caps, vocab_size=VOCAB,
                         eos_token_ids=[EOS], name="next-token", token_str=str,
                         decode=lambda ids: " ".join(map(str, ids)))
    out = greedy_variants(lm, [1], 40, ("float32, cached", "float32, full recompute", "batched with a longer prompt"))
    assert [r["tokens"] for r in out["runs"]] == [[2, 3, 4, 5]] * 3      # 40 asked, the text ended at 5
    assert all(r["margins"] == [1.0] * 4 for r in out["runs"])
    assert all(d["step"] is None for d in out["divergence"])


def test_a_model_that_is_not_a_torch_module_is_refused_in_one_line():
    """llama.cpp's kernels or a served model: the paths re-run a transformers model's weights
    (full recompute, a bfloat16 copy, a batch), so the run is refused before any path starts."""
    import pytest

    from decoding_lab.backends.llamacpp import LlamaCppBackend
    from decoding_lab.errors import SettingsError
    lm = SimpleNamespace(caps=LlamaCppBackend.caps, vocab_size=VOCAB, eos_token_ids=[EOS],
                         name="smollm2-135m-instruct@llama.cpp", source="llama.cpp", token_str=str, decode=str)
    with pytest.raises(SettingsError, match="runs on llama.cpp: choose a transformers model"):
        greedy_variants(lm, [1], 4, ("float32, cached", "float32, full recompute"))


class ServedNextToken(NextTokenBackend):
    """``NextToken`` as a served model: other clients' requests (``continue_greedily``) are counted,
    and each forward notes how many were in flight."""

    caps = Caps(batch=False, engine_picks=True, shared=True)

    def __init__(self) -> None:
        super().__init__()
        import threading
        self.lock, self.in_flight, self.seen, self.asked = threading.Lock(), 0, [], 0

    def continue_greedily(self, ids, tokens):
        import time
        with self.lock:
            self.in_flight += 1
            self.asked += 1
        time.sleep(0.02)   # a request takes a while on the server
        with self.lock:
            self.in_flight -= 1

    def forward(self, input_ids, cache, attention_mask=None):
        self.seen.append(self.in_flight)
        return super().forward(input_ids, cache, attention_mask)


def served_lm(backend):
    return SimpleNamespace(backend=backend, caps=backend.caps, vocab_size=VOCAB, eos_token_ids=[EOS], name="remote:s",
                           source="remote", token_str=str, decode=lambda ids: " ".join(map(str, ids)),
                           has_chat_template=False, encode_prompt=lambda text, chat: [1, 2, 3])


def test_the_served_paths_ask_alone_and_beside_other_requests():
    from decoding_lab.determinism import OTHER_REQUESTS, SERVED_VARIANTS
    backend = ServedNextToken()
    out = greedy_variants(served_lm(backend), [1], 40)     # a served model's default: its three paths
    assert [r["name"] for r in out["runs"]] == list(SERVED_VARIANTS)
    assert all(r["tokens"] == [2, 3, 4, 5] for r in out["runs"])
    assert [d["step"] for d in out["divergence"]] == [None, None] and [d["logit_gap"] for d in out["divergence"]] == [0.0, 0.0]
    beside = out["runs"][2]
    assert "others_in_flight" not in out["runs"][0] and beside["others_in_flight"] >= 1
    assert backend.asked >= len(OTHER_REQUESTS) and backend.in_flight == 0   # every other request ended with the path
    assert backend.seen[:8] == [0] * 8                                       # the two paths alone: nothing else


def test_a_run_takes_the_paths_of_the_models_kind():
    import pytest

    from decoding_lab.errors import SettingsError
    with pytest.raises(SettingsError, match="choose the paths on the server"):
        greedy_variants(served_lm(ServedNextToken()), [1], 4, ("float32, cached", "on the server, alone"))
    local = NextTokenBackend()
    lm = SimpleNamespace(model=local.module, backend=local, caps=local.caps, vocab_size=VOCAB, eos_token_ids=[EOS],
                         name="next-token", source="bundled", token_str=str, decode=str)
    with pytest.raises(SettingsError, match="ask a served model"):
        greedy_variants(lm, [1], 4, ("float32, cached", "on the server, alone"))


def test_the_tab_runs_the_paths_of_the_models_kind():
    """The checkboxes start on the local paths: a served model runs its own instead (all three when
    fewer than two are chosen), and a local path chosen beside served ones is left out, with a note."""
    from decoding_lab.determinism import SERVED_VARIANTS
    from decoding_lab.ui.determinism.handlers import GreedyRequest, paths_for

    def req(*variants, lang="en"):
        return GreedyRequest(lang=lang, model="remote:s", chat="chat", prompt="p", tokens=5, variants=variants)

    served = served_lm(ServedNextToken())
    assert paths_for(served, req("float32, cached", "bfloat16, cached")) == (
        SERVED_VARIANTS, "remote:s is a served model: every path on the server was run.")
    paths, note = paths_for(served, req("float32, cached", *SERVED_VARIANTS[:2], lang="zh"))
    assert paths == SERVED_VARIANTS[:2] and "float32，使用 KV 缓存" in note and "已略去" in note
    assert paths_for(served, req(*SERVED_VARIANTS[1:])) == (SERVED_VARIANTS[1:], "")
    local = SimpleNamespace(caps=Caps(transformers=True), name="m", source="bundled")
    assert paths_for(local, req("float32, cached", "on the server, alone")) == (("float32, cached", "on the server, alone"), "")
