"""A pytest plugin (``-p lanes`` in pytest.ini) that puts every test in one lane, named for what
it needs. ``make test-fast``, ``make test-model`` and ``make test-app`` run one lane each
(``pytest -m fast`` …); ``make test`` runs all three.

The lane is read from what a test asks for, so a new test lands in the right one without a marker:

* ``app``: starts or drives the app, through the app fixtures (``app_url``, ``client``,
  ``browser``, ``page``, a module's own ``app``), ``@pytest.mark.browser`` or ``@pytest.mark.app``;
* ``model``: the bundled real models or a live engine, through ``@pytest.mark.real``, the model
  fixtures (``smollm``, ``gemma``), or a doctest whose example uses ``lm`` (the default model,
  see doctest_env.py);
* ``fast``: everything else (hand-built tensors, the tiny random model, files, parsers).

>>> sorted(_names("greedy(lm, ids).text"))
['greedy', 'ids', 'lm', 'text']
"""

from __future__ import annotations

import doctest
import re

import pytest

LANES = ("fast", "model", "app")
APP_FIXTURES = frozenset({"app_url", "client", "browser", "page", "app"})
MODEL_FIXTURES = frozenset({"smollm", "gemma", "vllm_servers"})
#: Session fixtures so costly that every test using one shares one xdist group (one process starts it).
SHARED_GROUPS = {"vllm_servers": "vllm"}


def lane_of(item: pytest.Item) -> str:
    names = set(getattr(item, "fixturenames", ()))
    if item.get_closest_marker("browser") or item.get_closest_marker("app") or names & APP_FIXTURES:
        return "app"
    if item.get_closest_marker("real") or names & MODEL_FIXTURES or _doctest_uses_model(item):
        return "model"
    return "fast"


def _doctest_uses_model(item: pytest.Item) -> bool:
    test = getattr(item, "dtest", None)
    if test is None:
        return False
    return any(not ex.options.get(doctest.SKIP) and "lm" in _names(ex.source) for ex in test.examples)


def _names(source: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", source))


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its lane (``-m fast`` selects on it), and order a whole run lane by
    lane, fast first, so a broken unit shows in the first minute (the sort is stable: each lane
    keeps the order pytest collected it in).

    Run by pytest-xdist with ``--dist loadgroup`` (``make test``'s two processes), each test file
    is one group, so its module fixtures (a live server, a module's own app or tab) start once,
    in the process that takes it; the app lane's files go out first, as they are the longest. The
    tests that use one of ``SHARED_GROUPS``' session fixtures (the vLLM servers) are one group
    whatever their file, so the servers start once.
    Each process then starts the shared app and Chromium at most once (session fixtures)."""
    lanes = {item.nodeid: lane_of(item) for item in items}
    # pytest-xdist collects in its worker processes, where it sets ``dist`` to "no" and keeps the
    # distribution mode as ``loadgroup``: read that, or no test would ever get its group there.
    distributed = bool(getattr(config.option, "loadgroup", False)) or (
        bool(getattr(config.option, "numprocesses", 0)) and getattr(config.option, "dist", "no") != "no")
    for item in items:
        item.add_marker(getattr(pytest.mark, lanes[item.nodeid]))
        if distributed:
            names = set(getattr(item, "fixturenames", ()))
            shared = next((group for fixture, group in SHARED_GROUPS.items() if fixture in names), None)
            item.add_marker(pytest.mark.xdist_group(shared or item.nodeid.split("::")[0]))
    order = ("app", "model", "fast") if distributed else LANES
    items.sort(key=lambda item: order.index(lanes[item.nodeid]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Keep the fast lane fast: a test there that loads a real model fails and says where it belongs."""
    before = set(_loaded_models()) if lane_of(item) == "fast" else None
    result = yield
    if before is not None:
        new = sorted(set(_loaded_models()) - before)
        if new:
            pytest.fail(f"{item.nodeid} loads {', '.join(new)}: a real model belongs in the model lane "
                        "(mark it @pytest.mark.real, or use the tiny_lm fixture)", pytrace=False)
    return result


def _loaded_models() -> list[str]:
    """The real models this process has loaded so far (none before ``decoding_lab.models`` is imported)."""
    import sys
    registry = sys.modules.get("decoding_lab.backends.registry")
    if registry is None:
        return []
    from decoding_lab.backends.loaded import LoadedModel
    # a test that swaps the loader for a stand-in loads nothing real
    return [lm.name for lm in registry.loaded_models() if isinstance(lm, LoadedModel)]
