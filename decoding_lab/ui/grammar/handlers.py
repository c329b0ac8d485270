"""The Grammar tab's events: each turns its named inputs into a ``GrammarRequest`` (checked
once), calls the core, and returns the views as a dict keyed by component.

Endpoints (their parameter names are the API's, as before): ``grammar_kind``,
``grammar_preset``, ``grammar_reset``, ``grammar_step``, ``grammar_step_n``,
``grammar_compare``, ``grammar_heal``. User errors become one toast through ``guarded``; the
model events show their progress (and an error) on the generated text or the compare view
only, not on every block they write.

Reset, Step, Step ×N and Constrained vs free run in their own queue group (``grammar``), not
in the model group: each compiles its constraint first, in the grammar pool, and takes a model
slot (``common.runtime.on_model``) only for the model work after it. Token healing compiles
nothing and is an ordinary model job."""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import gradio as gr

from decoding_lab import limits
from decoding_lab.errors import DeadEndError, SettingsError
from decoding_lab.grammar import PRESETS, preset, preset_prompt
from decoding_lab.ui.common.errors import guarded, inform, warn
from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.runtime import on_model, on_model_iter
from decoding_lab.ui.common.stops import StopRequests
from decoding_lab.ui.common.sessions import gated
from decoding_lab.ui.common.state import values_from_settings
from decoding_lab.ui.common.tab import ModelPicker, TabContext, inputs_of, named, picker_fill, preset_settings
from decoding_lab.ui.common.validate import check_choice, choice_check, model_check, number_check, param_check, validator, watch
from decoding_lab.ui.grammar.parts import GrammarParts
from decoding_lab.ui.grammar.session import (CHECK_WAIT, CMP_N, CMP_TOKENS, DEFAULT_PRESET, N_STEPS, STEP_TOKENS,
                                             GrammarRequest, GrammarSession, compiled_constraint, load_model,
                                             model_name, new_session)
from decoding_lab.ui.grammar.strings import KINDS, tr
from decoding_lab.ui.grammar.views import compare_html, healing_views, preset_source, step_views

HEAL_ROWS = 10

#: What the text area holds when the user switches to a kind: (constraint text, a prompt that suits it).
EXAMPLES: dict[str, tuple[str, str]] = {
    "regex": (r"(1[0-2]|[1-9]):[0-5][0-9] (am|pm)",
              "What time do people usually eat lunch? Answer with a time like 12:30 pm."),
    "json_schema": (json.dumps({"type": "object", "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 20},
        "country": {"type": "string", "minLength": 1, "maxLength": 20},
        "population_millions": {"type": "number", "minimum": 0, "maximum": 50}},
        "required": ["city", "country", "population_millions"], "additionalProperties": False}, indent=2),
        "Give facts about Paris as JSON with the fields city, country and population_millions."),
    "choices": ("positive\nnegative\nneutral",
                "Is this review positive, negative or neutral? \"The soup was cold and the waiter was rude.\""),
    "lark": ('start: "[" item ", " item ", " item "]"\nitem: "\\"" /[a-z]{3,10}/ "\\""',
             "List three colours as a JSON array of strings."),
    "gbnf": ('root ::= "The answer is " answer "."\nanswer ::= "yes" | "no"', "Is the Sun a star?"),
}


def example_prompts() -> set[str]:
    """Every prompt the tab itself puts in the box (a kind's example, a preset's own prompt)."""
    return {p for _, p in EXAMPLES.values()} | {p for _, p in PRESETS.values()}


def example_or_typed(v: dict, example: str) -> Any:
    """The new kind's example prompt, unless the box holds a prompt the visitor wrote: that one
    stays, and a note says so (with the example, to copy if wanted)."""
    typed = (v.get("prompt") or "").strip()
    if not typed or typed in {p.strip() for p in example_prompts()} or typed == example.strip():
        return example
    inform(tr(v.get("lang") or "en", "prompt_kept", example=example), v.get("lang") or "en")
    return v.get("prompt")


