"""The Grammar tab's compiles, shared between a Run's validator and its handler: one compile per
constraint text; a validator waits a bounded time and lets a long compile through to the handler,
which waits on that same compile."""

from __future__ import annotations

import threading

import pytest

from decoding_lab.grammar import GrammarError
from decoding_lab.grammar import compile as gcompile
from decoding_lab.ui.grammar import session as S


@pytest.fixture
def counted(monkeypatch):
    """Every compile is counted, and each one waits for ``release`` (set by default; a test
    clears it to hold a compile open as long as it likes, with no clock involved)."""
    calls: list[tuple] = []
    original = S.make_constraint
    release = threading.Event()
    release.set()

    def held(*args):
        calls.append(args)
        assert release.wait(60), "the test never let the compile finish"
        return original(*args)

    monkeypatch.setattr(S, "make_constraint", held)
    monkeypatch.setattr(S, "_COMPILES", type(S._COMPILES)())
    return calls, release


def test_a_long_compile_passes_the_check_and_is_compiled_once(counted):
    calls, release = counted
    release.clear()                                                               # the compile cannot end yet
    assert S.compiled_constraint("regex", None, "[0-9]{1,4}", wait=0.1) is None   # still compiling: let through
    assert len(calls) == 1 and gcompile.busy() == 1
    release.set()
    c = S.compiled_constraint("regex", None, "[0-9]{1,4}")                        # the handler waits for it
    assert c.kind == "regex" and len(calls) == 1
    assert S.compiled_constraint("regex", None, "[0-9]{1,4}", wait=0.1) is c      # done: no new compile
    assert len(calls) == 1 and gcompile.busy() == 0


def test_a_bad_constraint_fails_the_same_way_without_compiling_again(counted):
    for _ in range(2):
        with pytest.raises(GrammarError, match="invalid regex"):
            S.compiled_constraint("regex", None, "([0-9]+", wait=5)
    assert len(counted[0]) == 1
