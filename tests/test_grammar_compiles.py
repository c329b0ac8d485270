"""The Grammar tab's compiles, shared between a Run's validator and its handler: one compile per
constraint text; a validator waits a bounded time and lets a long compile through to the handler,
which waits on that same compile."""

from __future__ import annotations

import time

import pytest

from decoding_lab.grammar import GrammarError
from decoding_lab.grammar import compile as gcompile
from decoding_lab.ui.grammar import session as S


@pytest.fixture
def counted(monkeypatch):
    calls: list[tuple] = []
    original = S.make_constraint

    def slow(*args):
        calls.append(args)
        time.sleep(0.6)
        return original(*args)

    monkeypatch.setattr(S, "make_constraint", slow)
    monkeypatch.setattr(S, "_COMPILES", type(S._COMPILES)())
    return calls


def test_a_long_compile_passes_the_check_and_is_compiled_once(counted):
    t0 = time.perf_counter()
    assert S.compiled_constraint("regex", None, "[0-9]{1,4}", wait=0.1) is None   # still compiling: let through
    assert time.perf_counter() - t0 < 0.5
    c = S.compiled_constraint("regex", None, "[0-9]{1,4}")                        # the handler waits for it
    assert c.kind == "regex" and len(counted) == 1
    assert S.compiled_constraint("regex", None, "[0-9]{1,4}", wait=0.1) is c      # done: no new compile
    assert len(counted) == 1 and gcompile.busy() == 0


def test_a_bad_constraint_fails_the_same_way_without_compiling_again(counted):
    for _ in range(2):
        with pytest.raises(GrammarError, match="invalid regex"):
            S.compiled_constraint("regex", None, "([0-9]+", wait=5)
    assert len(counted) == 1
