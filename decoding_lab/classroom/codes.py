"""Join codes a student can type on a phone, and a cap on wrong guesses per client.

A code is 8 characters of Crockford's base-32 alphabet (digits and capitals without I, L, O, U, so
nothing reads as something else): 32**8 = 2**40 codes, about 1.1 trillion. With ``max_rooms`` rooms
open, one guess finds a room with probability max_rooms / 2**40 (2e-11 for 20 rooms); at the
default of 20 wrong codes a minute per client that is about 5,000 years of guessing, on average,
for one client to land in some room. The teacher's power (push, reveal, close) needs a separate
secret of 192 bits that never leaves the teacher's session.

    >>> parse_code(" k7m2-9qxp ")
    'K7M29QXP'
    >>> parse_code("K7M2 9QXO")      # a letter O typed for a zero reads as the zero
    'K7M29QX0'
    >>> parse_code("K7M2-9QX") is None, parse_code("K7M2-9QX!") is None
    (True, True)
    >>> format_code("K7M29QXP")
    'K7M2-9QXP'
"""

from __future__ import annotations

import collections
import secrets
import threading
import time

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"   # Crockford's base 32
CODE_LENGTH = 8
CODE_BITS = 5 * CODE_LENGTH                    # 40
#: Letters people type for a digit that the alphabet leaves out (Crockford's reading).
SAME_AS = str.maketrans({"O": "0", "I": "1", "L": "1"})


def new_code() -> str:
    """A fresh random code (``secrets``: the operating system's random source)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    """The teacher's secret: 192 random bits, never shown, never in a link."""
    return secrets.token_urlsafe(24)


def parse_code(text: object) -> str | None:
    """The code in what someone typed (any case, spaces and dashes ignored), or None if it is
    not one: wrong length or a character outside the alphabet."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    code = "".join(ch for ch in text.upper() if ch not in " -_\t").translate(SAME_AS)
    if len(code) != CODE_LENGTH or any(ch not in ALPHABET for ch in code):
        return None
    return code


def format_code(code: str) -> str:
    """The code as it is shown: two groups of four."""
    return f"{code[:4]}-{code[4:]}"


class WrongCodes:
    """At most ``limit`` wrong codes per client in any ``window_s`` seconds (a sliding window).

    >>> w = WrongCodes(limit=2, window_s=60.0)
    >>> w.count("a", 0.0); w.count("a", 1.0)
    >>> w.allow("a", 2.0), w.allow("b", 2.0), w.allow("a", 60.5)
    (False, True, True)
    """

    def __init__(self, limit: int, window_s: float = 60.0) -> None:
        self.limit, self.window_s = limit, window_s
        self._seen: dict[str, collections.deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, client: str, now: float | None = None) -> bool:
        """False when ``client`` has reached its wrong codes in the window (nothing is counted then)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            q = self._seen.setdefault(client, collections.deque())
            while q and q[0] <= now - self.window_s:
                q.popleft()
            if len(q) >= self.limit:
                return False
            return True

    def count(self, client: str, now: float | None = None) -> None:
        """Count one wrong code for ``client``; forget clients with nothing left in the window."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._seen.setdefault(client, collections.deque()).append(now)
            if len(self._seen) > 10_000:   # many clients: drop those whose window has passed
                self._seen = {c: q for c, q in self._seen.items() if q and q[-1] > now - self.window_s}
