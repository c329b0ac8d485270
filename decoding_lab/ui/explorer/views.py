"""Views of an Explorer session, drawn from the stepper's traces: the generated text coloured
by probability, the step table, "this step in numbers", candidate and branch choices, and
``render``, every view at once. Figures live in ``common/plots.py``."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr
import pandas as pd

from decoding_lab.ui.common import plots, urlstate
from decoding_lab.ui.common.state import values_from_settings
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.markdown import code_span
from decoding_lab.ui.common.plots import show_token
from decoding_lab.ui.explorer.chart import dist_chart, raw_source
from decoding_lab.ui.explorer import popover, strings
from decoding_lab.ui.explorer.parts import ExplorerParts

TABLE_KEYS = ("col_step", "col_token", "col_id", "col_rank", "col_p_raw", "col_p_final", "col_H", "col_H_T",
              "col_kept", "col_forced", "col_ms")

#: The ``parts`` attributes ``render`` writes, in the order the step-like endpoints return them.
VIEW_NAMES = ("dist", "funnel", "entropy", "numbers", "gen", "table", "candidates", "branches", "status", "session",
              "started", "share")


def view_components(parts: ExplorerParts) -> list[Any]:
    return [getattr(parts, name) for name in VIEW_NAMES]


def render(parts: ExplorerParts, lang: str, session: Any) -> dict:
    """Every view of ``session`` (an ``ExplorerSession`` or None) in ``lang``, keyed by component."""
    st = session.stepper if session is not None else None
    tr = st.traces[-1] if st is not None and st.traces else None
    headers, rows = step_table(st, lang)
    return {
        parts.dist: dist_view(session, lang),
        parts.funnel: plots.funnel_chart(tr, st.lm.vocab_size, lang) if tr else plots.empty_figure(lang, height=220),
        parts.entropy: plots.entropy_chart(tr.entropy_curve, tr, lang) if tr else plots.empty_figure(lang, height=220),
        parts.numbers: numbers_md(tr, lang),
        parts.gen: generated_html(st, lang, session),
        parts.table: pd.DataFrame(rows, columns=headers),
        parts.candidates: gr.update(choices=candidate_choices(tr), value=None),
        parts.branches: gr.update(choices=branch_choices(st, lang), value=None),
        parts.status: with_notice(status_md(st, lang, session.model_name if session else ""), session, lang),
        parts.session: session,
        **({parts.started: True} if session is not None else {}),   # left out: a redraw never clears the flag
        **({parts.share: share_query(session, lang)} if session is not None else {}),
    }


def share_query(session: Any, lang: str) -> str:
    """The link that opens this run again: the session's model, prompt, format, settings and
    tokens shown (``urlstate.encode``), then its steps and forced tokens (``encode_run``), which
    the page replays when the link is opened."""
    st = session.stepper
    q = urlstate.encode(session.model_name, session.prompt, "chat" if session.chat else "raw",
                        values_from_settings(st.settings), st.top_n, lang)
    if session_changed_settings(session) is not None:
        return q     # a replay would run every step with today's settings: the link opens the set-up only
    run = urlstate.encode_run(len(st.tokens), [(tr.step, tr.chosen_token_id) for tr in st.traces if tr.forced])
    return f"{q}&{run}" if run else q


def session_changed_settings(session: Any) -> int | None:
    """``ExplorerSession.settings_changed_at`` (None for a session without that record)."""
    changed = getattr(session, "settings_changed_at", None)
    return changed() if callable(changed) else None


def dist_view(session: Any, lang: str) -> Any:
    """The distribution chart of the shown step, on the scale the visitor chose (``log_y``)."""
    st = session.stepper if session is not None else None
    if st is None or not st.traces:
        return plots.empty_figure(lang)
    return dist_chart(st.traces[-1], lang, log_y=session.log_y)


def text_views(parts: ExplorerParts, lang: str, session: Any) -> dict:
    """The cheap part of ``render`` (text and status), sent between chart redraws while playing."""
    st = session.stepper
    return {parts.gen: generated_html(st, lang, session),
            parts.status: with_notice(status_md(st, lang, session.model_name), session, lang),
            parts.session: session}


def prob_colour(p: float) -> str:
    """Red (unlikely) -> yellow -> green (likely); a light background for the token span."""
    p = max(0.0, min(1.0, float(p)))
    hue = int(120 * p)  # 0 = red, 60 = yellow, 120 = green
    return f"hsl({hue}, 85%, 82%)"


def prompt_html(stepper: Any, lang: str, session: Any = None) -> str:
    """The prompt in grey. A chat template's wrapping (system turn, role markers) folds into one
    line that names the visitor's prompt and opens on a click; a raw prompt stays inline, since
    the tokens continue it."""
    text = stepper.prompt_text()
    user = getattr(session, "prompt", "") or ""
    if not getattr(session, "chat", False) or text.strip() == user.strip():
        return f"<span class='gen-prompt'>{_visible(text)}</span>"
    summary = strings.tr(lang, "template_summary", n=text.count("\n") + 1)
    return (f"<details class='gen-template'><summary><span class='gen-template-label'>{html.escape(summary)}</span> "
            f"<span class='gen-prompt'>“{html.escape(user.strip())}”</span></summary>"
            f"<div class='gen-prompt gen-template-full'>{_visible(text)}</div></details>")


def generated_html(stepper: Any, lang: str, session: Any = None) -> str:
    """The prompt (``prompt_html``), then each generated token as a span coloured by the
    probability it was drawn with (p final); hovering or tapping one opens its alternatives
    (``popover``)."""
    if stepper is None:
        return f"<div id='gen-box' class='gen-box empty'>{html.escape(t(lang, 'no_session'))}</div>"
    parts = [prompt_html(stepper, lang, session)]
    for tr in stepper.traces:
        title = strings.tr(lang, "tok_label", step=tr.step, id=tr.chosen_token_id, rank=tr.chosen_rank,
                           raw=tr.chosen_p_raw, final=tr.chosen_p_final) + (strings.tr(lang, "tok_forced")
                                                                          if tr.forced else "")
        cls = "gen-tok forced" if tr.forced else "gen-tok"
        parts.append(f"<span class='{cls}' data-step='{tr.step}' data-p='{tr.chosen_p_final:.6f}' "
                     f"data-rank='{tr.chosen_rank}' aria-label='{html.escape(title, quote=True)}' "
                     f"{popover.token_attrs(tr, lang)} "
                     f"style='background:{prob_colour(tr.chosen_p_final)}'>{_visible(tr.chosen_token)}</span>")
    legend = (f"<div class='gen-legend'><span class='gen-ws-note'>{html.escape(strings.tr(lang, 'whitespace_note'))}</span> · "
              f"{html.escape(strings.tr(lang, 'gen_hint'))} "
              f"<span style='background:{prob_colour(0)}'>p≈0</span><span style='background:{prob_colour(0.5)}'>0.5</span>"
              f"<span style='background:{prob_colour(1)}'>1</span></div>")
    return f"<div id='gen-box' class='gen-box'>{''.join(parts)}</div>{legend}"


def _visible(text: str) -> str:
    """Escape HTML and keep line breaks visible."""
    return html.escape(text).replace("\n", "↵<br>")


def step_table(stepper: Any, lang: str) -> tuple[list[str], list[list[Any]]]:
    headers = [t(lang, k) for k in TABLE_KEYS]
    rows = []
    for tr in (stepper.traces if stepper is not None else []):
        ms = 1000 * sum(tr.timings.get(k, 0.0) for k in ("forward", "chain", "select", "stats"))
        rows.append([tr.step, show_token(tr.chosen_token), tr.chosen_token_id, tr.chosen_rank, round(tr.chosen_p_raw, 4),
                     round(tr.chosen_p_final, 4), round(tr.entropy, 3),
                     None if tr.entropy_T is None else round(tr.entropy_T, 3), tr.kept_final, "✓" if tr.forced else "",
                     round(ms, 1)])
    return headers, rows


def numbers_md(trace: Any, lang: str) -> str:
    """'This step in numbers': entropies, dH/dT, margin, tail mass, kept count, timing."""
    if trace is None:
        return t(lang, "no_session")
    fmt = lambda x: "—" if x is None else f"{0.0 if abs(x) < 5e-5 else x:.4f}"  # noqa: E731
    lines = [f"| {t(lang, 'n_quantity')} | {t(lang, 'n_value')} |", "|---|---|",
             f"| {t(lang, 'n_chosen')} | " + strings.tr(lang, "chosen_row", token=code_span(show_token(trace.chosen_token)),
                                                        id=trace.chosen_token_id, rank=trace.chosen_rank,
                                                        raw=trace.chosen_p_raw, final=trace.chosen_p_final) + " |",
             f"| {t(lang, 'n_H')} | {fmt(trace.entropy)} |",
             f"| {t(lang, 'n_H_T')} | {fmt(trace.entropy_T)} |",
             f"| {t(lang, 'n_dHdT')} | {fmt(trace.dH_dT)} |",
             f"| {t(lang, 'n_H_final')} | {fmt(trace.entropy_final)} |",
             f"| {t(lang, 'n_margin')} | {fmt(trace.margin)} |",
             f"| {t(lang, 'n_tail', n=trace.tail.get('top_n'))} | {fmt(trace.tail.get('outside_top_n'))} |"]
    for th, mass in trace.tail.get("below", {}).items():
        count = trace.tail.get("count_below", {}).get(th, 0)
        lines.append(f"| {t(lang, 'n_below', th=th, count=f'{count:,}')} | {fmt(mass)} |")
    lines.append(f"| {t(lang, 'n_kept')} | {trace.kept_final:,} |")
    lines += source_rows(trace, lang)
    lines += reported_rows(trace, lang)
    tm = trace.timings
    lines.append(f"| {t(lang, 'n_time_label')} | {t(lang, 'n_time', fwd=1000 * tm.get('forward', 0), chain=1000 * tm.get('chain', 0))} |")
    return "\n".join(lines)


def source_rows(trace: Any, lang: str) -> list[str]:
    """Two rows that name the source of every number above: raw (before any stage: this process's
    logits, a server's raw logits, or a server's top-N with the rest filled in, then a bound) and
    final (after which stages, in which order)."""
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    rep = getattr(trace, "reported", None) or {}
    n, v = len(rep.get("ids", ())), int(rep.get("n_vocab", 0) or 0)
    raw = tr("src_" + raw_source(trace), n=n, v=v, rest=max(0, v - n))
    stages = [s.name for s in trace.stages]
    final = tr("src_final", stages=" → ".join(stages)) if stages else tr("src_final_none")
    return [f"| {tr('src_label')} | {raw} |", f"| | {final} |"]


def reported_rows(trace: Any, lang: str) -> list[str]:
    """For a model on a server: what it reported (top-N of V), the mass it left out, and which
    token the engine itself picked, so no figure above reads as more exact than it is."""
    rep = getattr(trace, "reported", None)
    if not rep:
        return []
    n, v = len(rep["ids"]), int(rep["n_vocab"])
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    chosen = rep.get("chosen_id")
    pick = (code_span(show_token(trace_token_text(trace, chosen))) + f" (id {chosen})" if chosen is not None
            else tr("r_engine_none"))
    rows = [] if rep.get("raw_logits") else [     # a raw-logits server reported every token: nothing is filled in
        f"| {tr('r_reported')} | {tr('r_reported_v', n=n, v=v)} |",
        f"| {tr('r_tail')} | {tr('r_tail_v', tail=rep['tail_mass'], rest=v - n, n=n)} |"]
    rows.append(f"| {tr('r_engine')} | {pick} |")
    if any("as text" in note for note in rep.get("exact", ())):
        rows.append(f"| {tr('r_reported')} | {tr('r_text')} |")
    if rep.get("inexact"):
        rows.append(f"| {tr('r_inexact')} | {tr('r_inexact_v', stages=', '.join(rep['inexact']))} |")
    if rep.get("agreement"):
        rows.append(f"| {tr('r_kept')} | {kept_verdict(trace, rep['agreement'], lang)} |")
    return rows


def kept_verdict(trace: Any, a: dict[str, Any], lang: str) -> str:
    """The engine's post-sampling kept set beside ours, in one sentence (``remote.agreement``)."""
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    name = lambda i: code_span(show_token(trace_token_text(trace, i)))  # noqa: E731
    listed = lambda ids: ", ".join(name(i) for i in ids) or tr("r_none")  # noqa: E731
    if a["greedy"]:
        if a["same_set"]:
            return tr("r_kept_greedy")
        engine = (trace.reported or {}).get("post_ids") or [None]
        ours = max(trace.top, key=lambda r: r.p_final).token_id if trace.top else trace.chosen_token_id
        return tr("r_kept_greedy_diff", e=name(engine[0]) if engine[0] is not None else "—", o=name(ours))
    if not a["engine_lists_all"]:
        return tr("r_kept_partial", n=a["engine_kept"], verdict=tr("r_same" if a["same_set"] else "r_different"))
    if a["same_set"]:
        dp = a["max_dp"] or 0.0
        if dp < 5e-5:  # rounds to 0.0000
            return tr("r_kept_same4", n=a["engine_kept"])
        return tr("r_kept_same", n=a["engine_kept"], dp=f"{dp:.4f}")
    return tr("r_kept_diff", n=a["engine_kept"], m=a["ours_kept"], a=listed(a["only_engine"]), b=listed(a["only_ours"]))


