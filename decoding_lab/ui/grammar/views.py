"""The Grammar tab's views, drawn from the core's records: the "how hard the grammar pushed"
chart (allowed tokens and removed probability per step, from each trace's ``GrammarMask``
record), the forbidden favourites, the generated text, the timings, the constrained-vs-free
columns and the token-healing tables. Nothing is computed here but layout."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from decoding_lab.grammar import GrammarMask, preset
from decoding_lab.grammar.stage import GrammarExtra, mask_seconds_per_token
from decoding_lab.ui.common.markdown import code_span
from decoding_lab.ui.common.plots import BLUE, FONT, ORANGE, show_token
from decoding_lab.ui.grammar.parts import GrammarParts
from decoding_lab.ui.grammar.strings import tr

if TYPE_CHECKING:
    from decoding_lab.ui.grammar.session import GrammarSession

FORBIDDEN_ROWS = 12


def preset_source(name: str) -> str:
    """What the (read-only) text area shows for a preset."""
    c = preset(name)
    if c.kind == "json_schema":
        return json.dumps(c.schema, indent=2, ensure_ascii=False)
    if c.kind == "choices":
        return "\n".join(c.options or [])
    return c.source


def _grammar_record(trace: Any) -> Any:
    """The step's ``GrammarMask`` record (its ``extra`` a ``GrammarExtra``), or None."""
    r = trace.record(GrammarMask)
    return r if r is not None and isinstance(r.extra, GrammarExtra) else None


def trace_figure(lang: str, session: "GrammarSession | None") -> go.Figure:
    """Allowed-token count (log y) and removed probability per step, from the stepper's records."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, row_heights=[0.6, 0.4])
    traces = session.stepper.traces if session is not None else []
    recs = [(trace, _grammar_record(trace)) for trace in traces]
    recs = [(trace, r) for trace, r in recs if r is not None]
    if not recs:
        fig.add_annotation(text=tr(lang, "empty_trace"), showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                           font=dict(size=14, color="#6b7280"))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
    else:
        xs = [trace.step for trace, _ in recs]
        allowed = [r.extra.allowed for _, r in recs]
        forced = [r.extra.forced for _, r in recs]
        hover = [tr(lang, "trace_hover", step=trace.step, token=html.escape(show_token(trace.chosen_token)), allowed=a,
                    removed=r.removed_mass) for (trace, r), a in zip(recs, allowed)]
        fig.add_scatter(x=xs, y=allowed, mode="lines+markers", name=tr(lang, "allowed"), row=1, col=1,
                        line=dict(color=BLUE, width=2), hovertext=hover, hoverinfo="text",
                        marker=dict(size=[11 if f else 7 for f in forced],
                                    color=[ORANGE if f else BLUE for f in forced]))
        fig.add_scatter(x=[x for x, f in zip(xs, forced) if f], y=[a for a, f in zip(allowed, forced) if f],
                        mode="markers", name=tr(lang, "forced"), marker=dict(color=ORANGE, size=11), row=1, col=1,
                        hoverinfo="skip")
        fig.add_bar(x=xs, y=[r.removed_mass for _, r in recs], name=tr(lang, "removed"), marker_color=ORANGE,
                    hovertext=hover, hoverinfo="text", row=2, col=1)
        top = max(allowed + [10])
        fig.update_yaxes(type="log", dtick=1, exponentformat="power", title=tr(lang, "allowed_axis"),
                         range=[-0.2, len(str(int(top))) + 0.1], row=1, col=1)
        fig.update_yaxes(title=tr(lang, "mass_axis"), range=[0, 1], row=2, col=1)
        fig.update_xaxes(title=tr(lang, "step_axis"), row=2, col=1)
    fig.update_layout(title=dict(text=tr(lang, "trace_title"), x=0.01, font=dict(size=14)), height=380, font=FONT,
                      margin=dict(l=60, r=20, t=50, b=40), bargap=0.2,
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig


def forbidden_table(lang: str, session: "GrammarSession | None") -> pd.DataFrame:
    """The model's top tokens that the grammar cut at the latest step (as the trace recorded them)."""
    cols = [tr(lang, "col_token"), tr(lang, "col_id"), tr(lang, "col_rank"), tr(lang, "col_p")]
    st = session.stepper if session is not None else None
    if st is None or not st.traces:
        return pd.DataFrame([], columns=cols)
    rows = sorted((r for r in st.traces[-1].top if r.cut_by == GrammarMask.name),
                  key=lambda r: -r.p_raw)[:FORBIDDEN_ROWS]
    if not rows:
        return pd.DataFrame([[tr(lang, "none_forbidden"), "", "", ""]], columns=cols)
    # three significant digits: far down the ranking a forbidden token's p is tiny, not zero
    return pd.DataFrame([[show_token(r.token), r.token_id, r.rank, float(f"{r.p_raw:.3g}")] for r in rows],
                        columns=cols)


