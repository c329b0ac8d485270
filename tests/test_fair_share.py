"""The fair share of model slots (``decoding_lab.fair_share``): who goes first, lending a slot
between forward passes, the per-client caps and the budgets. Threads meet on events and on the
scheduler's own counters; nothing here measures time."""

from __future__ import annotations

import threading
import time
from typing import Callable

import pytest

from decoding_lab import fair_share
from decoding_lab.fair_share import ClientBusy, FairShare, JobBudgetSpent, Quota, checkpoint, working_for


def wait_until(cond: Callable[[], bool], what: str, limit: float = 20.0) -> None:
    """Wait for another thread to reach a state (a synchronisation, not a timing check)."""
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.005)


def start(fn: Callable[[], None]) -> threading.Thread:
    th = threading.Thread(target=fn, daemon=True)
    th.start()
    return th


def queue_job(share: FairShare, client: str, order: list[str], name: str,
              release: threading.Event | None = None) -> threading.Thread:
    """A thread that waits for a slot as ``client``'s job, notes ``name`` when it gets one, and
    gives it back at once (or when ``release`` is set)."""
    def body() -> None:
        with share.job(client) as job, share.hold(job):
            order.append(name)
            if release is not None:
                release.wait(20)
    return start(body)


def test_a_freed_slot_goes_to_the_client_served_longest_ago_not_to_the_first_in_line():
    share = FairShare(Quota(slots=1))
    order: list[str] = []
    with share.job("attacker") as first, share.hold(first):   # the attacker is running
        t1 = queue_job(share, "attacker", order, "attacker's second job")   # in line first
        wait_until(lambda: share.waiting() == 1, "the attacker's second job waits")
        t2 = queue_job(share, "victim", order, "victim's step")
        wait_until(lambda: share.waiting() == 2, "the victim waits too")
    t1.join(20), t2.join(20)
    assert order == ["victim's step", "attacker's second job"]


def test_two_jobs_of_one_client_come_first_come_first_served():
    share = FairShare(Quota(slots=1))
    order: list[str] = []
    with share.job("a") as first, share.hold(first):
        t1 = queue_job(share, "b", order, "b1")
        wait_until(lambda: share.waiting() == 1, "b1 waits")
        t2 = queue_job(share, "b", order, "b2")
        wait_until(lambda: share.waiting() == 2, "b2 waits")
    t1.join(20), t2.join(20)
    assert order == ["b1", "b2"]


def test_a_running_job_lends_its_slot_at_the_next_forward_pass_and_gets_it_back():
    share = FairShare(Quota(slots=1))
    order: list[str] = []
    with share.job("player") as job, working_for(job), share.hold(job):
        checkpoint()                       # nobody waits: nothing happens
        assert share.running() == 1 and job.holding and job.passes == 1
        t = queue_job(share, "victim", order, "victim's step")
        wait_until(lambda: share.waiting() == 1, "the victim waits")
        checkpoint()                       # the next pass: the victim goes first, then we go on
        order.append("player's next pass")
        assert job.holding and job.passes == 2
    t.join(20)
    assert order == ["victim's step", "player's next pass"]


def test_a_job_does_not_lend_its_slot_to_a_client_at_its_cap():
    share = FairShare(Quota(slots=2, client_slots=1))
    release = threading.Event()
    order: list[str] = []
    with share.job("a") as job, working_for(job), share.hold(job):
        other = queue_job(share, "b", order, "b holds the other slot", release)
        wait_until(lambda: order == ["b holds the other slot"], "b gets the free slot")
        queue_job(share, "b", order, "b's second job")
        wait_until(lambda: share.waiting() == 1, "b's second job waits (b is at its cap)")
        assert not share.someone_waits_for(job)
        checkpoint()                                    # so 'a' keeps its slot
        assert job.holding and order == ["b holds the other slot"]
    release.set()
    other.join(20)
    wait_until(lambda: order[-1] == "b's second job", "b's second job runs once b's first is done")