def load_constraint(parts: GrammarParts, preset_name: str | None = None, kind: str | None = None,
                    text: str | None = None, prompt: str | None = None) -> dict:
    """Updates that load a constraint (and a prompt) into the tab:
    ``load_constraint(parts, preset_name="integer")`` (the preset's own prompt unless ``prompt``
    is given) or ``load_constraint(parts, kind="regex", text="[0-9]+", prompt="...")``. A running
    session starts over at the next Step, because what it was built from changed."""
    if preset_name is not None:
        preset(preset_name)  # a bad name raises GrammarError here, not in the visitor's face
        return {parts.kind: "preset", parts.preset: gr.update(value=preset_name, visible=True),
                parts.text: gr.update(value=preset_source(preset_name), interactive=False),
                parts.prompt: prompt if prompt is not None else preset_prompt(preset_name)}
    if kind not in KINDS or kind == "preset":
        raise SettingsError(f"fill: give a preset name or a kind among {', '.join(KINDS[1:])}")
    return {parts.kind: kind, parts.preset: gr.update(visible=False),
            parts.text: gr.update(value=text if text is not None else EXAMPLES[kind][0], interactive=True),
            parts.prompt: prompt if prompt is not None else EXAMPLES[kind][1]}


def fill(picker: ModelPicker, parts: GrammarParts, preset: dict[str, Any], lang: str) -> dict:
    """A lesson's ``[preset]`` loaded into the tab: the Explorer's model choice and settings
    (this tab reads that model), the lesson's constraint preset (``constraint``) and prompt."""
    out = picker_fill(picker, preset)
    if picker.settings:
        values = values_from_settings(preset_settings(preset))
        out.update({comp: values[key] for key, comp in picker.settings.items()})
    out.update(load_constraint(parts, preset_name=preset.get("constraint", DEFAULT_PRESET),
                               prompt=preset.get("prompt") or None))
    return out


def link_restore(parts: GrammarParts, values: dict[str, Any]) -> dict:
    """A shared link's kind made whole: a preset shows its picker and its source (read only); the
    other kinds hide the picker and open the grammar box for editing, holding the link's grammar."""
    kind = values.get("kind")
    if kind is None:
        return {}
    if kind == "preset":
        return {parts.text: gr.update(value=preset_source(values.get("preset") or DEFAULT_PRESET), interactive=False),
                parts.preset: gr.update(visible=True)}
    text = values.get("grammar", EXAMPLES.get(kind, ("", ""))[0])
    return {parts.text: gr.update(value=text, interactive=True), parts.preset: gr.update(visible=False)}


def fill_outputs(picker: ModelPicker, parts: GrammarParts) -> list:
    return [picker.model, picker.hub, picker.chat, *picker.settings.values(), parts.kind, parts.preset, parts.text,
            parts.prompt]


def session_for(req: GrammarRequest, session: GrammarSession | None, started: bool = False) -> GrammarSession:
    """The visitor's session, started over when what it was built from changed. When this tab
    had one and it is gone, it expired (``DECODING_LAB_SESSION_TTL``): say so."""
    if session is not None and session.key == req.key:
        return session
    fresh = new_session(req)
    if session is not None:
        inform(tr(req.lang, "restarted"), req.lang)
    elif started:
        minutes = max(1, round(limits.current().session_ttl / 60))
        warn(t(req.lang, "session_expired", minutes=minutes), req.lang)
    return fresh


def advance(lang: str, session: GrammarSession, n: int) -> None:
    """Up to ``n`` steps (call it holding the session's lock); the end of the text or of the
    budget is a warning, not an error."""
    st = session.stepper
    for _ in range(int(n)):
        if st.finished:
            warn(tr(lang, "finished"), lang)
            break
        if len(st.tokens) >= st.max_new_tokens:
            warn(tr(lang, "budget", n=st.max_new_tokens) if session.mask.status() == "incomplete"
                 else tr(lang, "finished"), lang)
            break
        try:
            st.step()
        except DeadEndError as e:  # the steps taken so far stay; say why it stopped
            warn(str(e), lang)
            break


def constraint_check(field: str):
    """The constraint compiled before the event runs, so a bad regex, schema or grammar is
    painted under the box that holds it (the grammar box, or the preset list for a preset);
    the handler then finds it compiled, or still compiling (``session.compile_started``)."""
    def check(value: Any, values: dict[str, Any]) -> Any:
        kind = values.get("kind")
        if kind not in KINDS or (kind == "preset") != (field == "preset"):
            return value   # a bad kind is the kind's own message; the other box is not in use
        # a long compile is let through after CHECK_WAIT s: the handler waits for it and reports it
        compiled_constraint(kind, values.get("preset"), values.get("constraint"), wait=CHECK_WAIT)
        return value
    return check


