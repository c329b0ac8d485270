"""Text from outside never becomes Markdown in a status line: a constraint set by a share link
(the Grammar tab) and the text a model wrote (the Beam tab) are shown as typed, so an image or a
link in them is not fetched or followed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from decoding_lab.ui.common.markdown import code_span

BEACON = "![a](http://127.0.0.1:9/b.png) [log in](http://127.0.0.1:9/)"


def rendered(md: str) -> str:
    """``md`` as CommonMark HTML (the browser's converter follows CommonMark for code spans,
    images and links)."""
    import markdown_it
    return markdown_it.MarkdownIt("commonmark").render(md)


@pytest.mark.parametrize("text", [BEACON, "`![a](x)`", "``` ![b](y) ```", "a|b <img src=x>"])
def test_a_code_span_is_never_markup(text):
    html = rendered(code_span(text))
    assert "<img" not in html and "<a " not in html and "<code>" in html


def test_the_grammar_status_shows_the_constraint_as_typed():
    from decoding_lab.ui.grammar import views
    session = SimpleNamespace(model_name="smollm2-135m-instruct", constraint=f"regex: {BEACON}"[:48],
                              compile_seconds=0.004, stepper=SimpleNamespace(traces=[], prompt_ids=[1, 2, 3]))
    for lang in ("en", "zh"):
        html = rendered(views.status_md(lang, session))
        assert "<img" not in html and "<a " not in html and "![a](" in html


def test_the_beam_status_shows_the_model_s_text_as_typed():
    from decoding_lab.ui.beam import views
    tree = SimpleNamespace(stop_reason="max_new_tokens", steps=[1, 2], hypotheses=[1])
    result = SimpleNamespace(beam_tree=tree, done=True, text=f"Copy: {BEACON}\nCopy:")
    for lang in ("en", "zh"):
        html = rendered(views.status_text(result, lang))
        assert "<img" not in html and "<a " not in html and "![a](" in html


def test_plotly_text_shows_a_token_as_typed():
    """Plotly reads <b> and <a href> in hover text and labels; a Hub model's vocabulary may hold
    such tokens, so the charts escape them (plotly turns the entities back into the characters)."""
    from decoding_lab.ui.common.plots import token_labels
    from decoding_lab.ui.explorer.chart import hover_text
    row = SimpleNamespace(token="<a href='http://x'>", token_id=7, rank=1, logit=1.0, p_raw=0.5, p_final=0.5,
                          cut_by=None, p_cut=None)
    trace = SimpleNamespace(chosen_token_id=3, forced=False, greedy=True)
    text = hover_text(row, trace, "en")
    assert "<a" not in text and "&lt;a␣href=" in text
    assert token_labels([row]) == ["#1 &lt;a␣href='http://x'&gt;"]
