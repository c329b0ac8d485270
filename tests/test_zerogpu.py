"""The ZeroGPU rules, with a stand-in for the ``spaces`` package (ZeroGPU cannot run here):
a model job parks the sessions it touched before it hands anything back, a streaming one before
each item; start-up loads every served model and then no other loads; bfloat16 is GPU-only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from decoding_lab import models
from decoding_lab.backends import registry
from decoding_lab.errors import ModelError
from decoding_lab.models import resolve_dtype
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper
from decoding_lab.ui.common import runtime


class FakeSpaces:
    """``spaces.GPU`` as a decorator that records what it wrapped."""

    def __init__(self) -> None:
        self.wrapped: list = []

    def GPU(self, fn):  # noqa: N802 - the package's name
        self.wrapped.append(fn)
        return fn


@pytest.fixture
def zerogpu(monkeypatch):
    fake = FakeSpaces()
    monkeypatch.setattr(runtime, "spaces", fake)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    return fake


def session(tiny_lm):
    return SimpleNamespace(stepper=Stepper(tiny_lm, list(range(3, 10)), SamplingSettings(temperature=0.0)))


def test_a_model_job_parks_the_sessions_it_touched(zerogpu, tiny_lm):
    a, b = session(tiny_lm), session(tiny_lm)

    def on_step(v):
        v["session"].stepper.step()
        return {"out": b}

    job = runtime.gpu(on_step)
    assert zerogpu.wrapped and runtime.on_zerogpu()
    job({"session": a})
    assert a.stepper.parked and b.stepper.parked
    assert a.stepper._next_logits.device.type == "cpu"
    job({"session": a})                         # the next call rebuilds the cache and steps on
    assert len(a.stepper.tokens) == 2 and a.stepper.parked


def test_a_streaming_job_parks_before_each_item(zerogpu, tiny_lm):
    s = session(tiny_lm)

    def play(v):
        for _ in range(3):
            v["session"].stepper.step()
            yield {"session": v["session"]}

    seen = []
    for item in runtime.gpu(play)({"session": s}):
        seen.append(item["session"].stepper.parked)
    assert seen == [True, True, True] and len(s.stepper.tokens) == 3


def test_nothing_is_parked_off_zerogpu(monkeypatch, tiny_lm):
    monkeypatch.setattr(runtime, "spaces", None)
    s = session(tiny_lm)
    fn = lambda v: v["session"].stepper.step()  # noqa: E731
    assert runtime.gpu(fn) is fn
    fn({"session": s})
    assert not s.stepper.parked


def test_start_up_loads_what_is_served_then_refuses_the_rest(zerogpu, monkeypatch):
    loaded: list[str] = []
    monkeypatch.setattr(registry, "_FROZEN", [])
    monkeypatch.setattr(models, "get_model", lambda name: loaded.append(name))  # no real loads here
    monkeypatch.setenv("DECODING_LAB_ENDPOINTS", "")
    monkeypatch.setenv("DECODING_LAB_DEVICE", "cpu")   # preload_models only sets it where it is unset
    assert runtime.preload_models() == list(models.BUNDLED) == loaded
    monkeypatch.undo()   # the real get_model again, still frozen until the fixture's undo below
    models.freeze_loading("on this ZeroGPU Space the models are loaded when it starts")
    try:
        with pytest.raises(ModelError, match="cannot be loaded now: on this ZeroGPU Space"):
            models.get_model("owner/never-loaded")
    finally:
        registry._FROZEN.clear()


def test_bfloat16_is_offered_on_a_gpu_only(monkeypatch):
    import torch
    assert resolve_dtype(torch.device("cpu")) == torch.float32
    assert resolve_dtype(torch.device("cuda"), "bfloat16") == torch.bfloat16
    monkeypatch.setenv("DECODING_LAB_DTYPE", "bfloat16")
    with pytest.raises(ModelError, match="CUDA GPU only"):
        resolve_dtype(torch.device("cpu"))
    with pytest.raises(ModelError, match="unknown DECODING_LAB_DTYPE"):
        resolve_dtype(torch.device("cpu"), "float8")