def generated_html(lang: str, session: "GrammarSession | None") -> str:
    st = session.stepper if session is not None else None
    box = ("font-family:ui-monospace,Menlo,Consolas,monospace;font-size:15px;line-height:1.9;padding:8px 10px;"
           "border:1px solid var(--border-color-primary);border-radius:8px;white-space:pre-wrap;"
           "word-break:break-word;min-height:44px;max-height:220px;overflow-y:auto")
    if st is None or not st.traces:
        return f"<div style='{box};color:#8a8f98'>{html.escape(tr(lang, 'gen_empty'))}</div>"
    spans = []
    for trace in st.traces:
        r = _grammar_record(trace)
        forced = r is not None and r.extra.forced
        pf = r.extra.preferred_forbidden if r is not None else None
        pushed = pf is not None
        style = "border-radius:3px;padding:1px 0;margin:0 1px;"
        style += "background:#e5e7eb;color:#4b5563;" if forced else ""
        style += "box-shadow:inset 0 -3px 0 #f97316;" if pushed else ""
        tip = f"p={trace.chosen_p_raw:.3f}, rank {trace.chosen_rank}"
        if pf is not None:
            tip += f"; model wanted {pf.token!r} (p={pf.p:.3f})"
        text = "⏎" if trace.finished else trace.chosen_token
        spans.append(f"<span style='{style}' title='{html.escape(tip, quote=True)}'>{html.escape(text)}</span>")
    legend = f"<div style='font-size:12px;color:#6b7280;margin:4px 2px'>{html.escape(tr(lang, 'gen_legend'))}</div>"
    return f"<div style='{box}'>{''.join(spans)}</div>{legend}"


def status_md(lang: str, session: "GrammarSession | None") -> str:
    if session is None:
        return ""
    st = session.stepper
    if not st.traces:
        # the constraint's label starts with its source, which a share link can set: shown as typed
        return tr(lang, "status_ready", model=session.model_name, constraint=code_span(session.constraint),
                  ms=1e3 * session.compile_seconds, n=len(st.prompt_ids))
    trace = st.traces[-1]
    r = _grammar_record(trace)
    allowed = r.extra.allowed if r is not None else trace.kept_final
    text = tr(lang, "status_step", step=trace.step, token=code_span(show_token(trace.chosen_token)),
              rank=trace.chosen_rank, p=trace.chosen_p_raw, allowed=allowed,
              state=tr(lang, f"state_{session.mask.status()}"))
    return text + (tr(lang, "forced_note") if r is not None and r.extra.forced else "")


def timing_md(lang: str, session: "GrammarSession | None") -> str:
    if session is None:
        return ""
    masks = mask_seconds_per_token([r for trace in session.stepper.traces for r in trace.stages])
    last = session.stepper.traces[-1] if session.stepper.traces else None
    return tr(lang, "timing", vocab=1e3 * session.vocab_seconds, compile=1e3 * session.compile_seconds,
              mask=1e3 * (masks[-1] if masks else 0.0), n=len(masks),
              mean=1e3 * (sum(masks) / len(masks) if masks else 0.0),
              fwd=1e3 * (last.timings.get("forward", 0.0) if last else session.stepper.prefill_seconds))


