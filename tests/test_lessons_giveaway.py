"""A prediction must still be open when it is asked: nothing the learner can read before committing
a guess states the answer.

What the learner can read before an experiment's run: every screen up to and including the
experiment's own, the question and its choices (a choice's label or a variant's), the reveals of
the lesson's earlier experiments (filled with their tested values) and the pointers those runs
release on the screens before it (``Lesson.pointers``). The glossary is left out: it defines words.

What must not be there:

* for a ``number`` prediction, the value it asks for, in any rounding the text could use ("11,740",
  "11740", "12,000", "1.2 万", "500×", "21%", "one time in five"); for a ratio of two variants
  (``of = "ratio:a/b"``) also the two values it is made of and its logarithm (the gap), since either
  gives the ratio away;
* for a ``min`` / ``max`` / ``value`` prediction, the measured value of each variant (the numbers that
  decide which one wins).

A number that appears for another reason is listed in ``ALLOWED``: the words around it, so that the
same number written anywhere else is still caught, and the reason.
"""

from __future__ import annotations

import math
import re

import pytest

from decoding_lab.lessons import LANGS, load_lessons

LESSONS = load_lessons()

#: (lesson, experiment id, the words around a number) -> why that number may be read before the
#: prediction: it is another quantity that happens to round like the answer.
ALLOWED: dict[tuple[int, str, str], str] = {
    (1, "three-scores", "misses about once in three"): "screen 3's Australia miss rate (Sydney's 0.31), not a vote",
    (1, "three-scores", "单次采样大约每三次错一次"): "screen 3's Australia miss rate (Sydney's 0.31), not a vote",
    (8, "extract-protocols", "quote ' \"' (≈ 0.55)"): "screen 4's healed quote token's probability, not a protocol",
    (8, "extract-protocols", "引号 ' \"'（≈ 0.55）"): "screen 4's healed quote token's probability, not a protocol",
    # a last screen's checks show with it, before its run
    (1, "three-scores", "whose probability is 0.6"): "check 1's made-up token probability, not a score",
    (1, "three-scores", "贪心选中的词元概率是 0.6"): "check 1's made-up token probability, not a score",
    (8, "extract-protocols", "'Well,' (0.7)"): "check 3's made-up distribution, not a protocol",
    (8, "extract-protocols", "“Well,”（0.7）"): "check 3's made-up distribution, not a protocol",
    (8, "extract-protocols", "yes 0.5, no 0.5"): "a wrong choice of check 3's made-up distribution",
    (8, "extract-protocols", "yes 0.5、no 0.5"): "a wrong choice of check 3's made-up distribution",
    (13, "greedy-loop", "T between 0.5 and 0.7"): "DeepSeek-R1's recommended temperatures, from its card",
    (13, "greedy-loop", "T 在 0.5 到 0.7 之间"): "DeepSeek-R1's recommended temperatures, from its card",
    (13, "best-of-proxy", "T between 0.5 and 0.7"): "DeepSeek-R1's recommended temperatures, from its card",
    (13, "best-of-proxy", "T 在 0.5 到 0.7 之间"): "DeepSeek-R1's recommended temperatures, from its card",
    (13, "best-of-proxy", "温度从 0.7 降到 0.3"): "the two temperatures screen 3 compares",
}

_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九十")} | {"两": 2}
_SCALE = {"万": 1e4, "亿": 1e8, "千": 1e3, "k": 1e3, "K": 1e3}
# a number as lessons write it: thousands commas, decimals, an exponent, a scale word or a percent after it
_NUM = re.compile(r"(?<![A-Za-z0-9_.@^\-])(\d+(?:,\d{3})*(?:\.\d+)?(?:e[-−]\d+)?)\s?(%|万|亿|千|k(?![A-Za-z])|K(?![A-Za-z]))?"
                  r"(?![A-Za-z0-9_])")


# a number right after a setting's name is that setting ("T = 0.7", "top-p 0.9", "k = 16"), not a result
_SETTING = re.compile(r"(?:\bT|\bk|\bn|η|temperature|温度|top-p|top-k|min-p|top_p|top_k|min_p)\s?(?:[=≈]\s?|of\s)?$")


def _zh_number(s: str) -> int | None:
    """一 … 九十九 (enough for "十次里六次")."""
    if not s or any(c not in _ZH_DIGITS for c in s):
        return None
    if "十" not in s:
        return _ZH_DIGITS[s] if len(s) == 1 else None
    tens, _, ones = s.partition("十")
    return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)


def written_numbers(text: str) -> list[tuple[str, float, float]]:
    """Each number in ``text`` as (what is written, its value, the unit of its last written digit):
    the unit says how coarse a rounding it can be ("12,000" rounds to the thousand, "0.60" to the
    hundredth). Frequencies in words count too ("one time in five", "十次里六次": 0.2, 0.6).

    >>> [(w, v, u) for w, v, u in written_numbers("11,740 or 1.2 万, 500×, 21%, p < 1e-4, pass@16, Gemma-3")]
    [('11,740', 11740.0, 10.0), ('1.2 万', 12000.0, 1000.0), ('500', 500.0, 100.0), ('21%', 0.21, 0.01), ('1e-4', 0.0001, 0.0001)]
    >>> [round(v, 3) for _, v, _ in written_numbers("about one time in five; 大约十次里六次; once in three")]
    [0.2, 0.333, 0.6]
    >>> [w for w, _, _ in written_numbers("at T = 0.7, top-p 0.9 and k = 16 it scores 0.74")]   # settings are not results
    ['0.74']
    """
    found = []
    for m in _NUM.finditer(text):
        if _SETTING.search(text[max(0, m.start() - 16):m.start()]):
            continue
        digits, suffix = m.group(1).replace(",", "").replace("−", "-"), m.group(2) or ""
        value = float(digits)
        if "e" in digits:
            unit = float("1e" + digits.split("e")[1])
        elif "." in digits:
            unit = 10.0 ** -len(digits.split(".")[1])
        else:
            unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if value else 1.0
        scale = 0.01 if suffix == "%" else _SCALE.get(suffix, 1.0)
        found.append((m.group(0).strip(), value * scale, unit * scale))
    words = "|".join(["once", *_WORDS, r"\d+"])
    for m in re.finditer(rf"\b({words})(?: times?)? in (?:a |an )?({'|'.join([*_WORDS, r'[0-9]+'])})\b", text, re.I):
        a, b = (1 if x.lower() == "once" else _WORDS.get(x.lower(), None) for x in m.groups())
        a = a if a is not None else int(m.group(1))
        b = b if b is not None else int(m.group(2))
        if b:
            found.append((m.group(0), a / b, 0.0))
    for m in re.finditer(r"([一二三四五六七八九十两]+)次(?:里|中|才)?[^，。；]{0,4}?([一二三四五六七八九十两]+)次", text):
        b, a = _zh_number(m.group(1)), _zh_number(m.group(2))
        if a is not None and b:
            found.append((m.group(0), a / b, 0.0))
    return found


