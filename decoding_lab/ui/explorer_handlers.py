"""Explorer tab, handlers: each turns a click into stepper calls and returns the views
as a dict keyed by component. The stepper does the maths; ``plots`` and
``explorer_views`` draw its traces.

Every step-like handler receives ``lang, session, model, hub, prompt, chat, <12 settings>,
top_n`` (the two ``gr.State`` inputs are invisible to the API client)."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator

import gradio as gr
import pandas as pd

from decoding_lab import stats
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import SessionError, Stepper
from decoding_lab.ui import explorer_views as views
from decoding_lab.ui.common import plots, urlstate
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.runtime import gpu
from decoding_lab.ui.common.sessions import SessionJobs, gated
from decoding_lab.ui.common.state import CUSTOM, SETTING_KEYS, ExplorerSession, guarded, settings_from_values, with_params

N_CONTROLS = 4 + len(SETTING_KEYS) + 1  # model, hub, prompt, chat, settings…, top_n
CURVE_GRID = stats.default_temperature_grid(n=32)  # H(T) is smooth: 32 points draw it well
FULL_EVERY = 1.0  # seconds between full redraws while playing


def control_inputs(ui: Any) -> list:
    return [ui.model, ui.hub, ui.prompt, ui.chat, *[ui.settings[k] for k in SETTING_KEYS], ui.top_n]


def _split(controls: tuple) -> tuple[str, str, str, dict[str, Any], int]:
    model, hub, prompt, chat, *rest = controls
    values = dict(zip(SETTING_KEYS, rest[: len(SETTING_KEYS)]))
    top_n = rest[len(SETTING_KEYS)]
    name = (hub or "").strip() or (model or "")
    if top_n is None or not 1 <= float(top_n) <= 200:
        raise SettingsError(f"top-N must be between 1 and 200, got {top_n!r}")
    if chat not in ("chat", "raw"):
        raise SettingsError(f"prompt format must be 'chat' or 'raw', got {chat!r}")
    return name, prompt or "", chat, values, int(top_n)


def new_session(name: str, prompt: str, chat: str, settings: Any, top_n: int) -> ExplorerSession:
    from decoding_lab.models import get_model
    lm = get_model(name)
    stepper = Stepper.from_prompt(lm, prompt, chat == "chat", settings, top_n=top_n)
    return ExplorerSession(lm.name, prompt, chat == "chat", stepper)


def prepare(lang: str, session: ExplorerSession | None, controls: tuple) -> ExplorerSession:
    """Validate the controls, make a session if there is none, and apply the settings
    from the next step on. A changed model or prompt only takes effect on Reset."""
    name, prompt, chat, values, top_n = _split(controls)
    settings = settings_from_values(values)
    if session is None:
        return new_session(name, prompt, chat, settings, top_n)
    from decoding_lab.models import BUNDLED
    key = name.strip().lower() if name.strip().lower() in BUNDLED else name.strip()  # as get_model names it
    if (key, prompt, chat == "chat") != (session.model_name, session.prompt, session.chat):
        gr.Warning(t(lang, "stale_prompt"))
    session.stepper.set_settings(settings)
    session.stepper.top_n = top_n
    return session


@contextlib.contextmanager
def locked(lang: str, session: ExplorerSession) -> Iterator[None]:
    """One action at a time per session (a double click must not step twice at once)."""
    if not session.lock.acquire(blocking=False):
        raise gr.Error(t(lang, "busy"), print_exception=False)
    try:
        yield
    finally:
        session.lock.release()


def _after_step(session: ExplorerSession) -> None:
    """Keep the H(T) curve of the new step on its trace, so undo shows the right curve."""
    st = session.stepper
    if st.traces and not st.traces[-1].entropy_curve:
        st.traces[-1].entropy_curve = st.entropy_curve(CURVE_GRID)


def render(ui: Any, lang: str, session: ExplorerSession | None) -> dict:
    st = session.stepper if session is not None else None
    tr = st.traces[-1] if st is not None and st.traces else None
    headers, rows = views.step_table(st, lang)
    return {
        ui.dist: plots.dist_chart(tr, lang) if tr else plots.empty_figure(lang),
        ui.funnel: plots.funnel_chart(tr, st.lm.vocab_size, lang) if tr else plots.empty_figure(lang, height=220),
        ui.entropy: plots.entropy_chart(tr.entropy_curve, tr, lang) if tr else plots.empty_figure(lang, height=220),
        ui.numbers: views.numbers_md(tr, lang),
        ui.gen: views.generated_html(st, lang),
        ui.table: pd.DataFrame(rows, columns=headers),
        ui.candidates: gr.update(choices=views.candidate_choices(tr), value=None),
        ui.branches: gr.update(choices=views.branch_choices(st), value=None),
        ui.status: views.status_md(st, lang, session.model_name if session else ""),
        ui.session: session,
    }


def share_query(lang: str, controls: tuple) -> str:
    model, hub, prompt, chat, *rest = controls
    values = dict(zip(SETTING_KEYS, rest[: len(SETTING_KEYS)]))
    return urlstate.encode((hub or "").strip() or model, prompt or "", chat, values, rest[len(SETTING_KEYS)], lang)


def wire(ui: Any, lang_state: Any, jobs: SessionJobs | None = None) -> dict[str, Any]:
    """Attach the handlers; returns the events other tabs may cancel or chain. ``jobs`` bounds
    how many model jobs one tab runs at once (see ``sessions``)."""
    ctl = control_inputs(ui)
    base = [lang_state, ui.session]
    views_out = [ui.dist, ui.funnel, ui.entropy, ui.numbers, ui.gen, ui.table, ui.candidates, ui.branches,
                 ui.status, ui.session]
    out = views_out + [ui.share]

    @guarded
    @gpu
    def on_reset(lang, session, *controls):
        name, prompt, chat, values, top_n = _split(controls)
        fresh = new_session(name, prompt, chat, settings_from_values(values), top_n)
        return {**render(ui, lang, fresh), ui.share: share_query(lang, controls)}

    @guarded
    @gpu
    def on_step(lang, session, *controls):
        session = prepare(lang, session, controls)
        with locked(lang, session):
            session.stepper.step()
            _after_step(session)
        return {**render(ui, lang, session), ui.share: share_query(lang, controls)}

    @guarded
    @gpu
    def on_step_n(lang, session, *controls_and_n):
        *controls, n = controls_and_n
        if n is None or not 1 <= float(n) <= 1024:
            raise SettingsError(f"N must be between 1 and 1024, got {n!r}")
        yield from _run(lang, prepare(lang, session, tuple(controls)), int(n), tuple(controls))

    @guarded
    @gpu
    def on_play(lang, session, *controls):
        session = prepare(lang, session, controls)
        yield from _run(lang, session, session.stepper.max_new_tokens, controls)

    def _run(lang, session, n, controls):
        st = session.stepper
        if st.finished:
            raise SessionError("generation reached an end-of-sequence token; undo or reset to go on")
        share = share_query(lang, controls)
        last_full = 0.0
        for i in range(n):
            if st.finished or len(st.tokens) >= st.max_new_tokens:
                break
            with locked(lang, session):
                st.step()
                _after_step(session)
            # Charts at most every FULL_EVERY seconds, the text after every step: a browser
            # cannot redraw three plotly figures ten times a second (and would stop responding).
            now = time.perf_counter()
            last = i == n - 1 or st.finished or len(st.tokens) >= st.max_new_tokens
            if last or now - last_full >= FULL_EVERY:
                last_full = now
                yield {**render(ui, lang, session), ui.share: share}
            else:
                yield {ui.gen: views.generated_html(st, lang), ui.status: views.status_md(st, lang, session.model_name),
                       ui.session: session}

    @guarded
    @gpu
    def on_force(lang, session, *controls_and_token):
        *controls, token = controls_and_token
        if token is None or str(token).strip() == "":
            raise SettingsError("choose a candidate token first")
        try:
            token_id = int(float(token))
        except (ValueError, OverflowError):  # "abc", "nan", "inf"
            raise SettingsError(f"token id must be a whole number, got {token!r}") from None
        session = prepare(lang, session, tuple(controls))
        st = session.stepper
        with locked(lang, session):
            if st.traces:
                st.rewind(len(st.tokens) - 1)  # replace the shown step's choice; the old one becomes a branch
            st.step(force_token_id=token_id)
            _after_step(session)
        return render(ui, lang, session)

    @guarded
    @gpu
    def on_undo(lang, session):
        if session is None:
            raise SessionError("nothing to undo")
        with locked(lang, session):
            session.stepper.undo()
        return render(ui, lang, session)

    @guarded
    @gpu
    def on_restore(lang, session, branch):
        if session is None or branch is None or branch == "":
            raise SessionError("choose a saved branch first")
        with locked(lang, session):
            session.stepper.checkout(int(branch))
        return render(ui, lang, session)

    def on_redraw(lang, session):
        return render(ui, lang, session)

    @guarded
    def on_export(lang, session):
        from decoding_lab.ui.common.export import write_files
        if session is None:
            raise SessionError("nothing to export yet: step first")
        st = session.stepper
        payload = st.export()
        payload["entropy_curves"] = {tr.step: [list(p) for p in tr.entropy_curve] for tr in st.traces}
        headers, rows = views.step_table(st, "en")
        return {ui.files: gr.update(value=write_files("explorer", payload, headers, rows), visible=True)}

    def on_order(lang, preset):
        if preset in PRESET_ORDERS:
            return {ui.settings["custom_order"]: ",".join(PRESET_ORDERS[preset])}
        return {ui.settings["custom_order"]: gr.update()}

    def on_custom_order(order):
        return {ui.settings["order_preset"]: CUSTOM}

    names = ["lang", "session", "model", "hub_id", "prompt", "chat", *SETTING_KEYS, "top_n"]
    for fn in (on_reset, on_step, on_play):
        with_params(fn, names)
    with_params(on_step_n, names + ["n"])
    with_params(on_force, names + ["token_id"])
    with_params(on_restore, ["lang", "session", "branch"])

    on_reset, on_step, on_step_n, on_play, on_force, on_undo, on_restore = (
        gated(f, jobs) for f in (on_reset, on_step, on_step_n, on_play, on_force, on_undo, on_restore))
    ev: dict[str, Any] = {}
    ev["step"] = ui.step.click(on_step, base + ctl, out, api_name="explorer_step", concurrency_id="model",
                               show_progress="minimal")
    ev["step_n"] = ui.step_n.click(on_step_n, base + ctl + [ui.n_steps], out, api_name="explorer_step_n",
                                   concurrency_id="model", show_progress="minimal")
    ev["play"] = ui.play.click(on_play, base + ctl, out, api_name="explorer_play", concurrency_id="model",
                               show_progress="minimal")
    # Stop cancels the stream, then redraws everything from the session (the stream only
    # sent text between its chart updates).
    ui.stop.click(None, None, None, cancels=[ev["play"], ev["step_n"]], api_visibility="private").then(
        on_redraw, base, views_out, api_name="explorer_redraw", show_progress="hidden")
    ev["reset"] = ui.reset.click(on_reset, base + ctl, out, api_name="explorer_reset", concurrency_id="model",
                                 cancels=[ev["play"], ev["step_n"]])
    ev["force"] = ui.force.click(on_force, base + ctl + [ui.candidates], views_out, api_name="explorer_force",
                                 concurrency_id="model", show_progress="minimal")
    ui.click_force.click(on_force, base + ctl + [ui.click_token], views_out, api_name="explorer_force_click",
                         concurrency_id="model", api_visibility="undocumented", show_progress="minimal")
    ui.undo.click(on_undo, base, views_out, api_name="explorer_undo", concurrency_id="model", show_progress="minimal")
    ui.restore.click(on_restore, base + [ui.branches], views_out, api_name="explorer_restore",
                     concurrency_id="model")
    ui.export.click(on_export, base, [ui.files], api_name="explorer_export")
    ui.settings["order_preset"].input(on_order, [lang_state, ui.settings["order_preset"]],
                                      [ui.settings["custom_order"]], api_name="explorer_order_preset")
    ui.settings["custom_order"].input(on_custom_order, [ui.settings["custom_order"]], [ui.settings["order_preset"]],
                                      api_name="explorer_custom_order")
    # Write the share query into the address bar (no server round trip).
    ui.share.change(None, [ui.share], None,
                    js="(q) => { if (q) { history.replaceState(null, '', '?' + q); } return []; }")
    ev["render"] = lambda lang, session: render(ui, lang, session)
    ev["views_out"] = views_out
    return ev
