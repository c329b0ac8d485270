"""The Explorer's engine controls as a person uses them: pick "start from llama-server's defaults"
and read the settings it filled; open "what each order preset follows" and read the versions.

Screenshot: /tmp/shots/engines_defaults.png."""

from __future__ import annotations

import pytest

from conftest_app import SHOTS

pytestmark = pytest.mark.browser


def test_engine_defaults_fill_the_settings_and_the_note_names_the_versions(page):
    page.click("#engine-defaults input")
    page.get_by_role("option", name="llama-server: T 0.8, top-k 40, top-p 0.95, min-p 0.05").click()
    page.wait_for_function("document.querySelector('#order-preset input').value === 'llama.cpp'", timeout=60_000)
    assert page.input_value("#temperature input[type=number]") == "0.8"
    assert page.input_value("#top-k input[type=number]") == "40"
    assert page.input_value("#top-p input[type=number]") == "0.95"
    assert page.input_value("#min-p input[type=number]") == "0.05"
    page.click("#engine-presets-box button")
    note = page.inner_text("#engine-presets")
    assert "llama.cpp 0c1e57098bba" in note and "last 64 tokens, prompt included" in note
    assert "No typical-p" in note
    page.locator("#engine-defaults").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "engines_defaults.png"), full_page=False)
