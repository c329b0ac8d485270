"""The exceptions that mean "the user asked for something we cannot do".

Every one of them derives from ``UserError``, so an entry point (CLI, app, API) catches
``UserError`` and shows its message as one clear line; anything else is a bug and keeps
its traceback. This module is a leaf: it imports nothing from the package, so every
layer can raise these. Classes that only one part raises live beside it
(``GrammarError`` in ``grammar``) and subclass ``UserError``; ``ModelError`` is raised by every
backend and lives here.

    >>> issubclass(SettingsError, UserError) and issubclass(SettingsError, ValueError)
    True
"""

from __future__ import annotations


class UserError(Exception):
    """Base of every error whose message is meant for the person who asked."""


class SettingsError(UserError, ValueError):
    """A parameter is out of range. The message names the bad value and is meant for users."""


class DeadEndError(UserError, RuntimeError):
    """Every token was cut (e.g. a grammar with no allowed continuation). Reported, never sampled through."""


class SessionError(UserError, RuntimeError):
    """A request this session cannot honour right now (finished, over the limit, bad step index)."""


class ModelError(UserError):
    """A model cannot be had: unknown id, Hub unreachable, out of memory, bad files, a backend or
    server that is missing or misbehaves. One line, meant for the person who asked. It lives here,
    at the bottom of the layers, so that every backend can raise it without importing ``models``."""


#: Kept for callers that catch a tuple: every user-facing error is a ``UserError``.
USER_ERRORS: tuple[type[BaseException], ...] = (UserError,)
