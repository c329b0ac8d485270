"""The Explorer's teaching views, on the tiny random model (fast, no browser): the probability a
token had when a stage cut it, and the distribution chart's series (one per fate)."""

from __future__ import annotations

import pytest
import torch

from decoding_lab.settings import SamplingSettings
from decoding_lab.stats import probs
from decoding_lab.stepper import Stepper
from decoding_lab.ui.explorer.chart import dist_chart, fmt_p, log_ticks


def cut_trace(tiny_lm, **kw):
    settings = SamplingSettings(**{"temperature": 1.5, "top_k": 5, "top_p": 0.5, "seed": 3, **kw})
    return Stepper(tiny_lm, [5, 6, 7], settings, top_n=12).step()


def test_p_cut_is_the_probability_entering_the_cutting_stage(tiny_lm):
    st = Stepper(tiny_lm, [5, 6, 7], SamplingSettings(temperature=1.5, top_k=5, top_p=0.5), top_n=12)
    raw = st._next_logits.clone()
    trace = st.step()
    assert [s.name for s in trace.stages] == ["temperature", "top-k", "top-p"]
    entering_top_k = probs(raw / 1.5)                       # temperature ran first
    by_top_k = [r for r in trace.top if r.cut_by == "top-k"]
    assert by_top_k, "top-k 5 of 12 shown tokens must cut some"
    for r in by_top_k:
        assert r.p_cut == pytest.approx(float(entering_top_k[r.token_id]), rel=1e-5)
        assert r.p_cut > r.p_raw   # T = 1.5 flattened the tail before top-k removed it
    kept = [r for r in trace.top if r.cut_by is None]
    assert kept and all(r.p_cut is None for r in kept)
    assert "p_cut" not in trace.top[0].to_json()   # the CLI's rows keep their shape


def test_chart_has_one_series_per_fate(tiny_lm):
    trace = cut_trace(tiny_lm)
    fig = dist_chart(trace, "en")
    names = [d.name for d in fig.data]
    assert names[:3] == ["p raw (T = 1)", "p final (sampled from)", "chosen (drawn at random from p final)"]
    assert set(names[3:]) == {"✂ cut by top-k (p when cut)", "✂ cut by top-p (p when cut)"}
    assert list(fig.data[0].customdata) == [r.token_id for r in trace.top]
    assert list(fig.data[1].y) == pytest.approx([r.p_final for r in trace.top])
    by_id = {r.token_id: r for r in trace.top}
    for d in fig.data[3:]:
        stage = d.name.split("by ")[1].split(" ")[0]
        assert all(by_id[i].cut_by == stage for i in d.customdata)
        assert list(d.y) == pytest.approx([by_id[i].p_cut for i in d.customdata])
        assert d.marker.color not in (fig.data[1].marker.color, fig.data[2].marker.color)
    assert fig.data[3].marker.color != fig.data[4].marker.color   # one colour per stage
    assert all(d.text is None for d in fig.data)                     # no text drawn on the bars
    assert fig.layout.legend.yref == "container" and fig.layout.legend.y == 0   # under the plot, not the title


def test_greedy_says_argmax_and_chinese_hover(tiny_lm):
    trace = Stepper(tiny_lm, [5, 6, 7], SamplingSettings(temperature=0.0, top_k=3), top_n=8).step()
    names = [d.name for d in dist_chart(trace, "en").data]
    assert "chosen = argmax (greedy)" in names and "p final (greedy takes the highest)" in names
    assert not any("sampled" in n or "random" in n for n in names)
    zh = dist_chart(trace, "zh")
    cut = next(d for d in zh.data if "top-k" in d.name)
    assert cut.name == "✂ 被 top-k 截断（截断时的概率）" and "移除它时" in cut.hovertext[0]


def test_log_view_has_one_tick_per_decade(tiny_lm):
    fig = dist_chart(cut_trace(tiny_lm), "en", log_y=True)
    assert fig.layout.yaxis.type == "log"
    vals = list(fig.layout.yaxis.tickvals)
    assert all(b / a == pytest.approx(10) for a, b in zip(vals, vals[1:]))
    assert log_ticks(-4) == ([1e-4, 1e-3, 1e-2, 0.1, 1.0], ["10⁻⁴", "10⁻³", "0.01", "0.1", "1"])
    assert (fmt_p(0.0), fmt_p(0.25), fmt_p(4.2e-6)) == ("0", "0.2500", "4.2e-06")


def test_busy_refusal_becomes_a_notice_not_an_error():
    import gradio as gr
    from decoding_lab.ui.common.i18n import t
    from decoding_lab.ui.explorer.busy import calm_when_busy

    def busy(lang):
        raise gr.Error(t(lang, "busy"))

    def broken(lang):
        raise gr.Error("something else")

    def stream(lang):
        yield {"a": 1}
        raise gr.Error(t(lang, "busy"))

    status = object()
    out = calm_when_busy(busy, status)("zh")
    assert list(out) == [status]                                   # nothing else on the page changes
    with pytest.raises(gr.Error, match="something else"):
        calm_when_busy(broken, status)("en")
    assert [list(x) for x in calm_when_busy(stream, status)("en")] == [["a"], [status]]
