"""A lesson screen's lab: under the result of a run, the experiment's picture with the one or two
controls its screen is about (``decoding_lab.lesson_labs`` computes; ``lab_figures`` draws).

It shows once the learner has run the screen's experiment, so it can give no prediction away, and
it draws from that run: a step experiment keeps the logits its first variant read (in the tab's
per-session ``runs`` state, never in the browser), and moving a control runs the real stage chain
on them again, with no model call. A sweep experiment's lab reads the same shipped file. Sliders
answer on release, so dragging one sends one request, not fifty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from decoding_lab import lesson_labs as L
from decoding_lab.errors import SettingsError
from decoding_lab.lesson_runs import Experiment
from decoding_lab.lessons import Lesson
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.lessons import lab_figures as F
from decoding_lab.ui.lessons.strings import tr


@dataclass(slots=True)
class LabParts:
    box: gr.Group
    head: gr.Markdown
    t: gr.Slider          # temperature (step labs)
    x: gr.Slider          # top-p (cuts) or k (passk)
    pick: gr.Radio        # the engine order (order)
    plot: gr.Plot
    bars: gr.Plot         # the top tokens' fates (temperature, cuts, order)
    stats: gr.Markdown


def build(lang: str) -> LabParts:
    with gr.Group(visible=False, elem_id="lesson-lab") as box:
        head = gr.Markdown("", elem_id="lesson-lab-head")
        with gr.Row(equal_height=False):
            t = gr.Slider(L.T_RANGE[0], L.T_RANGE[1], value=1.0, step=0.05, label=tr(lang, "lab_T"),
                          elem_id="lesson-lab-t")
            x = gr.Slider(0.05, 1.0, value=0.9, step=0.01, label=tr(lang, "lab_top_p"), visible=False,
                          elem_id="lesson-lab-x")
            pick = gr.Radio(list(PRESET_ORDERS), value="transformers", label=tr(lang, "lab_order"), visible=False,
                            elem_id="lesson-lab-order")
        stats = gr.Markdown("", elem_id="lesson-lab-stats")
        with gr.Row(equal_height=False):      # side by side on a wide screen, one above the other on a phone
            plot = gr.Plot(show_label=False, min_width=300, elem_id="lesson-lab-plot")
            bars = gr.Plot(show_label=False, visible=False, min_width=300, elem_id="lesson-lab-bars")
    return LabParts(box, head, t, x, pick, plot, bars, stats)


def outputs(lab: LabParts) -> list[Any]:
    return [lab.box, lab.head, lab.t, lab.x, lab.pick, lab.plot, lab.bars, lab.stats]


def hidden(lab: LabParts) -> dict:
    return {lab.box: gr.update(visible=False), lab.head: "", lab.t: gr.update(), lab.x: gr.update(),
            lab.pick: gr.update(), lab.plot: gr.update(value=None), lab.bars: gr.update(visible=False, value=None),
            lab.stats: ""}


def start(exp: Experiment) -> tuple[float, float | None, str]:
    """The controls' first values: the experiment's own temperature, top-p (or k = 1) and order."""
    first = {**exp.settings, **(exp.variants[0].settings if exp.variants else {})}
    T = min(max(float(first.get("temperature", 1.0) or 1.0), L.T_RANGE[0]), L.T_RANGE[1])
    x = 1.0 if exp.lab == "passk" else float(first.get("top_p", exp.settings.get("top_p", 0.9)) or 0.9)
    order = str(first.get("order", "transformers"))
    return T, x, order if order in PRESET_ORDERS else "transformers"


def controls(lab: LabParts, exp: Experiment, lang: str, T: float, x: float | None, order: str) -> dict:
    """The controls the lab's kind uses, at the given values (the others hidden)."""
    kind = exp.lab
    out = {lab.t: gr.update(visible=kind in L.STEP_LABS, value=T, label=tr(lang, "lab_T")),
           lab.pick: gr.update(visible=kind == "order", value=order, label=tr(lang, "lab_order"))}
    if kind == "cuts":
        out[lab.x] = gr.update(visible=True, minimum=0.05, maximum=1.0, step=0.01, value=x, label=tr(lang, "lab_top_p"))
    elif kind == "passk":
        size = L.sweep_size(_sweep(exp))
        out[lab.x] = gr.update(visible=True, minimum=1, maximum=size, step=1, value=int(x or 1), label=tr(lang, "lab_k"))
    else:
        out[lab.x] = gr.update(visible=False)
    return out


