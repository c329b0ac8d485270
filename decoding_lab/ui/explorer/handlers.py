"""Explorer tab, handlers: each turns a click into stepper calls and returns the views as a dict
keyed by component. The stepper does the maths; ``views`` and ``common.plots`` draw its traces.

Every handler takes one dict of named inputs (``named``). The step-like ones get ``lang``,
``session`` (two ``gr.State``s, invisible to the API), then ``model, hub_id, prompt, chat``,
one value per key of ``SETTING_KEYS`` and ``top_n`` (see ``request.CONTROL_NAMES``), turned
into an ``ExplorerRequest`` once."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import gradio as gr

from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import SessionError, max_new_tokens_limit
from decoding_lab.ui.common import urlstate
from decoding_lab.ui.common.errors import guarded, warn
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.state import CUSTOM, SETTING_KEYS, number_input, values_from_settings
from decoding_lab.ui.common.tab import TabContext, inputs_of, named, preset_settings
from decoding_lab.ui.common.validate import (choice_check, model_check, number_check, prompt_check, settings_checks,
                                             validator, watch)
from decoding_lab.ui.explorer import engines, onboarding, strings
from decoding_lab.ui.explorer.busy import calm_when_busy
from decoding_lab.ui.explorer.parts import ExplorerParts
from decoding_lab.ui.explorer.request import (MAX_STEP_N, TOP_N_RANGE, ExplorerRequest, ExplorerSession, LinkRest,
                                              new_session, session_for)
from decoding_lab.ui.explorer.views import dist_view, render, step_table, text_views, view_components

FULL_EVERY = 1.0  # seconds between full redraws while playing
LESSON_TOP_N = 20  # the tokens shown after a lesson's preset is loaded


#: What the step-like events check beside each control before they run (``common.validate``).
CHECKS = {**settings_checks(), "top_n": number_check("top-N", *TOP_N_RANGE, integer=True),
          "n": number_check("N", 1, MAX_STEP_N, integer=True), "chat": choice_check("prompt format", lambda: ("chat", "raw")),
          "order_preset": choice_check("stage order", lambda: (*PRESET_ORDERS, CUSTOM)),
          "model": model_check, "prompt": prompt_check}


def prepare(req: ExplorerRequest, session: ExplorerSession | None, started: bool = False,
            restart: bool = True) -> ExplorerSession:
    """The visitor's session, or a fresh one built from ``req``. A changed model or prompt starts
    a new run, and the status line says so (with ``restart=False``, for forcing a token of the
    run on screen, the old run goes on with a warning). Settings apply from the next step
    (``session.apply``). When this tab had a session and it is gone, it expired
    (``DECODING_LAB_SESSION_TTL``): say so."""
    if session is None:
        if started:
            from decoding_lab import limits
            warn(t(req.lang, "session_expired", minutes=max(1, round(limits.current().session_ttl / 60))), req.lang)
        return session_for(req)
    session.notice = ""
    if not session.built_from(req):
        if not restart:
            warn(t(req.lang, "stale_prompt"), req.lang)
            return session
        fresh = session_for(req)
        fresh.notice = "new_run"
        return fresh
    return session


def viewed(session: ExplorerSession | None, v: dict) -> ExplorerSession | None:
    """Hand the chart's scale (the log-scale box) to the session the views are drawn from."""
    if session is not None:
        session.log_y = bool(v.get("log_y"))
    return session


def whole_number(value: Any, what: str, lo: int, hi: int) -> int:
    """A count as the API sent it: text, NaN, 1.5 or out of range are refused naming ``what``."""
    return int(number_input(what, value, lo, hi, integer=True))


