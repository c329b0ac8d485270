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
from decoding_lab.ui.common.i18n import STRINGS, norm_lang, t

MAX_MESSAGE = 400
_TAG_START = re.compile(r"<(?=[/!?]|[^\W\d_])")   # "<" before a letter of any script, "/", "!" or "?"


def one_line(text: Any) -> str:
    """The first line of ``text``, at most ``MAX_MESSAGE`` characters (for a place that shows
    text as text, such as a control's refusal: nothing there is read as HTML)."""
    line = (str(text).strip().splitlines() or [""])[0]
    return line[: MAX_MESSAGE - 1] + "…" if len(line) > MAX_MESSAGE else line


def plain(text: Any) -> str:
    """One line of escaped text, safe to show as HTML."""
    return _TAG_START.sub("&lt;", one_line(text))


def localised(exc: BaseException, lang: str) -> str:
    """A core refusal in the visitor's language: a coded one (``decoding_lab.errors.MESSAGES``) is
    rendered by the page's translation function from its code and parameters, in every language;
    any other keeps the core's English.

        >>> from decoding_lab.errors import SettingsError
        >>> localised(SettingsError.coded("out_of_range", name="top-p", op="<=", bound="1", got="1.5"), "zh")
        'top-p 必须 <= 1，收到的是 1.5'
    """
    code = getattr(exc, "code", "")
    if not code:
        return str(exc)
    params = dict(getattr(exc, "params", {}))
    what = f"err.what.{params.get('what')}"
    if "what" in params and what in STRINGS[norm_lang(lang)]:   # the kind of constraint a grammar message names
        params["what"] = t(lang, what)
    try:
        return t(lang, f"err.{code}", **params).strip()
    except (KeyError, IndexError, ValueError):   # a template and its parameters out of step: the English
        return str(exc)


def user_error(lang: str, exc: BaseException) -> gr.Error:
    """A clear, translated, escaped error for the toast; the session's state is left as it was."""
    from decoding_lab.errors import ModelError
    key = "model_error" if isinstance(exc, ModelError) else "bad_input"
    msg = plain(localised(exc, lang)) or type(exc).__name__
    return gr.Error(t(lang, key, msg=msg), title=t(lang, "error"), print_exception=False)


def warn(text: str, lang: str = "en") -> None:
    """A warning toast (escaped, one line) under a title in the visitor's language."""
    gr.Warning(plain(text), title=t(lang, "warning"))


def inform(text: str, lang: str = "en") -> None:
    """An information toast (escaped, one line) under a title in the visitor's language. (Gradio 6
    draws the title from the toast's kind, not from ``title``: the page writes it over in Chinese,
    ``page.GRADIO_ZH``; API clients get ``title``.)"""
    gr.Info(plain(text), title=t(lang, "info"))


def lang_of(args: tuple, kw: dict) -> str:
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
                raise user_error(lang_of(args, kw), e) from None
        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any):
        try:
            return fn(*args, **kw)
        except UserError as e:
            raise user_error(lang_of(args, kw), e) from None
    return wrapper
