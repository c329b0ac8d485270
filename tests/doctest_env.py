"""A pytest plugin (``-p doctest_env`` in pytest.ini) for the worked examples in the core's
docstrings, which ``make test`` runs with ``--doctest-modules``.

Examples in ``strategies`` use ``lm``, a loaded model: here it is the bundled default model,
loaded on first use (so modules whose examples never touch it cost nothing), with one
torch thread as in the rest of the suite."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class _LazyModel:
    """Stands in for a ``LoadedModel`` and loads the real one at the first attribute read."""

    def __init__(self) -> None:
        self._lm: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):   # pytest probes plugin objects (``_mock_name``, ...): no load for that
            raise AttributeError(name)
        if self._lm is None:
            import torch

            from decoding_lab.models import DEFAULT_MODEL, get_model
            torch.set_num_threads(1)
            self._lm = get_model(DEFAULT_MODEL)
        return getattr(self._lm, name)


_LM = _LazyModel()


@pytest.fixture(scope="session", autouse=True)
def _doctest_names(doctest_namespace: dict) -> None:
    doctest_namespace["lm"] = _LM
