"""The memory budget of the live sessions' KV caches (``decoding_lab.memory_budget``): past the
ceiling the least recently used idle session is parked, a busy one never is, a parked one rebuilds
its cache at its next step and says so, and its tokens are the ones it would have drawn anyway."""

from __future__ import annotations

import threading

import pytest

from decoding_lab.memory_budget import MemoryBudget, reset_memory_budget
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper

PROMPT = list(range(5, 45))   # 40 prompt tokens of the tiny model


@pytest.fixture
def budget():
    """A budget the test sizes itself; the process's usual one comes back afterwards."""
    yield lambda limit: reset_memory_budget(limit_bytes=limit, from_limits=False)
    reset_memory_budget()


def session(lm, seed: int) -> Stepper:
    return Stepper(lm, PROMPT, SamplingSettings(temperature=1.0, seed=seed))


def test_a_cache_is_counted_by_its_tensors(tiny_lm, budget):
    b = budget(None)
    s = session(tiny_lm, 0)
    assert s.cache_bytes() > 0 and b.total() == s.cache_bytes()
    before = s.cache_bytes()
    s.step()
    assert s.cache_bytes() > before and b.total() == s.cache_bytes()   # one position more
    s.park()
    assert s.cache_bytes() == 0 and b.total() == 0                      # parking is recorded


def test_past_the_ceiling_the_least_recently_used_is_parked(tiny_lm, budget, monkeypatch):
    one = session(tiny_lm, 0).cache_bytes()
    b = budget(int(2.5 * one))
    # The budget is the process's: in a run the shared app may live in this process, and a session
    # of its that steps meanwhile registers here too (and may be parked). Every park is recorded, so
    # the test can say which were its own.
    parks: list = []
    used = b.used

    def recording(holder):
        parked = used(holder)
        parks.extend(parked)
        return parked

    monkeypatch.setattr(b, "used", recording)
    a, c, d = session(tiny_lm, 1), session(tiny_lm, 2), session(tiny_lm, 3)
    assert [a.parked, c.parked, d.parked] == [True, False, False]
    assert [h for h in parks if any(h is own for own in (a, c, d))] == [a] and b.parked_count == len(parks)
    assert b.total() <= b.limit_bytes
    a.step()                                   # a comes back and c (now the oldest) makes room
    assert [a.parked, c.parked, d.parked] == [False, True, False]
    assert a.last_rebuild is not None and a.last_rebuild[0] == len(PROMPT) + 1
    a.step()
    assert a.last_rebuild is None              # said once, at the step that rebuilt it


def test_a_parked_session_draws_the_same_tokens(tiny_lm, budget):
    budget(None)
    free = session(tiny_lm, 7)
    want = [free.step().chosen_token_id for _ in range(6)]
    one = free.cache_bytes()
    budget(int(1.5 * one))
    s = session(tiny_lm, 7)
    got = []
    for _ in range(6):
        got.append(s.step().chosen_token_id)
        session(tiny_lm, 99)                   # another session pushes s out after every step
        assert s.parked
    assert got == want
    s.undo()                                   # rewinding a parked session rebuilds it too
    assert s.last_rebuild is not None and s.tokens == want[:5]


def test_a_session_at_work_is_never_parked(tiny_lm, budget):
    b = budget(None)
    busy = session(tiny_lm, 0)
    other = session(tiny_lm, 1)
    b.limit_bytes = other.cache_bytes()        # room for one of the two
    busy._lock.acquire()                       # as during a step in another thread
    try:
        done = threading.Event()
        threading.Thread(target=lambda: (other.step(), done.set()), daemon=True).start()
        assert done.wait(60)
        assert not busy.parked                 # skipped: its lock was held
    finally:
        busy._lock.release()
    other.step()
    assert busy.parked and not other.parked    # idle now: it makes room


def test_an_expired_session_is_forgotten():
    import gc

    class Holder:
        def cache_bytes(self) -> int:
            return 10

        def park_for_memory(self) -> bool:
            return False

    b = MemoryBudget(None)
    h = Holder()
    b.used(h)
    assert b.total() == 10 and b.holders() == 1
    del h
    gc.collect()
    assert b.total() == 0
