"""A short load test (the full one: ``python scripts/load_test.py``): four tabs step, undo and
generate (Compare) at once against ``app.py`` in a child process. Nothing fails, no tab sees another
tab's step (each tab's tokens are recomputed with the core from its own prompt and seed), and
the server's memory stays bounded."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "load_test.py"
SESSIONS, SECONDS = 4, 6   # four tabs already contend for the two model slots


def load_script():
    spec = importlib.util.spec_from_file_location("load_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_four_tabs_at_once():
    from lanes import note_start
    note_start("app.py (child process)")
    report = load_script().run(sessions=SESSIONS, seconds=SECONDS)
    (rnd,) = report["rounds"]
    print(report)  # pytest -s shows the numbers
    assert report["errors"] == []
    assert report["mismatched_sessions"] == 0
    assert rnd["steps"] >= SESSIONS and rnd["compares"] >= SESSIONS // 2  # every tab stepped, half generated
    # Four tabs with a few dozen tokens each hold a few MB of KV cache and traces; gradio adds
    # about 1 MB per tab. 250 MB leaves room for the allocator, not for a leak per step.
    assert rnd["rss_mb_after"] - report["rss_mb_before"] < 250
