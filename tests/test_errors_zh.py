"""Core refusals read in Chinese where their shape is known (``ui.common.errors.localised``): the
head of the message is translated; a parser's or engine's own detail stays as it wrote it."""

from __future__ import annotations

import pytest

from decoding_lab.grammar import build_constraint
from decoding_lab.ui.common.errors import localised


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
    assert localised(str(err.value), "zh").startswith(head)
    assert localised(str(err.value), "en") == str(err.value)


@pytest.mark.parametrize("message, zh", [
    ("prompt format must be one of chat, raw; got 'poem'", "prompt format 必须是以下之一：chat, raw；收到的是 'poem'"),
    ("the prompt is empty", "提示词为空：请先输入文字"),
    ("choose at least two numerical paths to compare", "请至少选两条数值路径来比较"),
    ("the grammar compiler is busy with 2 other grammar(s); try again in a moment (DECODING_LAB_GRAMMAR_WORKERS)",
     "语法编译器正忙于另外 2 个语法；请稍后再试 (DECODING_LAB_GRAMMAR_WORKERS)"),
])
def test_request_refusals_in_chinese(message, zh):
    assert localised(message, "zh") == zh