def token_id_of(token: Any) -> int:
    """A candidate's token id, from the dropdown or the chart's hidden box."""
    if token is None or str(token).strip() == "":
        raise SettingsError("choose a candidate token first")
    try:
        value = float(token)
        if isinstance(token, bool) or not value.is_integer():   # 2.7 is refused, never rounded
            raise ValueError
        return int(value)
    except (ValueError, OverflowError, TypeError):  # "abc", "nan", "inf", 2.7, a list
        raise SettingsError.coded("not_whole", name="token id", got=f"{token!r:.40}") from None


def pick_of(text: Any) -> tuple[int, int]:
    """'3:1234' (a popover's choice) -> (step 3, token id 1234)."""
    step, _, token = str(text or "").partition(":")
    return whole_number(step if step.strip().isdigit() else None, "step", 0, 10**6), token_id_of(token)


def fill(ui: ExplorerParts, preset: dict[str, Any], lang: str) -> dict:
    """A lesson's preset: model, prompt and settings into the controls, then a fresh session
    that has run the preset's ``steps``, drawn."""
    settings = preset_settings(preset)
    model, prompt = preset.get("model") or ui.model.value, preset.get("prompt", "")
    chat = "chat" if preset.get("chat", True) else "raw"
    values = values_from_settings(settings)
    out: dict[Any, Any] = {ui.model: model, ui.hub: "", ui.prompt: prompt, ui.chat: chat, ui.log_y: False,
                           **{ui.settings[k]: values[k] for k in SETTING_KEYS}}
    session = new_session(model, prompt, chat, settings, LESSON_TOP_N)
    for _ in range(int(preset.get("steps", 0))):
        if session.stepper.finished:
            break
        session.step()
    return {**out, **render(ui, lang, session)}


def fill_outputs(ui: ExplorerParts) -> list[Any]:
    return [ui.model, ui.hub, ui.prompt, ui.chat, ui.log_y, *(ui.settings[k] for k in SETTING_KEYS),
            *view_components(ui)]


