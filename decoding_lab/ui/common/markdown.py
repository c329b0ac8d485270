"""Text from outside (a token, a prompt, a constraint from a share link, a model's output) inside
a Markdown view: shown as typed, never read as markup. Gradio's sanitiser removes scripts, but an
image or a link in Markdown still loads from wherever it points, so every such echo goes through
``code_span``."""

from __future__ import annotations

import re


def code_span(text: str) -> str:
    r"""``text`` as a markdown code span, shown as typed: inside one nothing is markup and no
    entity is decoded (``'s`` escaped for HTML would read ``&#x27;s``); the fence is one backtick
    longer than any run of backticks in the text, and a table's ``|`` is escaped.

        >>> code_span("'s"), code_span("a`b"), code_span("<b>|")
        ("`'s`", '`` a`b ``', '`<b>\\|`')
        >>> code_span("![a](http://x/y.png)")
        '`![a](http://x/y.png)`'
    """
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    body = text.replace("|", "\\|")
    return f"{fence} {body} {fence}" if longest else f"{fence}{body}{fence}"
