"""The exceptions that mean "the user asked for something we cannot do".

Every one of them derives from ``UserError``, so an entry point (CLI, app, API) catches
``UserError`` and shows its message as one clear line; anything else is a bug and keeps
its traceback. This module is a leaf: it imports nothing from the package, so every
layer can raise these. The specific classes live beside the code that raises them
(``ModelError`` in ``models``, ``GrammarError`` in ``grammar``) and subclass ``UserError``.

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


#: Kept for callers that catch a tuple: every user-facing error is a ``UserError``.
USER_ERRORS: tuple[type[BaseException], ...] = (UserError,)
