"""Fair shares of the model slots: no one client can keep the others waiting.

A public Space has a few *model slots* (``DECODING_LAB_CONCURRENCY``): at most that many model
jobs compute at once. A plain semaphore hands them out first come, first served and lets a job
keep its slot to the end, so one visitor with two long jobs (a 256-step Play in two tabs, two
beam searches over a long prompt) makes every other visitor's one-token Step wait minutes. This
module schedules the slots the way an operating system shares a CPU among processes:

* **A job gives its slot back between forward passes.** Every forward pass goes through
  ``checkpoint()`` (``LoadedModel.forward`` calls it). When another job is waiting there, the
  running job releases its slot and queues again behind it; nothing else changes for it (its KV
  cache and its place in the text stay where they were). A streamed job (Play, Step ×N) also
  holds a slot only while it computes an item, not while the page draws it. A short Step
  arriving during a long job therefore waits for one forward pass, not for the whole job.
* **Slots go to the client served longest ago.** A *client* is who sent the request: its
  network address (behind a proxy, the address the proxy saw; see ``client_key``), never
  gradio's session id, which the caller picks itself. When a slot frees, the waiting job whose
  client was granted a slot least recently goes first (ties: first come); a client seen for
  the first time goes before every client that was served already. Two jobs of one client take
  turns with each other, not with everybody.
* **Per-client caps.** A client holds at most ``client_slots`` slots at once, even when others
  are idle (a public Space sets it to half the slots, so a single client can never take them
  all), and has at most ``client_jobs`` jobs running or waiting; one more is refused at once,
  with one line (``ClientBusy``), and takes nothing from the others.
* **Budgets.** A job may use ``job_seconds`` seconds of slot time and ``job_passes`` forward
  passes (on a public Space); past either it stops with one line (``JobBudgetSpent``) and keeps
  what it made so far (a stepper's tokens stay in its session).

The grant order, on a scheduler of one slot with no caps:

    >>> share = FairShare(Quota(slots=1))
    >>> with share.job("a") as a, share.hold(a):
    ...     share.running(), share.waiting()
    (1, 0)
    >>> share.running()
    0

``checkpoint()`` outside a held slot does nothing (the CLI, the tests' own model calls):

    >>> checkpoint()
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

from decoding_lab.errors import UserError

__all__ = ["Quota", "Job", "FairShare", "ClientBusy", "JobBudgetSpent", "checkpoint", "current_job",
           "working_for", "client_key", "LOCAL"]

#: The client of work that came with no request (the CLI, tests, a warm-up).
LOCAL = "local"
#: How many clients' last grant times are remembered (each a few bytes); past it the idle half is forgotten.
MEMORY_OF_CLIENTS = 4096


class ClientBusy(UserError):
    """This client already has as many jobs running or waiting as it may."""


class JobBudgetSpent(UserError):
    """A job used all the slot time or forward passes one job may use."""


@dataclass(frozen=True)
class Quota:
    """How the slots are shared. ``client_slots`` None: a client may hold all of them;
    ``client_jobs`` None: no cap on a client's jobs; ``job_seconds`` / ``job_passes`` None: no budget."""

    slots: int
    client_slots: int | None = None
    client_jobs: int | None = None
    job_seconds: float | None = None
    job_passes: int | None = None

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"model slots: need at least 1, got {self.slots}")


@dataclass(eq=False)
class Job:
    """One model job of one client: what it has used, and whether it holds a slot now."""

    client: str
    passes: int = 0
    slot_seconds: float = 0.0
    holding: bool = False
    held_since: float = 0.0
    #: The scheduler that granted the slot this job holds (``checkpoint`` releases it there).
    share: "FairShare | None" = field(default=None, repr=False)


@dataclass(eq=False)
class _Ticket:
    job: Job
    seq: int
    granted: bool = False


