"""The look every figure shares (``ui.common.plots``): the process-wide template, and what it
spares the browser."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio

from decoding_lab.ui.common import plots


def test_every_figure_takes_the_apps_template():
    assert pio.templates.default == "decoding-lab"
    fig = go.Figure(dict(data=[dict(type="bar", x=[1, 2], y=[0.5, 0.25])], layout={}))
    sent = json.loads(fig.to_json())["layout"]["template"]      # what gradio sends the page
    assert sent["layout"]["plot_bgcolor"] == "white"             # plotly_white's look
    assert set(sent["data"]) == {"bar", "scatter", "heatmap"}    # and only the trace kinds drawn here


def test_numeric_tick_labels_are_not_measured_for_overflow():
    """Plotly.js hides a numeric axis's tick label that would pass the chart's edge ("hide past
    div"), measuring each label's box in the page to decide; the template turns that off for every
    x and y axis, the second axes of a figure too (a template's ``xaxis`` applies to ``xaxis2``)."""
    fig = plots.figure([dict(type="scatter", x=[0.1, 2.0], y=[1.0, 2.0]),
                        dict(type="bar", x=[1, 2], y=[3, 4], xaxis="x2", yaxis="y2")],
                       plots.look("two axes"))
    template = json.loads(fig.to_json())["layout"]["template"]["layout"]
    assert template["xaxis"]["ticklabeloverflow"] == "allow"
    assert template["yaxis"]["ticklabeloverflow"] == "allow"
    assert "ticklabeloverflow" not in json.dumps(fig.to_dict()["layout"] | {"template": None})   # nothing overrides it
