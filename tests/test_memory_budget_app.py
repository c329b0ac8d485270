"""The memory budget seen from the page: a tab whose cache was set aside for other visitors is
rebuilt by its next Step, gives the same token, and its status line says what happened."""

from __future__ import annotations

import pytest
from gradio_client import Client

from conftest_app import explorer_args
from decoding_lab.memory_budget import memory_budget

STEP_OUT = ["dist", "funnel", "entropy", "numbers", "gen", "table", "candidates", "branches", "status", "share"]

pytestmark = pytest.mark.real


def step(client: Client, **kw) -> dict:
    return dict(zip(STEP_OUT, client.predict(**explorer_args(**kw), api_name="/explorer_step")))


def test_a_parked_tab_says_its_cache_was_rebuilt(app_url):
    budget = memory_budget()
    kept = budget.limit_bytes
    a, b = Client(app_url, verbose=False), Client(app_url, verbose=False)
    try:
        budget.limit_bytes = 1     # room for no cache: each Step parks every other idle session
        first = step(a)
        assert "set aside" not in first["status"]
        step(b, prompt="Name a colour.")                 # b's cache pushes a's out
        again = step(a)
        assert "its model cache was set aside" in again["status"] and "rebuilt it (" in again["status"]
        assert len(again["table"]["data"]) == 2          # the run went on from where it was
        assert "set aside" not in step(a)["status"]      # said once, at the Step that rebuilt it
    finally:
        budget.limit_bytes = kept
        a.close()
        b.close()
