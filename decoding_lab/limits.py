"""How much work one request may ask for, and which models may load: read from the environment.

A public Space has many visitors on a few CPU cores. Every entry point that does model work
(the stepper, the three strategies, the temperature-0 paths, sweeps) checks its arguments
against these limits and raises a ``SettingsError`` that names the value, the limit and the
variable that sets it. The app reads the serving limits (queue, session time-to-live) once
when it starts.

| variable | default | what it bounds |
|---|---|---|
| ``DECODING_LAB_MAX_PROMPT_TOKENS`` | 2048 | prompt length in tokens (and 16 characters a token before tokenising) |
| ``DECODING_LAB_MAX_NEW_TOKENS`` | 1024 | new tokens in one run or one stepper session |
| ``DECODING_LAB_MAX_BEAMS`` | 16 | ``num_beams`` of beam search |
| ``DECODING_LAB_MAX_SAMPLES`` | 64 | ``n`` samples drawn in one batch |
| ``DECODING_LAB_MAX_SWEEP_SAMPLES`` | 20000 | generations in one sweep (cells x problems x n) |
| ``DECODING_LAB_CONCURRENCY`` | 2 | model jobs running at once in the app (all visitors): the model slots |
| ``DECODING_LAB_QUEUE_SIZE`` | 64 | jobs waiting in the app's queue; more are refused |
| ``DECODING_LAB_SESSION_JOBS`` | 1 | model jobs one browser tab may run at once |
| ``DECODING_LAB_SESSION_TTL`` | 1800 | seconds a tab's work (a stepper and its KV cache, a run) outlives |
|                              |      | its last change |
| ``DECODING_LAB_MAX_SESSIONS`` | 200 | tabs gradio keeps any state for (a few MB each, even idle: |
|                               |     | the last value of every component); the least recently used go first |
| ``DECODING_LAB_MAX_GRAMMAR_CHARS`` | 20000 | characters of a regex, schema, grammar or list of choices |
| ``DECODING_LAB_MAX_CHOICES`` | 1000 | strings in a list of choices |
| ``DECODING_LAB_MAX_GRAMMAR_DEPTH`` | 32 | nesting depth of a JSON schema (objects and lists inside each other) |
| ``DECODING_LAB_GRAMMAR_SECONDS`` | 10 | seconds one grammar may take to compile (in its own small worker pool) |
| ``DECODING_LAB_GRAMMAR_WORKERS`` | 2 | grammars compiling at once (all visitors), holding no model slot; one more is |
|                                  |   | refused as busy |
| ``DECODING_LAB_MAX_FILE_BYTES`` | 1000000 | size of a file the CLI reads (schema, grammar, sweep report) |
| ``DECODING_LAB_CLIENT_SLOTS`` | 0 = all; public: half | model slots one client (network address) may hold at once |
| ``DECODING_LAB_CLIENT_JOBS`` | 0 = no cap; public: 3 | model jobs one client may have running or waiting; one more |
|                              |                       | is refused at once |
| ``DECODING_LAB_JOB_SECONDS`` | 0 = no cap; public: 120 | seconds of model-slot time one job may use |
| ``DECODING_LAB_JOB_PASSES`` | 0 = no cap; public: 2048 | forward passes one job may make |
| ``DECODING_LAB_MODEL_THREADS`` | 16 | model jobs admitted at once (on a slot, or waiting for one in the |
|                                |    | fair scheduler, ``fair_share``); more wait in gradio's queue |
| ``DECODING_LAB_CLIENT_REQUESTS`` | 0 = no cap; public: 120 | event requests one client may start in 10 s; more get |
|                                  |                         | HTTP 429 (the other visitors keep their places) |
| ``DECODING_LAB_REQUEST_BYTES`` | 1000000 | size of one request body the app accepts (HTTP 413 past it) |
| ``DECODING_LAB_PROXY_HOPS`` | 0; on a Space: 1 | proxies in front of the app whose ``X-Forwarded-For`` is trusted |
|                             |                  | to name the client |
| ``DECODING_LAB_MEMORY_MB`` | 4096; public: 2048 | memory the live sessions' KV caches may hold together (0 = no cap); |
|                            |                    | past it the least recently used idle session is parked |
| ``DECODING_LAB_MAX_ROOMS`` | 20 | classes open at once in this process (``decoding_lab.classroom``) |
| ``DECODING_LAB_ROOM_STUDENTS`` | 100 | students one class takes |
| ``DECODING_LAB_ROOM_IDLE`` | 3600 | seconds a class lives without a join, an answer or a teacher's click; |
|                            |      | then it and every answer in it are forgotten |
| ``DECODING_LAB_ROOM_WRONG_CODES`` | 20 | wrong class codes one client (network address) may type in a |
|                                   |    | minute; more are refused (a code has 40 random bits) |
| ``DECODING_LAB_ROOM_ANSWERS`` | 10 | times a student may give (or change) an answer to one question in one round |
| ``DECODING_LAB_ROOM_FOLLOWERS`` | 200 | live class views open at once (a student's panel or a projector): each |
|                                 |     | holds one of gradio's workers, and the app adds this many to its 40 |
| ``DECODING_LAB_PUBLIC`` | off | public deployment: Hub ids only from the allow-list, no model-written code |
| ``DECODING_LAB_ALLOWED_MODELS`` | empty | comma-separated Hub ids allowed in public mode (``*``: any) |

Memory grows with rows x tokens: n samples (or beams) each keep a KV cache as long as the
prompt plus the new tokens. The defaults keep the app's own controls far below the product
of the maxima (its widest run is 16 grammar samples of at most 256 tokens).

    >>> lim = Limits.from_env({"DECODING_LAB_MAX_BEAMS": "4"})
    >>> lim.max_beams, lim.max_new_tokens
    (4, 1024)
    >>> check_beams(8, lim)
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: num_beams must be between 1 and 4 (DECODING_LAB_MAX_BEAMS), got 8
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping

from decoding_lab.errors import SettingsError

PREFIX = "DECODING_LAB_"
PUBLIC_ENV = "DECODING_LAB_PUBLIC"
ALLOWED_ENV = "DECODING_LAB_ALLOWED_MODELS"
CHARS_PER_TOKEN = 16  # a cheap length check before tokenising: no real token is longer on average


class LimitsError(SettingsError):
    """An environment variable holds a value that is not a valid limit (the message names it)."""


@dataclass(frozen=True)
class Limits:
    """One frozen set of limits; ``Limits.from_env()`` reads the variables in the table above."""

    max_prompt_tokens: int = 2048
    max_new_tokens: int = 1024
    max_beams: int = 16
    max_samples: int = 64
    max_sweep_samples: int = 20_000
    concurrency: int = 2
    queue_size: int = 64
    session_jobs: int = 1
    session_ttl: float = 1800.0
    max_sessions: int = 200
    max_grammar_chars: int = 20_000
    max_choices: int = 1000
    max_grammar_depth: int = 32
    grammar_seconds: float = 10.0
    grammar_workers: int = 2
    max_file_bytes: int = 1_000_000
    public: bool = False
    allowed_models: tuple[str, ...] = ()
    # -- fair shares (``fair_share``); None: the mode's default, filled in by ``__post_init__``
    client_slots: int | None = None
    client_jobs: int | None = None
    job_seconds: float | None = None
    job_passes: int | None = None
    model_threads: int = 16
    client_requests: int | None = None
    request_bytes: int = 1_000_000
    proxy_hops: int | None = None
    memory_mb: int | None = None
    # -- classes (``decoding_lab.classroom``)
    max_rooms: int = 20
    room_students: int = 100
    room_idle: float = 3600.0
    room_wrong_codes: int = 20
    room_answers: int = 10
    room_followers: int = 200

    def __post_init__(self) -> None:
        """Fill the limits whose default depends on the mode: a public Space shares its slots
        and memory among strangers; a machine of one's own (a classroom server, a laptop) does
        not cap its one user."""
        public = self.public
        defaults: dict[str, Any] = {
            "client_slots": max(1, self.concurrency // 2) if public else self.concurrency,
            "client_jobs": 3 if public else 0,
            "job_seconds": 120.0 if public else 0.0,
            "job_passes": 2048 if public else 0,
            "client_requests": 120 if public else 0,
            "proxy_hops": 1 if os.environ.get("SPACE_ID") else 0,
            "memory_mb": 2048 if public else 4096,
        }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)

    def quota(self) -> Any:
        """The model slots' sharing rules (``fair_share.Quota``); 0 reads as "no limit"."""
        from decoding_lab.fair_share import Quota
        return Quota(slots=self.concurrency, client_slots=min(self.client_slots or self.concurrency, self.concurrency),
                     client_jobs=self.client_jobs or None, job_seconds=self.job_seconds or None,
                     job_passes=self.job_passes or None)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Limits":
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(PREFIX + f.name.upper(), "").strip()
            if f.name == "public":
                values["public"] = raw.lower() in ("1", "true", "yes", "on")
            elif f.name == "allowed_models":
                values["allowed_models"] = tuple(m.strip() for m in raw.split(",") if m.strip())
            elif raw:
                values[f.name] = _parse(PREFIX + f.name.upper(), raw,
                                        float if f.name in FLOAT_LIMITS else int,
                                        lowest=0 if f.name in ZERO_IS_NONE else 1)
        return cls(**values)

    def model_allowed(self, hub_id: str) -> str | None:
        """The allow-list's own spelling of ``hub_id`` if it may load, else None. Outside public
        mode every id may load. Case is ignored, and the list's spelling is returned, so
        ``qwen/x`` and ``Qwen/X`` share one copy in memory instead of loading twice."""
        if not self.public or "*" in self.allowed_models:
            return hub_id
        return next((m for m in self.allowed_models if m.lower() == hub_id.lower()), None)


