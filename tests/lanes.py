"""A pytest plugin (``-p lanes`` in pytest.ini) that puts every test in one lane, named for what
it needs. ``make test-fast``, ``make test-model`` and ``make test-app`` run one lane each
(``pytest -m fast`` …); ``make test`` runs all three.

The lane is read from what a test asks for, so a new test lands in the right one without a marker:

* ``app``: starts or drives the app, through the app fixtures (``app_url``, ``client``,
  ``browser``, ``page``, ``blank_page``, a module's own ``app``), ``@pytest.mark.browser`` or ``@pytest.mark.app``;
* ``model``: the bundled real models or a live engine, through ``@pytest.mark.real``, the model
  fixtures (``smollm``, ``gemma``), or a doctest whose example uses ``lm`` (the default model,
  see doctest_env.py);
* ``fast``: everything else (hand-built tensors, the tiny random model, files, parsers).

>>> sorted(_names("greedy(lm, ids).text"))
['greedy', 'ids', 'lm', 'text']
"""

from __future__ import annotations

import collections
import doctest
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

LANES = ("fast", "model", "app")
APP_FIXTURES = frozenset({"app_url", "client", "browser", "page", "blank_page", "app"})
MODEL_FIXTURES = frozenset({"smollm", "gemma", "vllm_servers"})
#: Session fixtures so costly that every file using one goes to one xdist process (which starts it once).
SHARED_GROUPS = {"vllm_servers": "vllm"}
#: The longest files of a run (a minute or more each, longest first, measured in a full ``make test``),
#: handed out before every other file when the run has several processes: a long file taken last
#: leaves one process running alone at the end (the Dockerfile's install, 71 s, once ran alone for
#: its last 41 s). Only an ordering hint: a file missing here still runs, after these.
LONG_FILES = ("test_vllm.py", "test_vllm_app.py", "test_browser_lessons.py", "test_lessons_claims.py",
              "test_explorer_teach_browser.py", "test_multisample_browser.py", "test_classroom_browser.py",
              "test_share_links_browser.py", "test_chinese_browser.py", "test_app_browser.py",
              "test_llamacpp_parity.py", "test_deploy.py", "test_strategies_real.py")


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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its lane (``-m fast`` selects on it), and order a whole run lane by
    lane, fast first, so a broken unit shows in the first minute (the sort is stable: each lane
    keeps the order pytest collected it in). Run in several processes (``pytest-xdist``), the app
    lane goes first instead, after ``LONG_FILES`` (whatever their lane, longest first): ``FileGroups``
    hands files out in this order, so the longest start first."""
    lanes = {item.nodeid: lane_of(item) for item in items}
    # xdist's worker processes see dist "no" and keep the mode as ``loadgroup``
    distributed = bool(getattr(config.option, "loadgroup", False)) or (
        bool(getattr(config.option, "numprocesses", 0)) and getattr(config.option, "dist", "no") != "no")
    for item in items:
        item.add_marker(getattr(pytest.mark, lanes[item.nodeid]))
    order = ("app", "model", "fast") if distributed else LANES
    items.sort(key=lambda item: (distributed and _long_rank(item.nodeid), order.index(lanes[item.nodeid])))


def _long_rank(nodeid: str) -> int:
    """A file's place in ``LONG_FILES`` (every other file after them).

    >>> _long_rank("tests/test_vllm.py::t"), _long_rank("tests/test_stats.py::t") == len(LONG_FILES)
    (0, True)
    """
    name = _file_name(nodeid)
    return LONG_FILES.index(name) if name in LONG_FILES else len(LONG_FILES)


def _file_name(nodeid: str) -> str:
    """
    >>> _file_name("tests/test_deploy.py::test_x[a]")
    'test_deploy.py'
    """
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` (``make test``'s processes) hands out whole test files: a file's module
    fixtures (a live server, a module's own app or tab) start once, in the process that takes it.
    The files that use one of ``SHARED_GROUPS``' session fixtures (the vLLM servers) go to one
    process together, so those servers start once. (xdist's own loadgroup reads a group from a
    suffix it writes into each node id, which pytest 9 no longer lets it write: every test would
    be handed out on its own.) Each process then starts the shared app and Chromium at most once."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # xdist re-sorts the files by their number of tests unless told not to: the order above (the
    # longest files first) is the one that keeps both processes busy to the end
    config.option.loadscopereorder = False

    shared = _files_using(SHARED_GROUPS, config.rootpath / "tests", config.rootpath)

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return shared.get(path, path)

    return FileGroups(config, log)


def _files_using(fixtures: dict[str, str], folder: Path, root: Path) -> dict[str, str]:
    """test file (relative to ``root``) -> group, for the files whose text names one of ``fixtures``.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> _ = (d / "test_a.py").write_text("def test(vllm_servers): ...")
    >>> _ = (d / "test_b.py").write_text("def test(smollm): ...")
    >>> _files_using({"vllm_servers": "vllm"}, d, d)
    {'test_a.py': 'vllm'}
    """
    out: dict[str, str] = {}
    for path in sorted(folder.glob("test_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        group = next((g for fixture, g in fixtures.items() if fixture in text), None)
        if group:
            out[path.relative_to(root).as_posix()] = group
    return out


#: a file every process of one run appends to when it starts an app or a Chromium (``note_start``)
STARTS_ENV = "DECODING_LAB_TEST_STARTS"


def pytest_configure(config: pytest.Config) -> None:
    """The run's controller (not an xdist worker) names the starts file; workers inherit it."""
    if hasattr(config, "workerinput") or os.environ.get(STARTS_ENV):
        return
    fd, path = tempfile.mkstemp(prefix="decoding-lab-starts-")
    os.close(fd)
    os.environ[STARTS_ENV] = path
    config.stash[_STARTS] = path


def note_start(kind: str) -> None:
    """Record that this process started ``kind`` ("app", "Chromium"); the summary counts them."""
    path = os.environ.get(STARTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{kind}\n")


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """One line at the end of a run: how many apps and browsers all its processes started."""
    path = config.stash.get(_STARTS, None)
    if not path:
        return
    with open(path, encoding="utf-8") as f:
        counts = collections.Counter(line.strip() for line in f if line.strip())
    os.unlink(path)
    os.environ.pop(STARTS_ENV, None)
    terminalreporter.write_line("started in this run: " + (", ".join(f"{kind} {n}" for kind, n in sorted(
        counts.items())) or "no app and no browser"))


_STARTS = pytest.StashKey[str]()


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