class FairShare:
    """The slots and the jobs waiting for them (see the module docstring)."""

    def __init__(self, quota: Quota) -> None:
        self.quota = quota
        self._cond = threading.Condition()
        self._free = quota.slots
        self._waiting: list[_Ticket] = []
        self._held: dict[str, int] = {}        # client -> slots held now
        self._jobs: dict[str, int] = {}        # client -> jobs registered (running or waiting)
        self._last_grant: dict[str, int] = {}  # client -> the grant counter when last served
        self._grants = itertools.count(1)
        self._seq = itertools.count()

    # ------------------------------------------------------------------ jobs
    @contextlib.contextmanager
    def job(self, client: str) -> Iterator[Job]:
        """Register a job of ``client`` for the block; ``ClientBusy`` when it has too many."""
        cap = self.quota.client_jobs
        with self._cond:
            if cap is not None and self._jobs.get(client, 0) >= cap:
                raise ClientBusy.coded("client_busy", n=cap, setting="DECODING_LAB_CLIENT_JOBS")
            self._jobs[client] = self._jobs.get(client, 0) + 1
        job = Job(client)
        try:
            yield job
        finally:
            with self._cond:
                left = self._jobs.pop(client) - 1
                if left:
                    self._jobs[client] = left
                if len(self._last_grant) > MEMORY_OF_CLIENTS:
                    self._forget_idle_clients()

    def _forget_idle_clients(self) -> None:  # with the lock held
        """Keep the newest half of the grant times of clients with nothing running or waiting
        (a client that comes back after that is served as a newcomer)."""
        idle = sorted((g, c) for c, g in self._last_grant.items() if c not in self._jobs and c not in self._held)
        for _, client in idle[: len(idle) // 2 + 1]:
            del self._last_grant[client]

    # ------------------------------------------------------------------ slots
    @contextlib.contextmanager
    def hold(self, job: Job) -> Iterator[None]:
        """Wait for a slot for ``job`` and keep it for the block (``checkpoint`` may lend it to
        a waiting job in between; it comes back before ``checkpoint`` returns)."""
        if job.holding:  # a nested request for the slot this job holds: it has one already
            yield
            return
        self._acquire(job)
        try:
            yield
        finally:
            if job.holding and job.share is self:
                self._release(job)

    def _acquire(self, job: Job) -> None:
        with self._cond:
            ticket = _Ticket(job, next(self._seq))
            self._waiting.append(ticket)
            self._dispatch()
            while not ticket.granted:
                self._cond.wait()
        job.holding, job.held_since, job.share = True, time.monotonic(), self

    def _release(self, job: Job) -> None:
        job.slot_seconds += time.monotonic() - job.held_since
        job.holding = False
        with self._cond:
            self._free += 1
            held = self._held.pop(job.client) - 1
            if held:
                self._held[job.client] = held
            self._dispatch()

    def _eligible(self, ticket: _Ticket) -> bool:
        cap = self.quota.client_slots
        return cap is None or self._held.get(ticket.job.client, 0) < cap

    def _best(self) -> _Ticket | None:
        """The waiting job to serve next: eligible, its client served longest ago, then first come."""
        ready = [t for t in self._waiting if self._eligible(t)]
        if not ready:
            return None
        return min(ready, key=lambda t: (self._last_grant.get(t.job.client, 0), t.seq))

    def _dispatch(self) -> None:  # with the lock held
        while self._free > 0:
            ticket = self._best()
            if ticket is None:
                break
            self._waiting.remove(ticket)
            self._free -= 1
            client = ticket.job.client
            self._held[client] = self._held.get(client, 0) + 1
            self._last_grant[client] = next(self._grants)
            ticket.granted = True
        self._cond.notify_all()

    def someone_waits_for(self, job: Job) -> bool:
        """Whether a waiting job would get ``job``'s slot if ``job`` gave it back now."""
        with self._cond:
            if not self._waiting:
                return False
            cap = self.quota.client_slots
            for t in self._waiting:
                held = self._held.get(t.job.client, 0) - (1 if t.job.client == job.client else 0)
                if cap is None or held < cap:
                    return True
            return False

    def lend(self, job: Job) -> None:
        """Give ``job``'s slot to the job that should go first, and wait for a slot again."""
        self._release(job)
        self._acquire(job)

    # ------------------------------------------------------------------ for tests and logs
    def running(self) -> int:
        with self._cond:
            return self.quota.slots - self._free

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def jobs_of(self, client: str) -> int:
        with self._cond:
            return self._jobs.get(client, 0)


# ---------------------------------------------------------------------------- this thread's job
_local = threading.local()


def current_job() -> Job | None:
    """The job whose work this thread is doing, if a handler said so (``working_for``)."""
    return getattr(_local, "job", None)


@contextlib.contextmanager
def working_for(job: Job | None) -> Iterator[None]:
    """Mark this thread as doing ``job``'s work for the block (a streamed job's items may be
    computed on different threads: each ``next`` is marked again)."""
    before = current_job()
    _local.job = job
    try:
        yield
    finally:
        _local.job = before


def checkpoint() -> None:
    """Between two forward passes: charge the job this thread works for, stop it if it spent
    its budget, and lend its slot to a waiting job that should go first. Nothing happens when
    the thread holds no slot."""
    job = current_job()
    if job is None or not job.holding or job.share is None:
        return
    share, quota = job.share, job.share.quota
    job.passes += 1
    used = job.slot_seconds + (time.monotonic() - job.held_since)
    if quota.job_passes is not None and job.passes > quota.job_passes:
        raise JobBudgetSpent.coded("job_passes", n=quota.job_passes, setting="DECODING_LAB_JOB_PASSES")
    if quota.job_seconds is not None and used > quota.job_seconds:
        raise JobBudgetSpent.coded("job_seconds", s=f"{quota.job_seconds:g}", setting="DECODING_LAB_JOB_SECONDS")
    if share.someone_waits_for(job):
        share.lend(job)


# ---------------------------------------------------------------------------- who is the client
def client_key(host: str | None, forwarded_for: str | None, proxy_hops: int) -> str:
    """Who sent a request, as the scheduler counts clients.

    With no proxy in front (``proxy_hops`` 0), the peer's address: a client can send any
    ``X-Forwarded-For`` it likes, so the header is ignored. Behind ``proxy_hops`` proxies that
    each append the address they saw (a Space's own front end is one), the entry that many
    places from the right end is the one the outermost trusted proxy saw; whatever the client
    wrote further left is ignored.

    >>> client_key("10.0.0.5", "6.6.6.6", 0)
    '10.0.0.5'
    >>> client_key("10.0.0.5", "6.6.6.6, 203.0.113.7", 1)
    '203.0.113.7'
    >>> client_key("10.0.0.5", None, 1)   # no header where one was expected: the peer
    '10.0.0.5'
    """
    if proxy_hops > 0 and forwarded_for:
        hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
        if hops:
            return hops[-min(proxy_hops, len(hops))][:64]
    return (host or LOCAL)[:64]
