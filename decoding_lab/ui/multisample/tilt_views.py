"""What the "Verifier-tilted sampling" section draws from two recorded runs (``TiltRun``, from the core's
``experiments.tilt_run``): the plain and tilted texts with their verdicts, one chart of z and z + eta·V
per step, the per-step table and the summary. No model runs here; ``tilt`` runs them."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from decoding_lab.experiments import tilt_run as TR
from decoding_lab.ui.multisample.parts import TiltParts
from decoding_lab.ui.multisample.strings import tr_tilt as tr


# --------------------------------------------------------------------------- drawing
def _card(lang: str, title: str, run: TR.TiltRun | None, other: TR.TiltRun | None) -> str:
    if run is None:
        return f"<div class='tilt-card'><div class='tilt-title'>{html.escape(title)}</div><i>{tr(lang, 'waiting')}</i></div>"
    cfg = run.config
    t = tr(lang, "greedy") if cfg.temperature == 0 else f"{cfg.temperature:g}"
    toks = []
    for i, st in enumerate(run.steps):
        diff = other is not None and (i >= len(other.tokens) or other.tokens[i] != st.chosen_id)
        toks.append(f"<span class='tilt-tok{' tilt-diff' if diff else ''}' title='step {i}'>"
                    f"{html.escape(st.chosen_token).replace(chr(10), '↵')}</span>")
    verdict = ""
    if run.done:
        mark = tr(lang, "right" if run.correct else "wrong")
        verdict = (tr(lang, "no_answer", verdict=mark, ref=html.escape(run.reference)) if run.answer is None else
                   tr(lang, "answer", ans=html.escape(run.answer), ref=html.escape(run.reference), verdict=mark))
    return (f"<div class='tilt-card'><div class='tilt-title'>{html.escape(title)} · {tr(lang, 'settings', t=t, seed=cfg.seed)}"
            f"</div><div class='tilt-text'>{''.join(toks)}</div><div class='tilt-verdict'>{verdict}</div></div>")


def texts_html(lang: str, plain: TR.TiltRun | None, tilted: TR.TiltRun | None, eta: float) -> str:
    return (f"<div class='tilt-cards'>{_card(lang, tr(lang, 'plain'), plain, None)}"
            f"{_card(lang, tr(lang, 'tilted', eta=eta), tilted, plain)}</div>")


def summary(lang: str, plain: TR.TiltRun, tilted: TR.TiltRun) -> str:
    n = len(tilted.tokens)
    diff = TR.first_difference(plain, tilted)
    if diff is None:
        lines = [tr(lang, "eta0" if tilted.config.eta == 0 else "same", n=n)]
    elif diff >= min(len(plain.steps), len(tilted.steps)):      # one run is a prefix of the other
        lines = [tr(lang, "prefix", n=diff)]
    else:
        lines = [tr(lang, "differ", step=diff, a=plain.steps[diff].chosen_token, b=tilted.steps[diff].chosen_token)]
    flags = [st.verifier_greedy for st in tilted.steps if st.verifier_greedy is not None]
    if flags:
        lines.append(tr(lang, "vg", k=sum(flags), n=len(flags)))
    lines.append(tr(lang, "cost", p=plain.seconds, t=tilted.seconds, r=tilted.rollouts, rt=tilted.config.rollout_tokens))
    if tilted.stop_reason in ("time limit", "stopped"):
        why = tr(lang, tilted.stop_reason, sec=tilted.config.time_limit)
        lines.append(tr(lang, "why_stop", why=why))
    return "\n\n".join(lines)


def steps_figure(lang: str, run: TR.TiltRun) -> go.Figure:
    xs, z, zv, color, hover, seg_x, seg_y, star_x, star_y = [], [], [], [], [], [], [], [], []
    for st in run.steps:
        for c in st.candidates:
            xs.append(st.step)
            z.append(c.z)
            zv.append(c.tilted)
            color.append("#9ca3af" if c.V is None else ("#16a34a" if c.V > 0 else "#dc2626"))
            hover.append(f"{c.token!r}  z={c.z:.2f}  V={'—' if c.V is None else f'{c.V:g}'}  p={c.p:.3f}"
                         + (f"<br>{html.escape(c.rollout[-80:])}" if c.rollout else ""))
            seg_x += [st.step, st.step, None]
            seg_y += [c.z, c.tilted, None]
            if c.token_id == st.chosen_id:
                star_x.append(st.step)
                star_y.append(c.tilted)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=seg_x, y=seg_y, mode="lines", line=dict(color="#d1d5db", width=1), hoverinfo="skip",
                             showlegend=False))
    fig.add_trace(go.Scatter(x=xs, y=z, mode="markers", name=tr(lang, "z"), text=hover, hoverinfo="text",
                             marker=dict(symbol="circle-open", size=9, color="#6b7280")))
    fig.add_trace(go.Scatter(x=xs, y=zv, mode="markers", name=tr(lang, "zV"), text=hover, hoverinfo="text",
                             marker=dict(size=9, color=color)))
    fig.add_trace(go.Scatter(x=star_x, y=star_y, mode="markers", name=tr(lang, "picked"), hoverinfo="skip",
                             marker=dict(symbol="star-open", size=18, color="#111827", line=dict(width=2))))
    fig.update_layout(title=tr(lang, "chart"), xaxis_title=tr(lang, "step"), yaxis_title=tr(lang, "logit"), height=360,
                      margin=dict(l=50, r=20, t=50, b=40), xaxis_dtick=1, legend=dict(orientation="h", y=-0.2))
    return fig


COLUMNS = ["c_step", "c_token", "c_z", "c_V", "c_zV", "c_logit", "c_p", "c_pick", "c_roll"]


def steps_table(lang: str, run: TR.TiltRun | None) -> pd.DataFrame:
    """One row per (step, candidate). Greedy (T = 0) has no "/T" column: it takes the argmax of z + ηV."""
    rows = [[st.step, c.token, round(c.z, 3), c.V, round(c.tilted, 3), None if c.logit is None else round(c.logit, 3),
             round(c.p, 4), "★" if c.token_id == st.chosen_id else "", c.rollout]
            for st in (run.steps if run else []) for c in st.candidates]
    df = pd.DataFrame(rows, columns=[tr(lang, c) for c in COLUMNS])
    return df.drop(columns=[tr(lang, "c_logit")]) if run is not None and run.config.temperature == 0 else df


def empty_figure(lang: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=tr(lang, "empty"), height=160, margin=dict(l=50, r=20, t=50, b=20),
                      xaxis=dict(visible=False), yaxis=dict(visible=False), plot_bgcolor="rgba(0,0,0,0)")
    return fig


def render(lang: str, last: dict | None, status: str | None = None, eta: float = 10.0) -> dict[str, Any]:
    """Part name -> value for the last pair of runs (``last`` = {"plain": json, "tilted": json, "eta": η});
    ``eta`` names the tilted card before a run has recorded its own."""
    last = last or {}
    plain = TR.TiltRun.from_json(last["plain"]) if last.get("plain") else None
    tilted = TR.TiltRun.from_json(last["tilted"]) if last.get("tilted") else None
    eta = tilted.config.eta if tilted else float(last.get("eta", eta))
    done = plain is not None and tilted is not None and tilted.done
    return {"texts": texts_html(lang, plain, tilted, eta) if plain else "",
            "summary": status if status is not None else (summary(lang, plain, tilted) if done else ""),
            "plot": steps_figure(lang, tilted) if tilted and tilted.steps else empty_figure(lang),
            "table": steps_table(lang, tilted)}


def updates(ui: TiltParts, lang: str, parts: dict[str, Any]) -> dict:
    """Component -> value for the section's views (``parts`` from ``render``)."""
    return {ui.texts: parts["texts"], ui.summary: parts["summary"], ui.plot: parts["plot"],
            ui.table: gr.update(value=parts["table"], label=tr(lang, "table"))}


def outputs(ui: TiltParts) -> list[Any]:
    return [ui.texts, ui.summary, ui.plot, ui.table]