def step_views(parts: GrammarParts, lang: str, session: "GrammarSession | None") -> dict:
    """The step-through views, drawn from the session's traces."""
    return {parts.status: status_md(lang, session), parts.generated: generated_html(lang, session),
            parts.trace: trace_figure(lang, session),
            parts.forbidden: forbidden_table(lang, session), parts.timing: timing_md(lang, session)}


def compare_html(lang: str, r: Any) -> tuple[str, str]:
    """(summary markdown, side-by-side HTML) for a ``ConstrainedVsFree``."""
    if r is None:
        return "", ""
    summary = tr(lang, "cmp_summary", ff=r.free_failure_rate, fs=r.free_salvage_failure_rate,
                 cf=r.constrained_failure_rate, compile=1e3 * r.compile_seconds, gms=r.grammar_ms_per_token,
                 ft=r.free_seconds, ct=r.constrained_seconds)

    def column(side: str, title: str, samples: list, fail: float) -> str:
        items = []
        for i, x in enumerate(samples):
            ok = "#16a34a" if x.valid else "#dc2626"
            badge = tr(lang, "valid") if x.valid else " · ".join(
                [tr(lang, "invalid")] + ([tr(lang, f"r_{x.reason}")] if x.reason else []) +
                ([tr(lang, "salvage")] if x.salvaged else []))
            stopped = getattr(r, "cut_by_stop", lambda _s: False)(x)
            cut = "" if x.finished else f" · {tr(lang, 'stopped' if stopped else 'cut')}"
            items.append(
                f"<div class='grammar-sample' data-valid='{str(x.valid).lower()}' style='border-top:1px dashed "
                f"var(--border-color-primary);padding:6px 0'><span style='font-size:12px;color:{ok};font-weight:600'>"
                f"#{i + 1} {'✔' if x.valid else '✘'} {html.escape(badge)}</span><span style='font-size:12px;"
                f"color:#6b7280'> · {html.escape(tr(lang, 'n_tokens', n=x.tokens))}{html.escape(cut)}</span>"
                f"<pre style='white-space:pre-wrap;word-break:break-word;margin:4px 0 0;font-size:13px;"
                f"max-height:160px;overflow-y:auto'>"
                f"{html.escape(x.text) or '∅'}</pre></div>")
        return (f"<div class='grammar-{side}' style='flex:1;min-width:260px;border:1px solid "
                f"var(--border-color-primary);border-radius:10px;"
                f"padding:8px 10px'><div style='font-weight:600'>{html.escape(title)} <span style='font-weight:400;"
                f"color:#6b7280'>· {fail:.0%} {html.escape(tr(lang, 'invalid'))}</span></div>{''.join(items)}</div>")

    body = (f"<div style='display:flex;gap:12px;flex-wrap:wrap'>"
            f"{column('free', tr(lang, 'free'), r.free, r.free_failure_rate)}"
            f"{column('constrained', tr(lang, 'constrained'), r.constrained, r.constrained_failure_rate)}</div>")
    return summary, body


def healing_views(lang: str, d: Any) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    c1 = [tr(lang, "col_token"), tr(lang, "col_id"), tr(lang, "col_p")]
    c2 = [tr(lang, "col_token"), tr(lang, "col_id"), tr(lang, "col_p_heal"), tr(lang, "col_p")]
    if d is None:
        return "", pd.DataFrame([], columns=c1), pd.DataFrame([], columns=c2)
    without = pd.DataFrame([[show_token(x["token"]), x["id"], round(x["p"], 4)] for x in d.without], columns=c1)
    with_h = pd.DataFrame([[show_token(x["token"]), x["id"], round(x["p"], 4), round(x["p_model"], 4)]
                           for x in d.with_healing], columns=c2)
    if not d.removed_text:
        return tr(lang, "heal_nothing"), without, with_h
    summary = tr(lang, "heal_summary", removed=show_token(d.removed_text), allowed=d.allowed,
                 mass=d.consistent_mass, again=d.p_removed_token)
    return summary, without, with_h

