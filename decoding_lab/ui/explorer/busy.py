"""Busy reads as busy. A second action while one of this tab's is still running is refused by
the job guard (``common.sessions.gated``) or the session lock with a ``gr.Error``, and gradio
then marks every output of the event with a red "Error". Here the refusal becomes a "Busy"
notice that changes nothing on the page: the running action simply goes on."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import gradio as gr

from decoding_lab.ui.common.i18n import LANGS, t


def _is_busy(err: gr.Error) -> bool:
    return getattr(err, "message", str(err)) in {t(lang, "busy") for lang in LANGS}


def calm_when_busy(fn: Callable, untouched: Any) -> Callable:
    """``fn`` (a gated handler whose first argument is the language), with a busy refusal turned
    into a notice and a no-op update of ``untouched`` (gradio needs one output in the dict)."""

    def notice(args: tuple) -> dict:
        lang = args[0] if args and isinstance(args[0], str) else "en"
        gr.Warning(t(lang, "busy"), title=t(lang, "busy_title"))
        return {untouched: gr.update()}

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(*args: Any) -> Any:
            try:
                yield from fn(*args)
            except gr.Error as err:
                if not _is_busy(err):
                    raise
                yield notice(args)
        return gen

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except gr.Error as err:
            if not _is_busy(err):
                raise
            return notice(args)
    return call
