"""The exceptions that mean "the user asked for something we cannot do", gathered in
one place so every entry point (CLI, app, API) can turn them into a clear message."""

from __future__ import annotations

from decoding_lab.chain import DeadEndError
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import SessionError


def _optional() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    try:
        from decoding_lab.models import ModelError
        found.append(ModelError)
    except ImportError:
        pass
    try:
        from decoding_lab.grammar import GrammarError
        found.append(GrammarError)
    except ImportError:
        pass
    return tuple(found)


USER_ERRORS: tuple[type[BaseException], ...] = (SettingsError, SessionError, DeadEndError, *_optional())
