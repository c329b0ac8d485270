"""The exceptions that mean "the user asked for something we cannot do".

Every one of them derives from ``UserError``, so an entry point (CLI, app, API) catches
``UserError`` and shows its message as one clear line; anything else is a bug and keeps
its traceback. This module is a leaf: it imports nothing from the package, so every
layer can raise these. Classes that only one part raises live beside it
(``GrammarError`` in ``grammar``) and subclass ``UserError``; ``ModelError`` is raised by every
backend and lives here.

    >>> issubclass(SettingsError, UserError) and issubclass(SettingsError, ValueError)
    True

**Codes.** A refusal that the app shows in several languages carries a ``code`` and its
``params`` (as Django's ``ValidationError(message, code=, params=)`` does). Its English is
``MESSAGES[code]`` filled with the params, so the CLI and the API read the same line as before;
the UI renders ``err.<code>`` with the same params through its translation function.

    >>> e = SettingsError.coded("out_of_range", name="top-p", op="<=", bound="1", got="1.5")
    >>> str(e), e.code, e.params["bound"]
    ('top-p must be <= 1, got 1.5', 'out_of_range', '1')
"""

from __future__ import annotations


#: The English of every coded message: named placeholders, each filled with text the raiser chose
#: (``got`` is the bad value as the message shows it, quoted or not). ``ui/common/i18n`` holds the
#: same keys as ``err.<code>`` in every language; a test keeps the two in step.
MESSAGES: dict[str, str] = {
    "not_a_number": "{name} must be a number, got {got}",
    "not_finite": "{name} must be finite, got {got}",
    "not_whole": "{name} must be a whole number, got {got}",
    "out_of_range": "{name} must be {op} {bound}, got {got}",
    "not_bool": "{name} must be true or false, got {got}",
    "empty_number": "{name} is empty: give a number",
    "unknown_stage": "unknown stage {name}; known stages: {known}",
    "stage_twice": "stage order names {names} more than once",
    "not_a_choice": "{name} must be one of {choices}; got {got}",
    "empty_prompt": "the prompt is empty: type some text first",
    "two_paths": "choose at least two numerical paths to compare",
    "invalid_regex": "invalid regex{where}: {detail}",
    "json_syntax": "the JSON schema is not valid JSON: {msg} (line {line}, column {column})",
    "json_schema": "invalid JSON schema: {detail}",
    "grammar_at": "invalid {what} at line {line}, column {column}: {detail}",
    "grammar": "invalid {what}: {detail}",
    "matches_nothing": "the {what} matches no text at all",
    "empty_source": "the {what} is empty",
    "no_choices": "choices: the list is empty, so nothing could be written",
    "compiler_busy": "the grammar compiler is busy with {busy} other grammar(s); try again in a moment ({setting})",
    "client_busy": "this address already has {n} model job(s) running or waiting; wait for one to finish ({setting})",
    "job_passes": "this run reached the {n} forward passes one job may make here; what it made so far is kept "
                  "({setting})",
    "job_seconds": "this run used the {s} s of model time one job may use here; what it made so far is kept "
                   "({setting})",
    "request_too_large": "this request is {got} bytes; at most {cap} are accepted here ({setting})",
    "room_code": "that is not a class code: a code is 8 letters and digits, like K7M2-9QXP",
    "no_room": "no open class has the code {room}; check it with your teacher (a class closes after {minutes} min "
               "without activity)",
    "wrong_codes": "too many wrong class codes from this address ({n} a minute); wait a minute ({setting})",
    "rooms_full": "{n} classes are open on this server, the most it holds; try again later ({setting})",
    "room_full": "this class already has {n} students, the most it takes ({setting})",
    "not_teacher": "only the browser that opened this class can change what it shows",
    "not_member": "you are no longer in this class; join again with its code",
    "no_question": "that question is not open now: the teacher has moved on",
    "bad_choice": "the answer must be one of the question's {n} choices, got {got}",
    "bad_number": "the answer must be a number between -{bound} and {bound}, got {got}",
    "bad_confidence": "confidence must be 1, 2 or 3 (or left out), got {got}",
    "answer_limit": "you have changed this answer {n} times in this round, the most allowed ({setting})",
    "max_rounds": "this question has had {n} rounds, the most one question has",
    "too_many_requests": "too many requests from this address ({n} in {window} s); wait a few seconds ({setting})",
}


class UserError(Exception):
    """Base of every error whose message is meant for the person who asked. ``code`` and
    ``params`` are set on a coded one (``coded``), empty otherwise."""

    code: str = ""

    def __init__(self, *args: object, code: str = "", params: dict[str, str] | None = None) -> None:
        super().__init__(*args)
        self.code = code
        self.params = dict(params or {})

    @classmethod
    def coded(cls, code: str, **params: object):  # -> an instance of cls
        """The error ``code`` with its English filled in from ``params`` (all shown as text)."""
        text = {k: str(v) for k, v in params.items()}
        return cls(MESSAGES[code].format(**text), code=code, params=text)


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