def wire(ctx: TabContext, ui: ExplorerParts) -> dict[str, Any]:
    """Attach the handlers; returns the events the page may chain or cancel. ``ctx.jobs`` bounds
    how many model jobs one browser tab runs at once (see ``common.sessions``)."""
    # log_y: the chart's scale, a view choice every handler hands to the session it draws
    state = {"lang": ctx.lang_state, "session": ui.session, "started": ui.started, "log_y": ui.log_y}
    controls = {"model": ui.model, "hub_id": ui.hub, "prompt": ui.prompt, "chat": ui.chat,
                **{k: ui.settings[k] for k in SETTING_KEYS}, "top_n": ui.top_n}
    views_out = view_components(ui)   # every view, the share link included (``views.share_query``)

    def model_job(fn: Callable, extra: dict[str, Any] | None = None, with_controls: bool = True) -> tuple:
        """(handler, inputs): ``fn`` on named inputs, user errors as toasts, in a job slot of the tab."""
        inputs, names = inputs_of({**state, **(controls if with_controls else {}), **(extra or {})})
        return calm_when_busy(model_event(fn, names, ctx.jobs), ui.status), inputs

    def checked(extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """A bad setting is refused beside its control before the event runs (``common.validate``).
        Not for the forcing events: gradio reads their candidate list (a choice per session)
        before a validator runs and would answer a stale choice with a bare HTTP 400; their
        handler checks the same settings."""
        _, names = inputs_of({**state, **controls, **(extra or {})})
        return {"validator": validator(names, CHECKS)}

    def on_reset(v: dict) -> dict:
        req = ExplorerRequest.from_inputs(v)
        return render(ui, req.lang, viewed(session_for(req), v))

    def on_step(v: dict) -> dict:
        req = ExplorerRequest.from_inputs(v)
        session = viewed(prepare(req, v["session"], v["started"]), v)
        with session.locked(req.lang):
            session.apply(req)
            session.step()
        return render(ui, req.lang, session)

    def on_step_n(v: dict) -> Iterator[dict]:
        n = whole_number(v["n"], "N", 1, MAX_STEP_N)
        req = ExplorerRequest.from_inputs(v)
        yield from run(req, viewed(prepare(req, v["session"], v["started"]), v), n)

    def on_play(v: dict) -> Iterator[dict]:
        req = ExplorerRequest.from_inputs(v)
        session = viewed(prepare(req, v["session"], v["started"]), v)
        yield from run(req, session, session.stepper.max_new_tokens)

    def run(req: ExplorerRequest, session: ExplorerSession, n: int) -> Iterator[dict]:
        lang, st = req.lang, session.stepper
        with session.locked(lang):
            session.apply(req)
        if st.finished:
            raise SessionError("generation reached an end-of-sequence token; undo or reset to go on")
        last_full = 0.0
        for i in range(n):
            if st.finished or len(st.tokens) >= st.max_new_tokens:
                break
            with session.locked(lang):
                session.step()
            # Charts at most every FULL_EVERY seconds, the text after every step: a browser
            # cannot redraw three plotly figures ten times a second (and would stop responding).
            now = time.perf_counter()
            last = i == n - 1 or st.finished or len(st.tokens) >= st.max_new_tokens
            if last or now - last_full >= FULL_EVERY:
                last_full = now
                yield render(ui, lang, session)
            else:
                yield text_views(ui, lang, session)

    def on_force(v: dict) -> dict:
        token_id = token_id_of(v["token_id"])
        req = ExplorerRequest.from_inputs(v)
        session = viewed(prepare(req, v["session"], v["started"], restart=False), v)
        st = session.stepper
        with session.locked(req.lang):
            session.apply(req)
            if st.traces:
                st.rewind(len(st.tokens) - 1)  # replace the shown step's choice; the old one becomes a branch
            session.step(force_token_id=token_id)
        return render(ui, req.lang, session)

    def on_force_at(v: dict) -> dict:
        """A token's popover: force ``token`` at ``step`` of the shown run (any step, not only the
        last); the steps after it are saved as a branch."""
        at, token_id = pick_of(v["pick"])
        session = v["session"]
        if session is None:
            raise SessionError("nothing to force yet: step first")
        req = ExplorerRequest.from_inputs(v)
        st = viewed(session, v).stepper
        with session.locked(req.lang):
            if at > len(st.tokens):
                raise SessionError(f"step {at} is not in this run (it has {len(st.tokens)} steps)")
            session.apply(req)
            st.rewind(at)
            session.step(force_token_id=token_id)
        return render(ui, req.lang, session)

    def on_undo(v: dict) -> dict:
        session = v["session"]
        if session is None:
            raise SessionError("nothing to undo")
        with session.locked(v["lang"]):
            session.stepper.undo()
        return render(ui, v["lang"], viewed(session, v))

    def on_restore(v: dict) -> dict:
        session, branch = v["session"], v["branch"]
        if session is None or branch is None or branch == "":
            raise SessionError("choose a saved branch first")
        with session.locked(v["lang"]):
            session.stepper.checkout(int(branch))
        return render(ui, v["lang"], viewed(session, v))

    def on_redraw(v: dict) -> dict:
        return render(ui, v["lang"], viewed(v["session"], v))

    def on_log_y(v: dict) -> dict:
        return {ui.dist: dist_view(viewed(v["session"], v), v["lang"])}

    def on_export(v: dict) -> dict:
        from decoding_lab.ui.common.export import write_files
        session = v["session"]
        if session is None:
            raise SessionError("nothing to export yet: step first")
        st = session.stepper
        payload = st.export()
        payload["entropy_curves"] = {tr.step: [list(p) for p in tr.entropy_curve] for tr in st.traces}
        headers, rows = step_table(st, "en")
        return {ui.files: gr.update(value=write_files("explorer", payload, headers, rows), visible=True)}

    def on_order(v: dict) -> dict:
        preset = v["preset"]
        if isinstance(preset, str) and preset in PRESET_ORDERS:   # an API caller may send a list
            return {ui.settings["custom_order"]: ",".join(PRESET_ORDERS[preset])}
        return {ui.settings["custom_order"]: gr.update()}

    def on_custom_order(v: dict) -> dict:
        return {ui.settings["order_preset"]: CUSTOM}

    def on_replay(v: dict) -> dict:
        """A shared link's run, replayed: the controls hold the link's settings (the page set
        them), ``replay`` its steps and forced tokens; the same seed gives the same tokens. At
        most ``urlstate.LINK_REPLAY_STEPS`` steps run by themselves: a longer link waits for the
        visitor's "Replay the other … steps" (``on_replay_rest``)."""
        from urllib.parse import parse_qsl
        steps, forced, notes = urlstate.decode_run(dict(parse_qsl(v["replay"] or "")), max_new_tokens_limit(),
                                                   v["lang"])
        for note in notes:
            warn(note, v["lang"])
        req = ExplorerRequest.from_inputs(v)
        if steps == 0:
            return {ui.replay: gr.update()}
        session = viewed(session_for(req), v)
        st = session.stepper
        with session.locked(req.lang):
            for i in range(min(steps, urlstate.LINK_REPLAY_STEPS)):
                if st.finished:
                    break
                session.step(force_token_id=forced.get(i))
        if steps > len(st.tokens) and not st.finished:
            session.link_rest = LinkRest(steps, forced, tuple(st.tokens))
        return render(ui, req.lang, session)

    def on_replay_rest(v: dict) -> Iterator[dict]:
        """The rest of a long link's run, on the visitor's request, streamed like Step ×N (Stop
        cancels it; the button then offers what is still left)."""
        session, lang = v["session"], v["lang"]
        rest = session.pending_link() if session is not None else None
        if rest is None:
            raise SessionError("nothing of the link is left to replay (the run on screen is no longer the link's)")
        st = session.stepper
        last_full = 0.0
        while len(st.tokens) < rest.total and not st.finished and len(st.tokens) < st.max_new_tokens:
            with session.locked(lang):
                session.step(force_token_id=rest.forced.get(len(st.tokens)))
            rest.tokens = tuple(st.tokens)
            now = time.perf_counter()
            if session.pending_link() is None or now - last_full >= FULL_EVERY:
                last_full = now
                yield render(ui, lang, session)
            else:
                yield text_views(ui, lang, session)
        session.link_rest = None   # done (the last step above drew everything)

    def on_orders(v: dict) -> dict:
        from decoding_lab.ui.explorer.orders import orders_md
        session = v["session"]
        if session is None:
            raise SessionError("nothing to compare yet: step first")
        with session.locked(v["lang"]):
            return {ui.orders: orders_md(session, v["lang"])}

    def on_show_cut(v: dict) -> dict:
        out = fill(ui, onboarding.CUT_PRESET, v["lang"])
        # the prompt and settings just changed under the visitor's eyes: the status line says to what
        out[ui.status] = f"**{strings.tr(v['lang'], 'cut_loaded')}** · {out[ui.status]}"
        return out

    onboarding.wire(ctx.page, ui.onboard, (*model_job(on_show_cut, with_controls=False), fill_outputs(ui)))
    busy = {"concurrency_id": "model", "show_progress": "minimal"}
    ev: dict[str, Any] = {}
    ev["step"] = ui.step.click(*model_job(on_step), views_out, api_name="explorer_step", **busy, **checked())
    ev["step_n"] = ui.step_n.click(*model_job(on_step_n, {"n": ui.n_steps}), views_out, api_name="explorer_step_n", **busy,
                                   **checked({"n": ui.n_steps}))
    ev["play"] = ui.play.click(*model_job(on_play), views_out, api_name="explorer_play", **busy, **checked())
    # Stop cancels the stream, then redraws everything from the session (the stream only
    # sent text between its chart updates).
    redraw_inputs, redraw_names = inputs_of(state)
    ev["stop"] = ui.stop.click(None, None, None, cancels=[ev["play"], ev["step_n"]], api_visibility="private").then(
        named(on_redraw, redraw_names), redraw_inputs, views_out, api_name="explorer_redraw", show_progress="hidden")
    ev["reset"] = ui.reset.click(*model_job(on_reset), views_out, api_name="explorer_reset", concurrency_id="model",
                                 cancels=[ev["play"], ev["step_n"]], **checked())
    ev["force"] = ui.force.click(*model_job(on_force, {"token_id": ui.candidates}), views_out,
                                 api_name="explorer_force", **busy)
    ev["force_click"] = ui.click_force.click(*model_job(on_force, {"token_id": ui.click_token}), views_out,
                                             api_name="explorer_force_click", api_visibility="undocumented", **busy)
    ev["force_at"] = ui.alt_force.click(*model_job(on_force_at, {"pick": ui.alt_pick}), views_out,
                                        api_name="explorer_force_at", **busy)
    ev["undo"] = ui.undo.click(*model_job(on_undo, with_controls=False), views_out, api_name="explorer_undo", **busy)
    ev["restore"] = ui.restore.click(*model_job(on_restore, {"branch": ui.branches}, with_controls=False), views_out,
                                     api_name="explorer_restore", concurrency_id="model")
    ev["orders"] = ui.orders_btn.click(*model_job(on_orders, with_controls=False), [ui.orders, ui.status],
                                       api_name="explorer_orders", **busy)
    ev["log_y"] = ui.log_y.input(named(on_log_y, redraw_names), redraw_inputs, [ui.dist], api_name="explorer_log_y",
                                 show_progress="hidden")
    export_inputs, export_names = inputs_of(state)
    ev["export"] = ui.export.click(named(guarded(on_export), export_names), export_inputs, [ui.files],
                                   api_name="explorer_export")
    order_inputs, order_names = inputs_of({"lang": ctx.lang_state, "preset": ui.settings["order_preset"]})
    ev["order_preset"] = ui.settings["order_preset"].input(named(on_order, order_names), order_inputs,
                                                           [ui.settings["custom_order"]], api_name="explorer_order_preset")
    ev["custom_order"] = ui.settings["custom_order"].input(named(on_custom_order, ["order"]),
                                                           [ui.settings["custom_order"]], [ui.settings["order_preset"]],
                                                           api_name="explorer_custom_order")
    ev["engine_defaults"] = engines.wire(ui, ctx.lang_state)
    ev["watch"] = watch(ctx.lang_state, {**controls, "n": ui.n_steps}, CHECKS)
    # A shared link with steps: the page writes them into the hidden ``replay`` box after it has
    # set the controls; replaying is a model job like any Step.
    ev["replay"] = ui.replay.change(*model_job(on_replay, {"replay": ui.replay}), [*views_out, ui.replay],
                                    api_name="explorer_replay", **busy)
    ev["replay_rest"] = ui.replay_more.click(*model_job(on_replay_rest, with_controls=False), views_out,
                                             api_name="explorer_replay_rest", **busy)
    ui.stop.click(None, None, None, cancels=[ev["replay_rest"]], api_visibility="private")
    ui.reset.click(None, None, None, cancels=[ev["replay_rest"]], api_visibility="private")
    # Write the share query into the address bar (no server round trip); the page's own keys
    # (tab, lesson, screen) stay.
    ev["share"] = ui.share.change(None, [ui.share], None, js="(q) => { if (q) { window.dlSetRun(q); } return []; }")
    # Before any Step (and after a change that the next Step will apply), the controls themselves
    # are the link: a browser-only event writes them as they change.
    gr.on([c.change for c in controls.values()], None, list(controls.values()), None,
          js=urlstate.controls_writer_js(list(controls)), api_visibility="private")
    return ev
