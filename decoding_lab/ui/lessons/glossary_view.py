"""The glossary box of the Lessons tab: the shared English and Chinese terms (``lessons/glossary.toml``),
the same ones the app's Chinese labels use."""

from __future__ import annotations

from decoding_lab.lessons import load_glossary
from decoding_lab.ui.common.i18n import norm_lang


def glossary_markdown(lang: str) -> str:
    rows = sorted(load_glossary(), key=lambda t: t.en.lower())
    if norm_lang(lang) == "zh":
        return "| 中文 | English |\n|---|---|\n" + "\n".join(f"| {t.zh} | {t.en} |" for t in rows)
    return "| English | 中文 |\n|---|---|\n" + "\n".join(f"| {t.en} | {t.zh} |" for t in rows)
