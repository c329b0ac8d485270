"""The first minute: a strip on a visitor's first visit that says how to read the screen, in
three lines, with one button that loads a step where decoding visibly cuts something (and then
scrolls its bars into view) and one that opens the Lessons tab, where a newcomer should start.

Whether the visitor has seen it lives in their browser (``localStorage``), so nothing about
them is kept on the server. The page starts with the strip hidden (CSS); a page-load script
adds the ``dl-new`` class to ``<body>`` for a first visit, which shows it; "Show me a cut"
and "Got it" remember the visit and hide it.

The preset was measured on the bundled SmolLM2 with the core (``Stepper.from_prompt(lm,
"Tell me a story.", chat=True, SamplingSettings(temperature=1, top_k=10, top_p=0.7, seed=1))``
then ``step()``): four tokens are kept, top-p cuts six (the largest, "One", at p ≈ 0.12) and
top-k the other ten of the twenty shown."""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.ui.common.state import Labels
from decoding_lab.ui.explorer.parts import OnboardingParts
from decoding_lab.ui.explorer.strings import tr

#: Loads like a lesson preset (``handlers.fill``): prompt, settings, then the steps.
CUT_PRESET: dict[str, Any] = {"prompt": "Tell me a story.", "chat": True, "steps": 1,
                              "settings": {"temperature": 1.0, "top_k": 10, "top_p": 0.7, "seed": 1}}
SEEN_KEY = "decoding-lab-onboarded"
SHOW_IF_NEW_JS = f"() => {{ if (!localStorage.getItem('{SEEN_KEY}')) document.body.classList.add('dl-new'); }}"
REMEMBER_JS = f"() => {{ localStorage.setItem('{SEEN_KEY}', '1'); document.body.classList.remove('dl-new'); }}"
#: "Start with the lessons": the Lessons tab's own button, pressed (no server round trip).
OPEN_LESSONS_JS = "() => { const b = document.querySelector('#tab-lessons-button'); if (b) b.click(); return []; }"
#: After "Show me a cut": bring the chart's bars (the cut) into the window, keeping as much of the
#: status line and the text above it as fits. At 1366 x 768 the chart starts about 600 px down and
#: its cut bars would sit below the fold. Waits for the new step's chart (its data carries the cut
#: stages) for up to three seconds.
SCROLL_TO_CUT_JS = """() => {
  const go = (tries) => {
    const chart = document.querySelector('#dist-chart'), plot = chart && chart.querySelector('.js-plotly-plot');
    const ready = plot && plot.data && plot.data.some((d) => String(d.name || '').includes('✂'));
    if (!ready && tries > 0) { setTimeout(() => go(tries - 1), 100); return; }
    if (!chart) return;
    const status = document.querySelector('#status'), box = chart.getBoundingClientRect();
    const want = box.bottom + window.scrollY - window.innerHeight + 8;   // the chart's bottom edge in view
    // on a wide screen never past the status line (it says what was loaded); on a phone, where
    // both do not fit, the chart comes first, but never past its own top
    const limit = window.innerWidth < 720 ? box.top + window.scrollY - 8
      : (status ? status.getBoundingClientRect().top + window.scrollY - 8 : want);
    window.scrollTo({top: Math.max(0, Math.min(want, limit)), behavior: 'instant'});
  };
  setTimeout(() => go(30), 60);
  return [];
}"""


def strip(L: Labels, lang: str) -> OnboardingParts:
    """The strip's components (laid out where it is called)."""
    with gr.Group(elem_id="onboard"):
        text = L(gr.Markdown(tr(lang, "onboard_md"), elem_id="onboard-text"), "explorer.onboard_md", "value")
        with gr.Row():
            show = L(gr.Button(tr(lang, "onboard_show"), variant="primary", elem_id="onboard-show", scale=0,
                               min_width=200), "explorer.onboard_show", "value")
            lessons = L(gr.Button(tr(lang, "onboard_lessons"), elem_id="onboard-lessons", scale=0, min_width=240),
                        "explorer.onboard_lessons", "value")
            hide = L(gr.Button(tr(lang, "onboard_hide"), elem_id="onboard-hide", scale=0, min_width=120,
                               size="sm"), "explorer.onboard_hide", "value")
    return OnboardingParts(text=text, show=show, hide=hide, lessons=lessons)


def wire(page: Any, ui: OnboardingParts, load_cut: tuple[Any, list[Any], list[Any]]) -> None:
    """``load_cut``: (handler, inputs, outputs) that fills the Explorer with ``CUT_PRESET``."""
    if page is not None:
        page.load(None, None, None, js=SHOW_IF_NEW_JS)
    ui.hide.click(None, None, None, js=REMEMBER_JS)
    ui.show.click(None, None, None, js=REMEMBER_JS)
    fn, inputs, outputs = load_cut
    ui.show.click(fn, inputs, outputs, api_name="explorer_show_a_cut", concurrency_id="model",
                  show_progress="minimal").success(None, None, None, js=SCROLL_TO_CUT_JS)
    # the strip stays until "Got it": a newcomer may read the lessons first and come back
    ui.lessons.click(None, None, None, js=OPEN_LESSONS_JS)
