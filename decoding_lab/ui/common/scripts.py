"""The page's JavaScript, kept as files under ``assets/js/`` (real syntax highlighting, a linter can
read them) and read here once per process. Settings a script needs from the server reach it as
JSON (``page.head``: ``window.DL_CONFIG``), never by editing its text."""

from __future__ import annotations

import functools
from pathlib import Path

JS_DIR = Path(__file__).resolve().parents[3] / "assets" / "js"


@functools.cache
def script(name: str) -> str:
    """The text of ``assets/js/<name>.js``."""
    return (JS_DIR / f"{name}.js").read_text(encoding="utf-8")
