"""One vocabulary: the Chinese lessons and the app's Chinese strings use the glossary's terms
(``lessons/glossary.toml``), never a spelling it lists to avoid. Code spans, quoted model text,
``{placeholders}`` and an English term glossed in parentheses are left out of the check."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from decoding_lab.lessons import load_glossary, load_lessons

TERMS = load_glossary()
UI = Path(__file__).resolve().parents[1] / "decoding_lab" / "ui"


def prose(text: str) -> str:
    """``text`` without code, quoted tokens, format fields and parenthesised glosses."""
    for pattern in (r"`[^`]*`", r"“[^”]*”", r"'[^']*'", r"\{[^{}]*\}", r"（[^（）]*）", r"\([^()]*\)", r"<[^<>]*>"):
        text = re.sub(pattern, " ", text)
    return text


def offences(text: str) -> list[str]:
    body = prose(text)
    return [f"{t.zh}: {m.group(0)!r}" for t in TERMS for a in t.avoid for m in re.finditer(a, body)]


def zh_values(d, acc):
    if isinstance(d, dict):
        for k, x in d.items():
            (acc.append(x) if k == "zh" and isinstance(x, str) else zh_values(x, acc))
    elif isinstance(d, list):
        for x in d:
            zh_values(x, acc)
    return acc


def lesson_zh() -> list[tuple[str, str]]:
    import tomllib
    out = []
    for path in sorted((Path(__file__).resolve().parents[1] / "lessons").glob("[0-9]*.toml")):
        out += [(path.name, v) for v in zh_values(tomllib.loads(path.read_text(encoding="utf-8")), [])]
    return out


def ui_zh() -> list[tuple[str, str]]:
    for path in sorted(UI.glob("*/strings.py")):
        importlib.import_module(f"decoding_lab.ui.{path.parent.name}.strings")
    from decoding_lab.ui.common import i18n
    return [(key, v) for key, v in i18n.ZH.items() if isinstance(v, str)]


def test_glossary_terms_are_unique():
    assert len({t.en for t in TERMS}) == len(TERMS) and len({t.zh for t in TERMS}) == len(TERMS)
    assert load_lessons()  # the glossary sits beside the lessons without being read as one


@pytest.mark.parametrize("source", ["lessons", "ui"])
def test_chinese_text_uses_the_glossary_terms(source):
    items = lesson_zh() if source == "lessons" else ui_zh()
    bad = [f"{where}: {o}" for where, text in items for o in offences(text)]
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} in all)"
