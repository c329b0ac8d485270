"""Lesson pictures keep their legend clear of the x axis on every screen: it is anchored to the
figure's bottom edge (plotly then grows the margin for it), and a long legend gets more height,
so on a phone, where each entry takes a row, the plot keeps its room."""

from __future__ import annotations

import pytest

from decoding_lab.lessons import load_lessons
from decoding_lab.ui.lessons.figures import experiment_figure

FOUR_SHAPES = next(e for les in load_lessons() if les.number == 5 for e in les.experiments if e.id == "four-shapes")


def curves_run() -> dict:
    curve = {"rank": [1, 10, 100, 1000], "p": [0.5, 0.01, 1e-3, 1e-5], "kept": 10, "min_p": 1, "top_k": 40}
    return {"values": {v.key: 10 for v in FOUR_SHAPES.variants}, "guess": "500",
            "curves": {v.key: dict(curve) for v in FOUR_SHAPES.variants}}


@pytest.mark.parametrize("teacher, base", [(False, 340), (True, 460)])
def test_the_legend_sits_under_the_x_axis_title_with_room_for_its_rows(teacher, base):
    fig = experiment_figure(FOUR_SHAPES, curves_run(), "en", "en", teacher)
    legend = fig.layout.legend
    assert legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    entries = sum(1 for t in fig.data if t.name and t.showlegend is not False)
    assert entries == 7  # four shapes, the two marks' key, the guess
    assert fig.layout.height == base + 3 * 2 * (24 if teacher else 13)
