"""The Temperature 0 tab in Chinese, as a person runs it: the path names are Chinese, the result
area says which path is running, and the same GGUF on two engines parts at the first token.

Screenshot: /tmp/shots/temperature0_zh.png."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS, open_page

pytestmark = pytest.mark.browser


def test_two_engines_in_chinese_with_progress(blank_page, app_url):
    page = open_page(blank_page, app_url + "?lang=zh", tab="determinism")
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
    # every progress line the page draws is noted as it is drawn: a short run can replace it with
    # the result before a test that polls for it looks
    page.evaluate("""() => { window.dlProgress = []; new MutationObserver(() => {
        const p = document.querySelector('#det-result .det-progress');
        if (p && !window.dlProgress.includes(p.innerText)) window.dlProgress.push(p.innerText);
      }).observe(document.body, {childList: true, subtree: true, characterData: true}); }""")
    page.click("#determinism-run")
    page.wait_for_function("document.querySelector('#det-margins .js-plotly-plot') !== null", timeout=300_000)
    seen = page.evaluate("window.dlProgress")
    assert any("条路径运行中" in line for line in seen), seen
    result = page.inner_text("#det-result")
    assert "llama.cpp 内核，同一个 GGUF 文件" in result and "第 0 步开始不同" in result
    page.screenshot(path=str(SHOTS / "temperature0_zh.png"), full_page=True)


def test_stop_ends_the_run_after_the_running_path(page):
    """Stop during a five-path run: the path that is running finishes, the rest do not run, and
    the result says how many paths finished (with their comparison when at least two did)."""
    page.click("#tab-determinism-button")
    page.fill("#det-prompt textarea", "Tell me a short story about a dragon.")
    page.fill("#det-tokens input[type=number]", "40")
    page.press("#det-tokens input[type=number]", "Tab")
    page.click("#determinism-run")
    page.wait_for_function("document.querySelector('#det-result').innerText.includes('Path 2 of')",
                           timeout=300_000)
    page.click("#determinism-stop")          # says so at once, while the running path finishes
    page.wait_for_function("document.querySelector('#det-result').innerText.includes('Stopping: the path')",
                           timeout=30_000)
    page.wait_for_function("document.querySelector('#det-result').innerText.includes('Stopped after')",
                           timeout=300_000)
    result = page.inner_text("#det-result")
    done = int(result.split("Stopped after ")[1].split(" of ")[0])
    assert 2 <= done < 5, result
    assert "first differs" in result or "identical to the reference" in result   # the finished paths, compared
    page.screenshot(path=str(SHOTS / "temperature0_stopped.png"), full_page=True)
