"""The language each open page shows now, for the class's followers.

A follower (``handlers.student_follow``, ``teacher_follow``) is one long event: gradio reads its
inputs once, when it starts. The page's language can change after that: a visitor clicks the
other language, or, as a join link opens, the link's ``lang=`` reaches the page's language state
a moment after the class restore has already started following. So the language switch notes
the page's language here (keyed by its gradio session) and a follower reads it at each poll,
drawing the room again when it changed.

    >>> langs = SessionLanguages(most=2)
    >>> langs.get("a", "en")
    'en'
    >>> langs.set("a", "zh"); langs.set("b", "en"); langs.set("c", "zh")
    >>> langs.get("a", "en"), langs.get("c", "en")   # the oldest page is forgotten past ``most``
    ('en', 'zh')
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class SessionLanguages:
    """session hash -> the language its page shows; at most ``most`` pages are kept (the least
    recently switched is dropped first), so a flood of sessions holds a bounded dictionary."""

    def __init__(self, most: int = 4096) -> None:
        self.most = most
        self._langs: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def set(self, session: str | None, lang: str) -> None:
        if not session:
            return
        with self._lock:
            self._langs[session] = lang
            self._langs.move_to_end(session)
            while len(self._langs) > self.most:
                self._langs.popitem(last=False)

    def get(self, session: str | None, default: str) -> str:
        """The page's language now, or ``default`` (what the follower was started with)."""
        if not session:
            return default
        with self._lock:
            return self._langs.get(session, default)
