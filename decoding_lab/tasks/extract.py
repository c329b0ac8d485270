"""Getting the final answer out of a free-form completion, by pattern.

Small models ramble: "To calculate 3 + 4, we add them together: 3 + 4 = 7. So the
answer is 7." A verifier needs "7". Pattern extraction reads the text with a fixed
priority list; it never asks the model again (for that, see ``constrained.py``, which
runs a second, constrained generation; the two are compared in ``compare_extractors``).

Numbers, in priority order (the first rule that matches wins):

1. ``\\boxed{N}``
2. an explicit statement: "answer is N", "answer: N", "result is N", "equals N",
   "is equal to N", "sum is N" (the first such statement);
3. an equals sign whose right side is a lone number: "3 + 4 = 7" (not "= 3 + 4");
   the first one, because ramblers go on to write other sums;
4. the last number in the first line, then the last number anywhere.

    >>> extract_number("To calculate 3 + 4, we add: 3 + 4 = 7. Then 7 + 1 = 8.")
    '7'
    >>> extract_number("The answer is -12.")
    '-12'
    >>> extract_number("Sure! 1,200 apples.")
    '1200'
    >>> extract_number("I don't know.") is None
    True

Choices (A/B/C/D): "answer is B", "(B)", "B." / "B)" at the start of a line, a lone
letter, then the text of exactly one option.

    >>> extract_choice("The correct answer is (c) Paris.", ["Lyon", "Nice", "Paris", "Lille"])
    'C'
    >>> extract_choice("Paris is the capital.", ["Lyon", "Nice", "Paris", "Lille"])
    'C'

Closed vocabulary (e.g. capital cities): the earliest mention of a known name.

    >>> extract_name("It is Paris, not Lyon.", ["Lyon", "Paris"])
    'Paris'
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

#: Bump a kind's number when its rules change: sweep cells cached under an older version are
#: recomputed (per kind, so a fix to choice letters does not invalidate numeric sweeps).
EXTRACT_VERSIONS: dict[str, int] = {"number": 1, "choice": 2, "name": 1, "code": 1}

_NUM = r"-?\d[\d,]*(?:\.\d+)?"
_BOXED = re.compile(r"\\boxed\{\s*(" + _NUM + r")\s*\}")
_STATED = re.compile(r"(?:answer\s*(?:is|:|=)|result\s*(?:is|:)|equals|is\s+equal\s+to|sum\s+(?:is|of\s+[^.]*?\s+is)"
                     r"|total\s+is|gives\s+(?:us\s+)?)\s*\**\s*(" + _NUM + r")(?![\d,]*\s*[+\-*/×x÷]\s*\d)",
                     re.IGNORECASE)
_EQUALS = re.compile(r"=\s*\**\s*(" + _NUM + r")(?!\s*[+\-*/×x÷^]\s*\d)(?![\d.,]*\d)")
_ANY = re.compile(_NUM)


def normalize_number(text: str) -> str | None:
    """'1,200' -> '1200', '7.0' -> '7', '-0' -> '0'; None when it is not a number."""
    t = text.strip().replace(",", "").rstrip(".")
    try:
        value = float(t)
    except ValueError:
        return None
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def extract_number(text: str) -> str | None:
    """The final numeric answer of a completion (rules in the module docstring)."""
    for pattern in (_BOXED, _STATED, _EQUALS):
        m = pattern.search(text)
        if m:
            return normalize_number(m.group(1))
    first_line = text.strip().split("\n", 1)[0]
    for chunk in (first_line, text):
        nums = _ANY.findall(chunk)
        if nums:
            return normalize_number(nums[-1])
    return None


LETTERS = "ABCDEFGH"


def extract_choice(text: str, options: Sequence[str] = (), letters: str | None = None) -> str | None:
    """The chosen letter ('A'..), or None. ``options`` are the option texts, in order."""
    letters = letters or LETTERS[: max(len(options), 4)]
    up, anycase = f"[{letters}]", f"[{letters}{letters.lower()}]"
    rules = [   # a lower-case letter only where it cannot be the article "a"
        rf"(?i:answer)\s*(?:is|:)?\s*(?:(?i:option)\s*)?[\(\[]?({up})\b",
        rf"[\(\[]({anycase})[\)\]]",
        rf"(?:^|\n)\s*({up})\s*[.):]",
        rf"^\s*({up})\s*$",
        rf"(?i:option|choice)\s+({anycase})\b",
    ]
    for rule in rules:
        m = re.search(rule, text)
        if m:
            return m.group(1).upper()
    if options:
        hits = [i for i, opt in enumerate(options) if _contains_word(text, opt)]
        if len(hits) == 1:
            return letters[hits[0]]
        if hits:  # several options mentioned: the earliest mention
            return letters[min(hits, key=lambda i: _find_word(text, options[i]))]
    return None


def _fold(s: str) -> str:
    """Lower case without accents: 'Bogotá' -> 'bogota'."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch)).lower()


def _find_word(text: str, word: str) -> int:
    m = re.search(r"(?<!\w)" + re.escape(_fold(word)) + r"(?!\w)", _fold(text))
    return m.start() if m else -1


def _contains_word(text: str, word: str) -> bool:
    return _find_word(text, word) >= 0


def extract_name(text: str, names: Sequence[str]) -> str | None:
    """The earliest of ``names`` mentioned in ``text`` (whole words, case and accents ignored)."""
    found = [(pos, -len(n), n) for n in names if (pos := _find_word(text, n)) >= 0]
    return min(found)[2] if found else None


_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.DOTALL)
#: Where a raw completion of a function body stops (as in the Codex / HumanEval protocol).
CODE_STOPS = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#", "\nassert ")


def extract_code(text: str, entry_point: str | None = None) -> tuple[str, bool]:
    """Python code from a completion: the first fenced block if there is one, else the
    text up to the first stop sequence. Returns ``(code, is_full_function)``:
    True when the code defines ``entry_point`` itself (a chat answer that restates the
    function), False when it is a body to append to the prompt.

        >>> extract_code("Here:\\n```python\\ndef f(x):\\n    return x\\n```\\nDone.", "f")
        ('def f(x):\\n    return x\\n', True)
    """
    m = _FENCE.search(text)
    code = m.group(1) if m else text
    if not m:
        cut = min([i for s in CODE_STOPS if (i := code.find(s)) >= 0], default=len(code))
        code = code[:cut]
    full = bool(entry_point) and re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE) is not None
    return code, full