def _sweep(exp: Experiment) -> dict[str, Any]:
    from decoding_lab.lesson_runs import _shipped
    return _shipped(exp)


def drawn(lab: LabParts, exp: Experiment, run: dict[str, Any] | None, lang: str, teacher: bool, T: float,
          x: float | None, order: str) -> dict:
    """The lab's picture(s) and numbers at these control values (raises SettingsError for a bad value)."""
    kind = exp.lab
    if kind == "passk":
        k = int(x or 1)
        result = _sweep(exp)
        if not 1 <= k <= L.sweep_size(result):
            raise SettingsError(f"k must lie in 1 … {L.sweep_size(result)}, got {x}")
        lines = L.passk_lines(result, k)
        rule, bT, p = F.best_cell(lines)
        hot = max(T for pts in lines.values() for T, _, _ in pts)
        at_hot = " · ".join(f"{F.rule_name(r, lang)} {dict((T, q) for T, q, _ in pts).get(hot, float('nan')) + 1e-9:.2f}"
                            for r, pts in lines.items())
        best = tr(lang, "lab_best", rule=F.rule_name(rule, lang), T=bT, p=p)
        return {lab.plot: F.passk_figure(lines, k, lang, teacher), lab.bars: gr.update(visible=False, value=None),
                lab.stats: tr(lang, "lab_stats_passk", k=k, hot=hot, at_hot=at_hot, best=best)}
    step = (run or {}).get("lab_step")
    if step is None:
        return {lab.plot: gr.update(value=None), lab.bars: gr.update(visible=False, value=None),
                lab.stats: tr(lang, "lab_no_step")}
    settings = L.lab_settings(kind, {**exp.settings, **exp.variants[0].settings}, T, top_p=x,
                              order=order if kind == "order" else None)
    from decoding_lab.models import get_model
    lm = get_model(step.model)
    view = L.look(step, settings, lm.token_str)
    if kind == "temperature":
        tops = ", ".join(f"{F.shown(r.token)} {r.p_T:.2f}" for r in sorted(view.rows, key=lambda r: -r.p_T)[:4])
        stats = tr(lang, "lab_stats_temperature", T=T, h=view.entropy_T, slope=view.dH_dT, tops=tops)
        plot = F.entropy_figure(view, lang, teacher)
    elif kind == "tail":
        stats = tr(lang, "lab_stats_tail", T=T, mass=view.tail_mass, count=view.tail_count, vocab=view.vocab)
        plot = F.tail_figure(view, lang, teacher)
    elif kind == "cuts":
        stats = tr(lang, "lab_stats_cuts", T=T, p=settings.top_p, kept_p=view.top_p_kept or view.vocab,
                   kept_m=view.min_p_kept, vocab=view.vocab)
        plot = F.cuts_figure(view, lang, teacher)
    else:
        stats = tr(lang, "lab_stats_order", T=T, order=order, kept=view.kept)
        plot = F.order_figure(view, lang, teacher)
    bars = kind != "tail"
    return {lab.plot: plot, lab.bars: gr.update(visible=bars, value=F.bars_figure(view, lang, teacher) if bars else None),
            lab.stats: stats}


def lab_views(lab: LabParts, les: Lesson, exp: Experiment | None, run: dict[str, Any] | None, lang: str,
              teacher: bool) -> dict:
    """The whole lab for a screen: hidden until its experiment has run, then at its starting values."""
    if exp is None or not exp.lab or not run:
        return hidden(lab)
    T, x, order = start(exp)
    out = {lab.box: gr.update(visible=True), lab.head: tr(lang, "lab_head", hint=tr(lang, "lab_hint_" + exp.lab)),
           **controls(lab, exp, lang, T, x, order)}
    try:
        out.update(drawn(lab, exp, run, lang, teacher, T, x, order))
    except SettingsError as e:        # a shipped file or step that cannot be drawn: say so, keep the lesson
        out.update({lab.plot: gr.update(value=None), lab.bars: gr.update(visible=False), lab.stats: str(e)})
    return out


__all__ = ["LabParts", "build", "outputs", "hidden", "lab_views", "drawn", "start", "controls"]