def checks(compare: bool = False) -> dict[str, Any]:
    """What the model events check beside each control before they run (``common.validate``):
    the same checks ``GrammarRequest.from_inputs`` applies, in the same words."""
    lo, hi = CMP_TOKENS if compare else STEP_TOKENS
    return {"model": model_check, "kind": choice_check("constraint kind", lambda: KINDS),
            "preset": constraint_check("preset"), "constraint": constraint_check("constraint"),
            "chat": choice_check("prompt format", lambda: ("chat", "raw")),
            "temperature": param_check("temperature"), "seed": param_check("seed"),
            "max_new_tokens": number_check("max new tokens" if compare else "token budget", lo, hi, integer=True),
            "n_steps": number_check("N (steps)", *N_STEPS, integer=True),
            "n": number_check("samples per side", *CMP_N, integer=True)}


def wire(ctx: TabContext, parts: GrammarParts) -> dict[str, Any]:
    """Attach the tab's events; returns them by name. The model choice is the Explorer's
    (``ctx.picker``); ``ctx.jobs`` bounds the model jobs one browser tab runs at once."""
    p, ui = ctx.picker, parts
    step_out = [ui.session, ui.started, ui.status, ui.generated, ui.trace, ui.forbidden, ui.timing]
    spec = {"lang": ctx.lang_state, "session": ui.session, "started": ui.started, "model": p.model,
            "hub_id": p.hub, "kind": ui.kind, "preset": ui.preset, "constraint": ui.text, "prompt": ui.prompt,
            "chat": ui.chat, "temperature": ui.temperature, "seed": ui.seed, "max_new_tokens": ui.max_tokens}
    lim = limits.current()
    # Compiling, then model work: at most as many running as can compile plus hold a model slot.
    grammar_group = {"concurrency_id": "grammar", "concurrency_limit": lim.concurrency + lim.grammar_workers}

    def grammar_event(fn, names):
        """A handler that takes its model slot itself, after compiling (``on_model``)."""
        return gated(named(guarded(fn), names), ctx.jobs, model_slot=False)

    def model_job(fn, names):
        return model_event(fn, names, ctx.jobs)

    @guarded
    def on_kind(v: dict) -> dict:
        check_choice("constraint kind", v["kind"], KINDS)
        if v["kind"] == "preset":
            name = v["preset"] or DEFAULT_PRESET
            return {ui.text: gr.update(value=preset_source(name), interactive=False),
                    ui.prompt: example_or_typed(v, preset_prompt(name)), ui.preset: gr.update(visible=True)}
        text, prompt = EXAMPLES.get(v["kind"], ("", ""))
        return {ui.text: gr.update(value=text, interactive=True), ui.prompt: example_or_typed(v, prompt),
                ui.preset: gr.update(visible=False)}

    # the sampling numbers, checked beside their controls as they are typed (``common.validate``)
    watch(ctx.lang_state, {"temperature": ui.temperature, "seed": ui.seed, "max_new_tokens": ui.max_tokens},
          {"temperature": param_check("temperature"), "seed": param_check("seed"),
           "max_new_tokens": number_check("token budget", *STEP_TOKENS, integer=True)})
    kind_out = [ui.text, ui.prompt, ui.preset]
    inputs, names = inputs_of({"lang": ctx.lang_state, "kind": ui.kind, "preset": ui.preset, "prompt": ui.prompt})
    events = {"kind": ui.kind.input(named(on_kind, names), inputs, kind_out, api_name="grammar_kind")}
    inputs, names = inputs_of({"lang": ctx.lang_state, "preset": ui.preset, "prompt": ui.prompt})
    def on_preset(v: dict) -> dict:
        return on_kind({**v, "kind": "preset"})

    events["preset"] = ui.preset.input(named(on_preset, names), inputs, kind_out, api_name="grammar_preset")

    def on_reset(v: dict) -> dict:
        fresh = new_session(GrammarRequest.from_inputs(v))
        return {ui.session: fresh, ui.started: True, **step_views(ui, v["lang"], fresh)}

    def on_step(v: dict) -> dict:
        # A bad constraint stops here: one error, the session untouched. An unchanged one is not compiled again.
        req = GrammarRequest.from_inputs(v, v["session"])
        session = session_for(req, v["session"], v["started"])
        with session.locked(req.lang):
            session.apply(req)
            on_model(advance, req.lang, session, req.n_steps)
        return {ui.session: session, ui.started: True, **step_views(ui, req.lang, session)}

    inputs, names = inputs_of(spec)
    model = {**grammar_group, "show_progress_on": [ui.generated]}
    step_checks = checks()
    events["reset"] = ui.reset.click(grammar_event(on_reset, names), inputs, step_out, api_name="grammar_reset",
                                     validator=validator(names, step_checks), **model)
    events["step"] = ui.step.click(grammar_event(on_step, names), inputs, step_out, api_name="grammar_step",
                                   validator=validator(names, step_checks), **model)
    inputs, names = inputs_of({**spec, "n_steps": ui.n_steps})
    events["step_n"] = ui.step_n.click(grammar_event(on_step, names), inputs, step_out, api_name="grammar_step_n",
                                       show_progress="minimal", validator=validator(names, step_checks), **model)

    stops = StopRequests()

    def on_compare(v: dict) -> Iterator[dict]:
        """Both sides sampled, the summary line saying which side and step it is on (at most
        twice a second); Stop ends both sides after their current step."""
        from decoding_lab.experiments.constrained_vs_free import (SideProgress, compile_mask,
                                                                  iter_constrained_vs_free)
        req = GrammarRequest.from_inputs(v)
        lm, chat_mode = load_model(req.model, req.chat)
        mask = compile_mask(req.constraint, lm)  # the grammar pool, before the model slot
        run_id = stops.start()
        try:
            yield {ui.cmp_run_id: run_id}
            t0 = last = time.perf_counter()
            r = None
            for item in on_model_iter(iter_constrained_vs_free, lm, req.prompt, req.constraint, n=req.n,
                                      settings=req.settings, max_new_tokens=req.max_new_tokens, chat=chat_mode,
                                      mask=mask, should_stop=lambda: stops.asked(run_id)):
                if not isinstance(item, SideProgress):
                    r = item
                elif time.perf_counter() - last >= 0.5:
                    last = time.perf_counter()
                    side = tr(req.lang, "cmp_side_" + item.side)
                    yield {ui.cmp_summary: tr(req.lang, "cmp_progress", side=side, step=item.step,
                                              total=item.max_new_tokens, sec=last - t0)}
            stopped = stops.asked(run_id)
        finally:
            stops.end(run_id)
        if r is None:
            return
        if r.unfinished and not stopped:
            warn(tr(req.lang, "cmp_unfinished", k=r.unfinished), req.lang)
        summary, body = compare_html(req.lang, r)
        if stopped:
            summary = f"**{tr(req.lang, 'cmp_stopped')}**\n\n{summary}"
        yield {ui.cmp_last: r, ui.cmp_summary: summary, ui.cmp_view: body, ui.cmp_run_id: None}

    cmp = {k: c for k, c in spec.items() if k not in ("session", "started", "max_new_tokens")}
    inputs, names = inputs_of({**cmp, "n": ui.cmp_n, "max_new_tokens": ui.cmp_tokens})
    events["compare"] = ui.cmp_run.click(grammar_event(on_compare, names), inputs,
                                         [ui.cmp_last, ui.cmp_summary, ui.cmp_view, ui.cmp_run_id],
                                         api_name="grammar_compare", show_progress_on=[ui.cmp_view],
                                         validator=validator(names, checks(compare=True)), **grammar_group)
    # Stop runs at once (no slot): it only marks the run, which ends after its current step.
    ui.cmp_stop.click(stops.request, [ui.cmp_run_id], None, api_visibility="private", concurrency_limit=None)

    def on_heal(v: dict) -> dict:
        from decoding_lab.experiments.constrained_vs_free import answer_prefix_ids
        from decoding_lab.grammar import healing_demo
        check_choice("prompt format", v["chat"], ("chat", "raw"))
        lm, chat_mode = load_model(model_name(v["model"], v["hub_id"]), v["chat"])
        d = healing_demo(lm, answer_prefix_ids(lm, v["prompt"] or "", v["prefix"] or "", chat_mode), top_n=HEAL_ROWS)
        summary, without, with_h = healing_views(v["lang"], d)
        return {ui.heal_last: d, ui.heal_summary: summary, ui.heal_without: without, ui.heal_with: with_h}

    inputs, names = inputs_of({"lang": ctx.lang_state, "model": p.model, "hub_id": p.hub, "prompt": ui.prompt,
                               "chat": ui.chat, "prefix": ui.heal_prefix})
    events["heal"] = ui.heal_run.click(model_job(on_heal, names), inputs,
                                       [ui.heal_last, ui.heal_summary, ui.heal_without, ui.heal_with],
                                       api_name="grammar_heal", concurrency_id="model",
                                       validator=validator(names, {"model": model_check,
                                                                   "chat": checks()["chat"]}))
    return events