#: Limits read as a number with a fraction; the others are whole numbers.
FLOAT_LIMITS = ("session_ttl", "grammar_seconds", "job_seconds", "room_idle")
#: Limits where 0 is allowed and means "no limit" (or, for the proxy hops, "no proxy").
ZERO_IS_NONE = ("client_jobs", "job_seconds", "job_passes", "client_requests", "proxy_hops")


def _parse(name: str, raw: str, kind: type, lowest: int = 1) -> int | float:
    try:
        value = kind(raw)
    except ValueError:
        raise LimitsError(f"{name} must be a {'number' if kind is float else 'whole number'}, got {raw!r}") from None
    if not math.isfinite(value) or value < lowest:
        raise LimitsError(f"{name} must be at least {lowest}, got {raw!r}")
    return value


def current() -> Limits:
    """The limits now (the environment is read on every call: a handful of lookups)."""
    return Limits.from_env()


def public_mode() -> bool:
    """True when ``DECODING_LAB_PUBLIC`` is set to a true value."""
    return current().public


# ----------------------------------------------------------------------------- checks
def check_count(name: str, value: Any, hi: int, env: str | None = None, lo: int = 1) -> int:
    """A whole number in [lo, hi]; the message names the setting, the bad value and, for a
    deployment limit, the variable that sets it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError.coded("not_whole", name=name, got=repr(value))
    if not lo <= value <= hi:
        where = f" ({env})" if env else ""
        raise SettingsError(f"{name} must be between {lo} and {hi}{where}, got {value}")
    return value


def check_new_tokens(value: Any, limits: Limits | None = None, name: str = "max_new_tokens") -> int:
    lim = limits or current()
    return check_count(name, value, lim.max_new_tokens, PREFIX + "MAX_NEW_TOKENS")


def check_beams(value: Any, limits: Limits | None = None) -> int:
    lim = limits or current()
    return check_count("num_beams", value, lim.max_beams, PREFIX + "MAX_BEAMS")


def check_samples(value: Any, limits: Limits | None = None) -> int:
    lim = limits or current()
    return check_count("number of samples n", value, lim.max_samples, PREFIX + "MAX_SAMPLES")


def check_prompt_tokens(n_tokens: int, limits: Limits | None = None) -> None:
    lim = limits or current()
    if n_tokens > lim.max_prompt_tokens:
        raise SettingsError(f"the prompt has {n_tokens} tokens; the limit here is {lim.max_prompt_tokens} "
                            f"({PREFIX}MAX_PROMPT_TOKENS)")


def check_prompt_text(text: str, limits: Limits | None = None) -> None:
    """Refuse a huge text before the tokenizer spends time on it."""
    lim = limits or current()
    cap = lim.max_prompt_tokens * CHARS_PER_TOKEN
    if len(text) > cap:
        raise SettingsError(f"the prompt has {len(text)} characters; the limit here is {cap} "
                            f"({PREFIX}MAX_PROMPT_TOKENS = {lim.max_prompt_tokens} tokens)")
    try:  # a lone surrogate (from the API, or invalid UTF-8 on a command line) is not text
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SettingsError(f"the prompt is not valid text: character {e.start} is a lone surrogate "
                            f"({text[e.start]!r}); remove it or send UTF-8") from None


def check_sweep_samples(total: int, limits: Limits | None = None) -> None:
    lim = limits or current()
    if total > lim.max_sweep_samples:
        raise SettingsError(f"this sweep would draw {total} samples; the limit here is {lim.max_sweep_samples} "
                            f"({PREFIX}MAX_SWEEP_SAMPLES): fewer problems, samples or grid cells")


def check_text_size(what: str, text: str, limits: Limits | None = None) -> str:
    """A constraint's text may be at most ``DECODING_LAB_MAX_GRAMMAR_CHARS`` characters."""
    lim = limits or current()
    if len(text) > lim.max_grammar_chars:
        raise SettingsError(f"the {what} has {len(text):,} characters; at most {lim.max_grammar_chars:,} are allowed "
                            f"({PREFIX}MAX_GRAMMAR_CHARS)")
    return text


