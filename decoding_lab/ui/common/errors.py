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
_TAG_START = re.compile(r"<(?=[/!?]|[^\W\d_])")   # "<" before a letter of any script, "/", "!" or "?"


def one_line(text: Any) -> str:
    """The first line of ``text``, at most ``MAX_MESSAGE`` characters (for a place that shows
    text as text, such as a control's refusal: nothing there is read as HTML)."""
    line = (str(text).strip().splitlines() or [""])[0]
    return line[: MAX_MESSAGE - 1] + "…" if len(line) > MAX_MESSAGE else line


def plain(text: Any) -> str:
    """One line of escaped text, safe to show as HTML."""
    return _TAG_START.sub("&lt;", one_line(text))


#: The core's refusals of a value (``params.check_number`` and the order checks) in Chinese; the
#: names in them (top-p, min-p …) are the settings' names in both languages. A message of any
#: other shape stays as the core wrote it.
_ZH_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(a), b) for a, b in (
    (r"^(.+?) must be a number, got (.+)$", r"\1 必须是数字，收到的是 \2"),
    (r"^(.+?) must be finite, got (.+)$", r"\1 必须是有限的数，收到的是 \2"),
    (r"^(.+?) must be a whole number, got (.+)$", r"\1 必须是整数，收到的是 \2"),
    (r"^(.+?) must be (>=|<=|>|<) (\S+), got (.+)$", r"\1 必须 \2 \3，收到的是 \4"),
    (r"^(.+?) must be true or false, got (.+)$", r"\1 只能是 true 或 false，收到的是 \2"),
    (r"^(.+?) is empty: give a number$", r"\1 为空：请填一个数"),
    (r"^unknown stage (.+?); known stages: (.+)$", r"未知的阶段 \1；已知的阶段：\2"),
    (r"^stage order names (.+) more than once$", r"阶段顺序里 \1 出现了不止一次"),
    (r"^(.+?) must be one of (.+); got (.+)$", r"\1 必须是以下之一：\2；收到的是 \3"),
    (r"^the prompt is empty(: type some text first)?$", r"提示词为空：请先输入文字"),
    (r"^choose at least two numerical paths to compare$", r"请至少选两条数值路径来比较"),
    (r"^invalid regex (.+?): (.+)$", r"无效的正则 \1：\2"),
    # grammar errors: the engine's or the parser's own detail stays as it wrote it, after a Chinese head
    (r"^the JSON schema is not valid JSON: (.+) \(line (\d+), column (\d+)\)$", r"JSON Schema 不是合法的 JSON（第 \2 行第 \3 列）：\1"),
    (r"^invalid JSON schema: (.+)$", r"无效的 JSON Schema：\1"),
    (r"^invalid (Lark|GBNF) grammar at line (\d+), column (\d+): (.+)$", r"无效的 \1 语法（第 \2 行第 \3 列）：\4"),
    (r"^invalid (Lark|GBNF) grammar: (.+)$", r"无效的 \1 语法：\2"),
    (r"^invalid choices at line (\d+), column (\d+): (.+)$", r"无效的选项（第 \1 行第 \2 列）：\3"),
    (r"^invalid choices: (.+)$", r"无效的选项：\1"),
    (r"^the (regex|JSON schema|Lark grammar|GBNF grammar|choices) matches no text at all$", r"这个 \1 不匹配任何文本"),
    (r"^the (regex|JSON schema|Lark grammar|GBNF grammar|choices|prompt) is empty$", r"\1 是空的"),
    (r"^choices: the list is empty, so nothing could be written$", r"选项列表是空的，什么也写不出来"),
    (r"^the grammar compiler is busy with (\d+) other grammar\(s\); try again in a moment (.*)$",
     r"语法编译器正忙于另外 \1 个语法；请稍后再试 \2"),
))


def localised(text: str, lang: str) -> str:
    """A core message in the visitor's language, where its shape is a known one.

        >>> localised("top-p must be <= 1, got 1.5", "zh")
        'top-p 必须 <= 1，收到的是 1.5'
    """
    if not str(lang).startswith("zh"):
        return text
    for pattern, repl in _ZH_MESSAGES:
        if pattern.match(text):
            return pattern.sub(repl, text, count=1)
    return text


def user_error(lang: str, exc: BaseException) -> gr.Error:
    """A clear, translated, escaped error for the toast; the session's state is left as it was."""
    from decoding_lab.errors import ModelError
    key = "model_error" if isinstance(exc, ModelError) else "bad_input"
    msg = plain(localised(str(exc), lang)) or type(exc).__name__
    return gr.Error(t(lang, key, msg=msg), title=t(lang, "error"), print_exception=False)


def warn(text: str, lang: str = "en") -> None:
    """A warning toast (escaped, one line) under a title in the visitor's language."""
    gr.Warning(plain(text), title=t(lang, "warning"))


def inform(text: str, lang: str = "en") -> None:
    """An information toast (escaped, one line) under a title in the visitor's language. (Gradio 6
    draws the title from the toast's kind, not from ``title``: the page writes it over in Chinese,
    ``page.GRADIO_ZH``; API clients get ``title``.)"""
    gr.Info(plain(text), title=t(lang, "info"))


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