def test_one_client_never_holds_more_than_its_slots_even_with_a_slot_idle():
    share = FairShare(Quota(slots=2, client_slots=1))
    release = threading.Event()
    order: list[str] = []
    a1 = queue_job(share, "a", order, "a1", release)
    wait_until(lambda: order == ["a1"], "a1 runs")
    queue_job(share, "a", order, "a2")
    wait_until(lambda: share.waiting() == 1, "a2 waits although a slot is free")
    assert share.running() == 1
    queue_job(share, "b", order, "b1")
    wait_until(lambda: "b1" in order, "another client takes the idle slot at once")
    assert "a2" not in order
    release.set()
    a1.join(20)
    wait_until(lambda: "a2" in order, "a2 runs when a1 is done")


def test_a_client_over_its_job_cap_is_refused_at_once_and_admitted_again_later():
    share = FairShare(Quota(slots=1, client_jobs=2))
    with share.job("a"), share.job("a"):
        with pytest.raises(ClientBusy, match="already has 2 model job") as refused:
            with share.job("a"):
                pass
        assert refused.value.code == "client_busy"
        with share.job("b"):                # another client is not affected
            assert share.jobs_of("b") == 1
    with share.job("a"):                    # the first two ended: room again
        assert share.jobs_of("a") == 1


def test_a_job_past_its_forward_passes_stops_with_one_line():
    share = FairShare(Quota(slots=1, job_passes=3))
    with share.job("a") as job, working_for(job), share.hold(job):
        for _ in range(3):
            checkpoint()
        with pytest.raises(JobBudgetSpent, match="3 forward passes") as spent:
            checkpoint()
    assert spent.value.code == "job_passes" and share.running() == 0


def test_a_job_past_its_model_time_stops_with_one_line(monkeypatch):
    share = FairShare(Quota(slots=1, job_seconds=5))
    now = [1000.0]
    monkeypatch.setattr(fair_share.time, "monotonic", lambda: now[0])
    with share.job("a") as job, working_for(job), share.hold(job):
        now[0] += 4.0
        checkpoint()
        now[0] += 2.0
        with pytest.raises(JobBudgetSpent, match="5 s of model time"):
            checkpoint()


def test_slot_time_counts_only_while_a_slot_is_held(monkeypatch):
    """A streamed job's pauses (the page drawing an item) and its waits are not charged."""
    share = FairShare(Quota(slots=1, job_seconds=5))
    now = [0.0]
    monkeypatch.setattr(fair_share.time, "monotonic", lambda: now[0])
    with share.job("a") as job, working_for(job):
        for _ in range(4):
            with share.hold(job):
                now[0] += 1.0
                checkpoint()
            now[0] += 100.0   # between items: no slot held
    assert job.slot_seconds == pytest.approx(4.0)


def test_a_nested_hold_keeps_the_slot_it_has():
    share = FairShare(Quota(slots=1))
    with share.job("a") as job, share.hold(job):
        with share.hold(job):    # a handler that calls another that takes a slot: no deadlock
            assert share.running() == 1
        assert job.holding
    assert share.running() == 0


def test_checkpoint_outside_a_job_or_a_slot_does_nothing():
    checkpoint()
    share = FairShare(Quota(slots=1, job_passes=1))
    with share.job("a") as job, working_for(job):
        for _ in range(5):
            checkpoint()    # not holding: not charged
    assert job.passes == 0


def test_the_grant_memory_stays_bounded(monkeypatch):
    monkeypatch.setattr(fair_share, "MEMORY_OF_CLIENTS", 10)
    share = FairShare(Quota(slots=1))
    for i in range(50):
        with share.job(f"c{i}") as job, share.hold(job):
            pass
    assert len(share._last_grant) <= 11


@pytest.mark.parametrize("host, forwarded, hops, expected", [
    ("10.0.0.1", "1.2.3.4", 0, "10.0.0.1"),                 # no proxy trusted: the header is the client's own
    ("10.0.0.1", "9.9.9.9, 1.2.3.4", 1, "1.2.3.4"),         # the one the proxy appended
    ("10.0.0.1", "9.9.9.9, 1.2.3.4, 5.6.7.8", 2, "1.2.3.4"),
    ("10.0.0.1", "", 1, "10.0.0.1"),
    (None, None, 0, fair_share.LOCAL),
])
def test_the_client_is_the_peer_or_what_a_trusted_proxy_saw(host, forwarded, hops, expected):
    assert fair_share.client_key(host, forwarded, hops) == expected