def could_be(written: float, unit: float, value: float) -> bool:
    """Whether a number written to ``unit`` is ``value`` rounded: within half a unit of it, and the
    rounding no coarser than a quarter of the value (so "0.6" can be 0.56 and "500" can be 492, but
    "1" is not 0.56). A frequency in words (unit 0) may be off by 5% of the value.

    >>> could_be(500, 100, 492.7), could_be(0.6, 0.1, 0.56), could_be(1, 1, 0.56), could_be(12000, 1000, 11740)
    (True, True, False, True)
    >>> could_be(0.2, 0.0, 0.21), could_be(0.25, 0.0, 0.21)
    (True, False)
    """
    value = abs(value)
    if value == 0:
        return False
    if unit == 0:
        return abs(written - value) <= 0.05 * value
    return abs(written - value) <= unit / 2 + 1e-12 * max(1.0, value) and unit <= 0.25 * value


def seen_before(lesson, exp, lang: str) -> str:
    """Everything the learner can read before committing a guess for ``exp`` (see the module doc)."""
    screens = lesson.screens(lang)
    parts = screens[:exp.screen]
    parts.append(exp.predict.question[lang])
    parts += [c[lang] for c in exp.predict.choices] + [v.label[lang] for v in exp.variants]
    earlier = [e for e in lesson.experiments if e.screen < exp.screen]
    parts += [e.fill(e.reveal[lang], e.expect) for e in earlier]
    ran = {e.id for e in earlier}
    for screen in range(exp.screen):
        shown, _ = lesson.pointers(screen, ran)
        parts += [item[lang] for item in shown]
    if exp.screen == len(screens):   # the checks come with the last screen, before its run
        parts += [c.question[lang] for c in lesson.checks]
        parts += [choice.text[lang] for c in lesson.checks for choice in c.choices]
    return "\n".join(parts)


def forbidden(exp) -> dict[str, float]:
    """The values that would give ``exp``'s answer away, by name."""
    numeric = {k: v for k, v in exp.expect.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if exp.predict.kind != "number":
        return {f"{k} (decides the {exp.predict.kind})": v for k, v in numeric.items()}
    value = exp.expect[exp.predict.of]
    out = {exp.predict.of: value}
    if exp.measure.startswith("odds:") and value > 1:
        out[f"the log-probability gap behind {exp.predict.of}'s odds"] = math.log(value)
    return out


def giveaways(lesson, exp, lang: str) -> list[str]:
    text = seen_before(lesson, exp, lang)
    for (number, exp_id, words) in ALLOWED:          # an allowed number is read in its own words only
        if (number, exp_id) == (lesson.number, exp.id):
            text = text.replace(words, " ")
    found = []
    for name, value in forbidden(exp).items():
        for written, v, unit in written_numbers(text):
            if could_be(v, unit, value):
                found.append(f"{written!r} gives away {name} = {value:.4g}")
    return found


CASES = [(les, exp) for les in LESSONS for exp in les.experiments]


@pytest.mark.parametrize("lesson,exp", CASES, ids=[f"{les.number}-{exp.id}" for les, exp in CASES])
@pytest.mark.parametrize("lang", LANGS)
def test_a_prediction_is_open_when_it_is_asked(lesson, exp, lang):
    found = giveaways(lesson, exp, lang)
    assert not found, f"lesson {lesson.number}, {exp.id} ({lang}), before the run: {found}"


def test_allowed_numbers_are_still_needed():
    """No stale allowances: each listed number is still written where the learner reads it first."""
    by_id = {(les.number, exp.id): (les, exp) for les, exp in CASES}
    for (number, exp_id, words), reason in ALLOWED.items():
        assert reason.strip() and written_numbers(words)
        les, exp = by_id[number, exp_id]
        assert any(words in seen_before(les, exp, lang) for lang in LANGS), (number, exp_id, words)


def test_the_check_catches_a_prediction_given_away():
    """The test can fail: a screen that states the answer, in any of the forms above, is caught."""
    from dataclasses import replace
    les = next(x for x in LESSONS if any(e.predict.kind == "number" for e in x.experiments))
    exp = next(e for e in les.experiments if e.predict.kind == "number")
    value = float(exp.expect[exp.predict.of])
    for form in (f"{value:.3g}", f"{value:,.0f}" if value >= 100 else f"{value * 100:.0f}%"):
        text = {lang: f"(It is {form}.) " + les.text[lang] for lang in LANGS}
        leaky = replace(les, text=text)
        assert giveaways(leaky, exp, "en"), form
