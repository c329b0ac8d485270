"""Stop buttons for long runs that stream (the tilt demo, Grammar's constrained-vs-free).

Stop asks the running job to end after its current step, so the run still reports what it
has and its job slot is freed cleanly. A running event cannot see a newer ``gr.State`` value,
so the request goes through ``StopRequests``: one per built page, a set of opaque run ids (one
random id per click of Run, kept in the tab's state), never anything about the visitor.

    >>> stops = StopRequests()
    >>> run = stops.start()
    >>> stops.request(run); stops.asked(run)
    True
    >>> stops.ask(run)          # True: that run was running (a late click asks nothing)
    True
    >>> stops.end(run); stops.asked(run)
    False
"""

from __future__ import annotations

import threading
import uuid


class StopRequests:
    """Run ids that are running, and those asked to stop. Both sets hold only running runs."""

    def __init__(self) -> None:
        self._running: set[str] = set()
        self._stop: set[str] = set()
        self._lock = threading.Lock()

    def start(self) -> str:
        run_id = uuid.uuid4().hex
        with self._lock:
            self._running.add(run_id)
        return run_id

    def request(self, run_id: str | None) -> None:
        """Ask ``run_id`` to stop (a Stop button's event: it returns nothing to show)."""
        self.ask(run_id)

    def ask(self, run_id: str | None) -> bool:
        """``request``, saying whether ``run_id`` was running (a late click asks nothing)."""
        with self._lock:
            if run_id in self._running:
                self._stop.add(run_id)
                return True
            return False

    def asked(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._stop

    def end(self, run_id: str) -> None:
        with self._lock:
            self._running.discard(run_id)
            self._stop.discard(run_id)
