"""Views of an Explorer session, drawn from the stepper's traces: the generated text coloured
by probability, the step table, candidate and branch choices, the share link, and ``render``,
every view at once. "This step in numbers" is ``numbers.py``; figures live in ``chart.py`` and
``common/plots.py``."""

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
from decoding_lab.ui.explorer.chart import dist_chart
from decoding_lab.ui.explorer import popover, strings
from decoding_lab.ui.explorer.numbers import (extra_rows, extras_status, kept_verdict, numbers_md,  # noqa: F401
                                              reported_rows, source_rows)
from decoding_lab.ui.explorer.parts import ExplorerParts

TABLE_KEYS = ("col_step", "col_token", "col_id", "col_rank", "col_p_raw", "col_p_final", "col_H", "col_H_T",
              "col_kept", "col_forced", "col_ms")

#: The ``parts`` attributes ``render`` writes, in the order the step-like endpoints return them.
VIEW_NAMES = ("dist", "funnel", "entropy", "numbers", "gen", "table", "candidates", "branches", "status", "session",
              "started", "share", "replay_more", "orders")


def view_components(parts: ExplorerParts) -> list[Any]:
    return [getattr(parts, name) for name in VIEW_NAMES]


def render(parts: ExplorerParts, lang: str, session: Any) -> dict:
    """Every view of ``session`` (an ``ExplorerSession`` or None) in ``lang``, keyed by component."""
    st = session.stepper if session is not None else None
    tr = st.traces[-1] if st is not None and st.traces else None
    headers, rows = step_table(st, lang)
    return {
        parts.dist: dist_view(session, lang),
        parts.funnel: funnel_view(tr, st.lm.vocab_size, lang) if tr else None,
        parts.entropy: plots.entropy_chart(tr.entropy_curve, tr, lang) if tr else None,
        parts.numbers: numbers_md(tr, lang),
        parts.gen: generated_html(st, lang, session),
        parts.table: pd.DataFrame(rows, columns=headers),
        parts.candidates: gr.update(choices=candidate_choices(tr, lang), value=None),
        parts.branches: gr.update(choices=branch_choices(st, lang), value=None),
        parts.status: with_notice(status_md(st, lang, session.model_name if session else ""), session, lang),
        parts.session: session,
        **({parts.started: True} if session is not None else {}),   # left out: a redraw never clears the flag
        **({parts.share: share_query(session, lang)} if session is not None else {}),
        parts.replay_more: replay_more_button(session, lang),
        parts.orders: "",   # the orders table was about the step shown before
    }


def replay_more_button(session: Any, lang: str) -> Any:
    """"Replay the other N steps": shown while a long link's run waits for the visitor."""
    rest = session.pending_link() if session is not None and hasattr(session, "pending_link") else None
    if rest is None:
        return gr.update(visible=False)
    return gr.update(visible=True, value=strings.tr(lang, "replay_rest", n=rest.total - len(session.stepper.tokens)))


#: The H(T) chart's height: the funnel beside it is drawn at least as tall, so the row has no gap.
ENTROPY_HEIGHT = 320


def funnel_view(trace: Any, vocab_size: int, lang: str) -> Any:
    fig = plots.funnel_chart(trace, vocab_size, lang)
    if (fig.layout.height or 0) < ENTROPY_HEIGHT:
        fig.layout.height = ENTROPY_HEIGHT
    return fig


def share_query(session: Any, lang: str) -> str:
    """The link that opens this run again: the session's model, prompt, format, settings and
    tokens shown (``urlstate.encode``), then its steps and forced tokens (``encode_run``), which
    the page replays when the link is opened."""
    st = session.stepper
    q = urlstate.encode(session.model_name, session.prompt, "chat" if session.chat else "raw",
                        values_from_settings(st.settings), st.top_n, lang)
    if session_changed_settings(session) is not None:
        return q     # a replay would run every step with today's settings: the link opens the set-up only
    forced = [(tr.step, tr.chosen_token_id) for tr in st.traces if tr.forced]
    rest = session.pending_link() if hasattr(session, "pending_link") else None
    if rest is not None:   # a long link paused part-way: the link still names its whole run
        forced += sorted((k, v) for k, v in rest.forced.items() if k >= len(st.tokens))
        run = urlstate.encode_run(rest.total, forced)
    else:
        run = urlstate.encode_run(len(st.tokens), forced)
    return f"{q}&{run}" if run else q


def session_changed_settings(session: Any) -> int | None:
    """``ExplorerSession.settings_changed_at`` (None for a session without that record)."""
    changed = getattr(session, "settings_changed_at", None)
    return changed() if callable(changed) else None


def dist_view(session: Any, lang: str) -> Any:
    """The distribution chart of the shown step, on the scale the visitor chose (``log_y``); None
    (an empty chart, as the page starts) before the first step."""
    st = session.stepper if session is not None else None
    if st is None or not st.traces:
        return None
    return dist_chart(st.traces[-1], lang, log_y=session.log_y)


def text_views(parts: ExplorerParts, lang: str, session: Any) -> dict:
    """The cheap part of ``render`` (text and status), sent between chart redraws while playing."""
    st = session.stepper
    # the charts may still show an earlier step: the status line says they follow
    status = f"{status_md(st, lang, session.model_name)} · {strings.tr(lang, 'charts_follow')}"
    return {parts.gen: generated_html(st, lang, session), parts.status: with_notice(status, session, lang),
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


def candidate_choices(trace: Any, lang: str = "en") -> list[tuple[str, int]]:
    """The recorded rows of the shown step, as (label, token id) choices for forcing; each label
    names both probabilities (the status line after a force quotes the raw one)."""
    if trace is None:
        return []
    return [(f"#{r.rank} {show_token(r.token)}  " + strings.tr(lang, "cand_p", raw=r.p_raw, final=r.p_final)
             + (f"  ✂ {r.cut_by}" if r.cut_by else ""), r.token_id) for r in trace.top]


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
    if changed is not None:
        text = f"{text}  \n{strings.tr(lang, 'settings_changed', step=changed)}"
    rest = session.pending_link() if session is not None and hasattr(session, "pending_link") else None
    if rest is not None:
        done = len(session.stepper.tokens)
        text = f"{text}  \n{strings.tr(lang, 'link_paused', total=rest.total, done=done, left=rest.total - done)}"
    rebuilt = getattr(getattr(session, "stepper", None), "last_rebuild", None)
    if rebuilt is not None:   # the memory budget had set this session's cache aside (``memory_budget``)
        text = f"{text}  \n{strings.tr(lang, 'rebuilt', n=rebuilt[0], s=rebuilt[1])}"
    return text


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
    text += extras_status(tr, lang)
    if tr.finished:
        text += " · " + t(lang, "status_finished")
    return text
