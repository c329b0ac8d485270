"""Where an event shows its progress, kept to one component for the page's wide events.

Gradio's page keeps a loading status for every component that has ever been an output of an
event that ran (its "progress targets": the outputs, unless ``show_progress_on`` names others),
and on each status message of any event it writes every one of those statuses back into the
page, finding each component by a walk of the whole layout tree. The work per message therefore
grows with (components ever tracked) × (components on the page). This page has about 580
components, and a few events write hundreds of them at once: the language switch (about 300),
the link's restore as the page opens (about 190), loading a lesson (about 180). Once those have
run, every later step, token streamed or refusal pays for them: measured in Chromium, the page
spent 2.3 s of its 7.2 s start in that loop (``tests/test_progress_targets.py`` keeps the count).

``narrow_progress`` names one component as the progress target of such events:

* an event that shows no progress (``show_progress="hidden"``) gets its first output, the
  status it keeps then costs one component instead of all of them;
* an event wider than ``WIDE`` outputs that shows progress shows it on what set it off (the
  language radio, the lesson's Load button) or, for a chained or page-load event, its first
  output, instead of an overlay over every box it writes.

Narrower events keep gradio's default, so a step's progress still shows on the chart and text
it is drawing."""

from __future__ import annotations

from typing import Any

#: outputs above which an event that shows progress shows it on one component
WIDE = 30


def narrow_progress(demo: Any) -> int:
    """Give every wide or progress-hidden event of ``demo`` one progress target; returns how many
    events it changed. Call it once the page's events are all wired."""
    changed = 0
    for fn in demo.fns.values():
        if fn.show_progress_on or len(fn.outputs) <= 1:
            continue
        if fn.show_progress == "hidden":
            anchor = fn.outputs[0]
        elif len(fn.outputs) > WIDE:
            anchor = _trigger(demo, fn) or fn.outputs[0]
        else:
            continue
        fn.show_progress_on = [anchor]
        changed += 1
    return changed


def _trigger(demo: Any, fn: Any) -> Any | None:
    """The component whose event starts ``fn`` (a button, a radio), or None for a page load or an
    event chained after another one."""
    from gradio.components import Component
    for block_id, _event in fn.targets:
        block = demo.blocks.get(block_id) if block_id is not None else None
        if isinstance(block, Component):
            return block
    return None
