"""The Temperature 0 tab in Chinese, as a person runs it: the path names are Chinese, the result
area says which path is running, and the same GGUF on two engines parts at the first token.

Screenshot: /tmp/shots/temperature0_zh.png."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser


def test_two_engines_in_chinese_with_progress(page, app_url):
    open_page(page, app_url + "?lang=zh", tab="determinism")
    page.wait_for_function("document.querySelector('#det-variants').innerText.includes('同一个 GGUF 文件')")
    labels = page.locator("#det-variants label").all_inner_texts()
    assert "llama.cpp 内核，同一个 GGUF 文件" in labels and "float32，使用 KV 缓存" in labels
    for name in ("float32，每步整段重算", "bfloat16，使用 KV 缓存", "与更长的提示词同批处理"):
        box = page.locator("#det-variants label", has_text=name).locator("input")
        if box.is_checked():
            box.uncheck()
    page.fill("#det-prompt textarea", "What is the capital of France?")
    page.fill("#det-tokens input[type=number]", "6")
    page.press("#det-tokens input[type=number]", "Enter")
    page.click("#determinism-run")
    page.wait_for_selector("#det-result .det-progress", timeout=120_000)
    assert "条路径运行中" in page.inner_text("#det-result")
    page.wait_for_function("document.querySelector('#det-margins .js-plotly-plot') !== null", timeout=300_000)
    result = page.inner_text("#det-result")
    assert "llama.cpp 内核，同一个 GGUF 文件" in result and "第 0 步开始不同" in result
    page.screenshot(path=str(SHOTS / "temperature0_zh.png"), full_page=True)
