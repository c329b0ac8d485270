"""Core refusals read in Chinese: a coded error (``decoding_lab.errors.MESSAGES``) is rendered from
its code and parameters by the page's translation function (``ui.common.errors.localised``); a
parser's or engine's own detail stays as it wrote it."""

from __future__ import annotations

import pytest

from decoding_lab.errors import UserError
from decoding_lab.grammar import build_constraint
from decoding_lab.grammar.constraints import GrammarError
from decoding_lab.params import PARAMS
from decoding_lab.settings import SamplingSettings
from decoding_lab.ui.common.errors import localised
from decoding_lab.ui.common.validate import check_choice
from decoding_lab.ui.determinism.handlers import GreedyRequest as DeterminismRequest


@pytest.mark.parametrize("kind, text, head", [
    ("json_schema", "{x", "JSON Schema 不是合法的 JSON（第 1 行第 2 列）："),
    ("regex", "[a-", "无效的正则 '[a-'："),
    ("lark", "start: (", "无效的 Lark 语法（第 1 行第 9 列）："),
    ("gbnf", "root ::= (", "无效的 GBNF 语法："),
    ("choices", "", "选项列表是空的"),
])
def test_grammar_errors_have_a_chinese_head(kind, text, head):
    with pytest.raises(Exception) as err:
        build_constraint(kind, text)
    assert err.value.code, "a grammar refusal the page shows in Chinese carries a code"
    assert localised(err.value, "zh").startswith(head)
    assert localised(err.value, "en") == str(err.value)


def _refusal(call):
    with pytest.raises(UserError) as err:
        call()
    return err.value


@pytest.mark.parametrize("call, en, zh", [
    (lambda: check_choice("prompt format", "poem", ["chat", "raw"]),
     "prompt format must be one of chat, raw; got 'poem'", "prompt format 必须是以下之一：chat, raw；收到的是 'poem'"),
    (lambda: DeterminismRequest.check_prompt("  "), "the prompt is empty: type some text first", "提示词为空：请先输入文字"),
    (lambda: DeterminismRequest.check_variants(["float32, cached"]), "choose at least two numerical paths to compare",
     "请至少选两条数值路径来比较"),
    (lambda: PARAMS["top_p"].check(1.5), "top-p must be <= 1, got 1.5", "top-p 必须 <= 1，收到的是 1.5"),
    (lambda: SamplingSettings(order="top-p,top-p"), "stage order names top-p more than once",
     "阶段顺序里 top-p 出现了不止一次"),
])
def test_request_refusals_in_chinese(call, en, zh):
    err = _refusal(call)
    assert (str(err), localised(err, "en"), localised(err, "zh")) == (en, en, zh)


def test_every_code_has_its_english_and_chinese_with_the_same_placeholders():
    import string
    from decoding_lab.errors import MESSAGES
    from decoding_lab.ui.common.i18n import EN, ZH

    def fields(text):
        return sorted(f for _, f, _, _ in string.Formatter().parse(text) if f)
    for code, text in MESSAGES.items():
        assert EN[f"err.{code}"] == text
        assert fields(ZH[f"err.{code}"]) == fields(text), code


def test_an_uncoded_refusal_keeps_the_cores_english():
    from decoding_lab.errors import SettingsError
    assert localised(SettingsError("something else went wrong"), "zh") == "something else went wrong"


def test_the_busy_compiler_reads_in_chinese():
    err = GrammarError.coded("compiler_busy", busy=2, setting="DECODING_LAB_GRAMMAR_WORKERS")
    assert str(err) == ("the grammar compiler is busy with 2 other grammar(s); try again in a moment "
                        "(DECODING_LAB_GRAMMAR_WORKERS)")
    assert localised(err, "zh") == "语法编译器正忙于另外 2 个语法；请稍后再试 (DECODING_LAB_GRAMMAR_WORKERS)"
