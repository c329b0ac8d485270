"""Where an event shows its progress: the page's wide events keep their loading status on one
hidden component that nothing ever writes.

Gradio's page keeps a loading status for every component that has ever been an output of an
event that ran (its "progress targets": the outputs, unless ``show_progress_on`` names others),
and on each status message of any event it writes every one of those statuses back into the
page. Two things follow from how it writes one:

* **Cost.** Each write looks the component up with a walk of the whole layout tree, so the work
  per message grows with (components ever tracked) × (components on the page). This page has
  about 580 components, and a few events write hundreds of them at once: the language switch
  (about 300), the link's restore as the page opens (about 190), loading a lesson (about 180).
  Once those had run, every later step, token streamed or refusal paid for them: measured in
  Chromium, the page spent 2.3 s of its 7.2 s start in that loop (``tests/test_progress_targets.py``
  keeps the count).
* **A write can undo another event's value.** Before it stores a status, the page reads the
  component's live ``value`` (and ``open``, ``selected``; for a container, those of every
  component inside it) and, after an ``await``, copies what it read back into the component. A
  value that another event, or the next message of a streaming event, sets in that gap is put
  back to the old one. On a loaded machine this lost a class follower's new screen, and when the
  target was what set an event off (a lesson's link box, the language radio), the value that
  started the event.

``narrow_progress`` therefore gives the page's wide events and its progress-hidden events one
target, ``sink``: a hidden component no event writes, which the page never mounts, so a status
written to it reads nothing and walks nothing:

* an event that shows no progress (``show_progress="hidden"``), a class follower for one, keeps
  one status instead of one per output;
* an event wider than ``WIDE`` outputs that shows progress (the language switch, a lesson's load
  or restore, the link's restore) shows none: each is a rewrite of the page's text that takes a
  moment, and an overlay over hundreds of boxes said no more than the boxes changing.

Narrower events that show progress keep gradio's default, so a step's progress still shows on
the chart and text it is drawing."""

from __future__ import annotations

from typing import Any

#: outputs above which an event that shows progress keeps its status on the sink
WIDE = 30


def narrow_progress(demo: Any, sink: Any) -> int:
    """Give every wide or progress-hidden event of ``demo`` the one progress target ``sink`` (a
    hidden component that no event writes); returns how many events it changed. Call it once the
    page's events are all wired."""
    if any(sink in fn.outputs for fn in demo.fns.values()):
        raise ValueError("the progress sink must be a component that no event writes")
    changed = 0
    for fn in demo.fns.values():
        if fn.show_progress_on or len(fn.outputs) <= 1:
            continue
        if fn.show_progress == "hidden" or len(fn.outputs) > WIDE:
            fn.show_progress_on = [sink]
            changed += 1
    return changed
