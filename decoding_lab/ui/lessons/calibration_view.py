"""The learner's own calibration on the page (``decoding_lab.learner_calibration`` keeps the
records): a line under the progress on every screen, and on a lesson's calibration screen
(lesson 11's) the picture, stated confidence against the share right, beside the diagonal."""

from __future__ import annotations

from typing import Any

import gradio as gr
import plotly.graph_objects as go

from decoding_lab import learner_calibration as LC
from decoding_lab.lessons import Lesson
from decoding_lab.ui.lessons.figures import GUESS, font_size
from decoding_lab.ui.lessons.strings import tr


def confidence_choices() -> list[tuple[str, float]]:
    return [(f"{round(c * 100)}%", c) for c in LC.CONFIDENCES]


def calibration_line(lang: str, records: list[dict[str, Any]]) -> str:
    score = LC.brier(records)
    return tr(lang, "calib_none") if score is None else tr(lang, "calib_line", n=len(records), b=score)


def calibration_figure(records: list[dict[str, Any]], lang: str, teacher: bool) -> go.Figure:
    """Each confidence level used: the share right, the dot's size its count; the diagonal is calibration."""
    size = font_size(teacher)
    pts = LC.by_confidence(records)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name=tr(lang, "calib_diag"),
                               line={"color": "#9ca3af", "dash": "dash", "width": 2}))
    if pts:
        you = tr(lang, "calib_you_one") if len(records) == 1 else tr(lang, "calib_you", n=len(records))
        fig.add_trace(go.Scatter(x=[c for c, _, _ in pts], y=[r for _, _, r in pts], mode="markers+text",
                                 name=you, text=[f"n={n}" for _, n, _ in pts],
                                 textposition="top center",
                                 marker={"color": GUESS, "size": [12 + 4 * min(n, 8) for _, n, _ in pts],
                                         "line": {"color": "white", "width": 1}}))
    fig.update_xaxes(title_text=tr(lang, "calib_x"), range=[0, 1.02], tickformat=".0%")
    fig.update_yaxes(title_text=tr(lang, "calib_y"), range=[-0.07, 1.1], tickformat=".0%")   # a dot at 0 or 1 shows whole
    fig.update_layout(font={"size": size}, height=360 + (120 if teacher else 0), margin={"l": 60, "r": 20, "t": 20, "b": 60},
                      legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom", "x": 0.0,
                              "font": {"size": size}}, plot_bgcolor="white")
    fig.update_xaxes(gridcolor="#e5e7eb")
    fig.update_yaxes(gridcolor="#e5e7eb", zerolinecolor="#e5e7eb")
    return fig


def calibration_views(ui: Any, les: Lesson, lang: str, screen: int, calib: Any, teacher: bool) -> dict:
    """The line under the progress, and the picture when ``screen`` (0-based) is the lesson's calibration screen."""
    records = LC.clean(calib)
    here = les.calibration_screen == screen + 1
    out = {ui.calib_line: calibration_line(lang, records), ui.calib_box: gr.update(visible=here)}
    if here:
        head = tr(lang, "calib_head") + ("" if records else "\n\n" + tr(lang, "calib_empty"))
        out.update({ui.calib_text: head, ui.calib_plot: calibration_figure(records, lang, teacher)})
    return out


__all__ = ["confidence_choices", "calibration_line", "calibration_figure", "calibration_views"]