#: Result files (sweeps, CTD reports) are larger than a grammar: the shipped sweep is 1.3 MB.
RESULT_FILE_BYTES = 64_000_000


def read_text_file(path: str | os.PathLike, what: str, limits: Limits | None = None, max_bytes: int | None = None) -> str:
    """A text file: regular files only (not /dev/zero, a FIFO or a directory), at most
    ``max_bytes`` (default ``DECODING_LAB_MAX_FILE_BYTES``) bytes, valid UTF-8. Never reads
    past the cap, so a huge or endless file costs at most the cap in memory."""
    import stat
    lim = limits or current()
    cap = max_bytes if max_bytes is not None else lim.max_file_bytes
    path = os.fspath(path)
    try:
        info = os.stat(path)
    except OSError as e:
        raise SettingsError(f"cannot read the {what} file {path!r}: {e.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SettingsError(f"the {what} file {path!r} is not a regular file")
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError as e:
        raise SettingsError(f"cannot read the {what} file {path!r}: {e.strerror}") from None
    if len(data) > cap:
        where = f" ({PREFIX}MAX_FILE_BYTES)" if max_bytes is None else ""
        raise SettingsError(f"the {what} file {path!r} is larger than {cap:,} bytes{where}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SettingsError(f"the {what} file {path!r} is not UTF-8 text (byte {e.start})") from None


def read_result_file(path: str | os.PathLike, what: str) -> Any:
    """A result file (a sweep, a CTD report) parsed as JSON: the same checks as
    ``read_text_file`` with the larger cap, and a one-line message for bad or over-nested JSON."""
    import json
    text = read_text_file(path, what, max_bytes=RESULT_FILE_BYTES)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise SettingsError(f"cannot read {what} file {os.fspath(path)}: {str(e)[:120] or 'nested too deep'}") from None

