"""Shared fixtures. Real-model fixtures load each bundled model once per test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")       # tests never reach the Hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tiny_model import make_tiny_lm  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """Two shared cores: one torch thread is several times faster than two fighting each other
    (and than two fighting the app server or the browser in the same test)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_lm():
    return make_tiny_lm()


@pytest.fixture(scope="session")
def smollm():
    from decoding_lab.models import get_model
    return get_model("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def gemma():
    from decoding_lab.models import get_model
    return get_model("gemma-3-270m")