def trace_token_text(trace: Any, token_id: int) -> str:
    """A token's text from the trace's own rows (the view has no tokenizer at hand)."""
    row = next((r for r in trace.top if r.token_id == token_id), None)
    return row.token if row is not None else f"#{token_id}"


def candidate_choices(trace: Any) -> list[tuple[str, int]]:
    """The recorded rows of the shown step, as (label, token id) choices for forcing."""
    if trace is None:
        return []
    return [(f"#{r.rank} {show_token(r.token)}  p={r.p_final:.3f}" + (f"  ✂ {r.cut_by}" if r.cut_by else ""), r.token_id)
            for r in trace.top]


def branch_choices(stepper: Any, lang: str = "en") -> list[tuple[str, int]]:
    if stepper is None:
        return []
    out = []
    for i, b in enumerate(stepper.branches):
        text = show_token(b.text)
        out.append((strings.tr(lang, "branch_label", i=i, step=b.from_step, n=len(b.tokens),
                               text=text[:40] + ("…" if len(text) > 40 else "")), i))
    return out


def with_notice(text: str, session: Any, lang: str) -> str:
    """The status line, with the session's one-off notice (a new run) in front when it has one."""
    key = getattr(session, "notice", "")
    text = f"**{strings.tr(lang, key)}** · {text}" if key else text
    changed = session_changed_settings(session)
    return text if changed is None else f"{text}  \n{strings.tr(lang, 'settings_changed', step=changed)}"


def status_md(stepper: Any, lang: str, model_name: str = "") -> str:
    if stepper is None:
        return t(lang, "no_session")
    if not stepper.traces:
        return t(lang, "status_ready", model=model_name, n=len(stepper.prompt_ids), ms=1000 * stepper.prefill_seconds)
    tr = stepper.traces[-1]
    ms = 1000 * sum(tr.timings.get(k, 0.0) for k in ("chain", "select", "stats", "next_forward"))
    text = t(lang, "status_forced" if tr.forced else "status_step", step=tr.step,
             token=code_span(show_token(tr.chosen_token)), rank=tr.chosen_rank, p=tr.chosen_p_final,
             p_raw=tr.chosen_p_raw, ms=ms)
    if tr.finished:
        text += " · " + t(lang, "status_finished")
    return text
