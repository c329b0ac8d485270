"""User errors as toasts: one decorator for every handler, and messages that cannot carry HTML.

Gradio renders the text of ``gr.Error`` / ``gr.Warning`` / ``gr.Info`` as (sanitised) HTML, so a
message that echoes what a visitor typed (a bad value in a share link, an unknown stage name,
a Hub id) could put a link, an image or a form into the toast. Every message goes through
``plain()``: one line, and every ``<`` that could open a tag (or a comment) becomes ``&lt;``,
which the browser shows as the character. Nothing else can make an element, so "x >= 0"
stays readable for API clients, which get the text as is.

    >>> plain('unknown stage "<img src=x onerror=alert(1)>"')
    'unknown stage "&lt;img src=x onerror=alert(1)>"'
    >>> plain("top-p must be > 0, got 0")
    'top-p must be > 0, got 0'
"""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any, Callable

import gradio as gr

from decoding_lab.errors import UserError
from decoding_lab.ui.common.i18n import t

MAX_MESSAGE = 400
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def plain(text: Any) -> str:
    """One line of escaped text, safe to show as HTML."""
    line = (str(text).strip().splitlines() or [""])[0]
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 1] + "…"
    return _TAG_START.sub("&lt;", line)


def user_error(lang: str, exc: BaseException) -> gr.Error:
    """A clear, translated, escaped error for the toast; the session's state is left as it was."""
    from decoding_lab.models import ModelError
    key = "model_error" if isinstance(exc, ModelError) else "bad_input"
    return gr.Error(t(lang, key, msg=plain(exc) or type(exc).__name__), title=t(lang, "error"), print_exception=False)


def warn(text: str) -> None:
    gr.Warning(plain(text))


def _lang_of(args: tuple, kw: dict) -> str:
    """Handlers get the language as their first input (``lang``), or in their request dict."""
    if "lang" in kw and isinstance(kw["lang"], str):
        return kw["lang"]
    if args and isinstance(args[0], str):
        return args[0]
    if args and isinstance(args[0], dict) and isinstance(args[0].get("lang"), str):
        return args[0]["lang"]
    return "en"


def guarded(fn: Callable) -> Callable:
    """Turn the core's ``UserError``s into a one-line ``gr.Error``; anything else is a bug and
    keeps its traceback."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kw: Any):
            try:
                yield from fn(*args, **kw)
            except UserError as e:
                raise user_error(_lang_of(args, kw), e) from None
        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any):
        try:
            return fn(*args, **kw)
        except UserError as e:
            raise user_error(_lang_of(args, kw), e) from None
    return wrapper
