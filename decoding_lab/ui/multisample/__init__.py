"""Many samples: read a precomputed temperature x truncation sweep (``assets/sweeps``) and show
pass@k against temperature, the best temperature for each k, a temperature x truncation heatmap,
every cell as a table, the command that made the file, and CSV / JSON downloads.

The sweep part runs no model: the tab opens on the shipped file. Below it: the calibrated-temperature
result fitted on the same sweep (``ctd``, from the shipped CTD file) and a live verifier-tilted run
on the default model (``tilt``). Per-visitor state: the view choices (``parts.view``) and the last
tilted runs (``parts.tilt.last``).

Files: ``strings`` (the ``multisample``, ``tilt`` and ``ctd`` namespaces), ``data`` (the shipped
files, cached read-only), ``views`` / ``ctd`` / ``tilt_views`` (figures and tables), ``layout``
(components), ``handlers`` (the sweep's events, relabel, fill) and ``tilt`` (the live run)."""

from __future__ import annotations

from decoding_lab.ui.common.tab import TabContext, TabUI
from decoding_lab.ui.multisample import handlers, layout
from decoding_lab.ui.multisample.data import default_view
from decoding_lab.ui.multisample.views import content

__all__ = ["build"]


def build(ctx: TabContext) -> TabUI:
    """Lay out and wire the tab inside the current ``gr.Tab``. The tilt demo always runs on the
    bundled default model, so the tab needs no model picker; its runs take a slot of ``ctx.jobs``."""
    ui = layout.build(ctx.lang, ctx.labels, content(ctx.lang, default_view()))
    events = handlers.wire(ui, ctx.lang_state, ctx.jobs)
    return TabUI(
        name="multisample",
        states=[ui.view, ui.tilt.last],
        views=handlers.relabel_views(ui),
        relabel=lambda lang, view=None, tilt_last=None: handlers.relabel(ui, lang, view, tilt_last),
        fill=lambda preset, lang="en": handlers.fill(ui, preset, lang),
        fill_outputs=list(ui.tilt.controls.values()),
        events=events,
        parts=ui,
        link={"file": ui.file, "k": ui.k, "metric": ui.metric, "trunc": ui.trunc,
              **{f"tilt.{k}": c for k, c in ui.tilt.controls.items()}},
        link_restore=lambda values, lang: handlers.link_restore(ui, values, lang),
        link_restore_outputs=handlers.sweep_outputs(ui),
    )
