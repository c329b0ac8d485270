"""The "Verifier-tilted sampling" section of the Many-samples tab: a live run on the default model.

One click runs the plain chain (eta = 0) and then the tilted chain, logits' = (z + eta·V) / T,
with V from short greedy rollouts judged by the addition verifier, on the same problem and
seed; the tilted run streams step by step. The core (``experiments.tilt_run``) does the runs and
the records; ``tilt_views`` draws them. The last pair of runs (JSON) lives in a session ``gr.State``
so a language switch redraws it.

Stop asks the running tilted chain to end after its current step, so the run still gets its
verdict and the tab's job slot is freed cleanly. A running event cannot see a newer ``gr.State``
value, so the request goes through ``common.stops.StopRequests``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from decoding_lab.experiments import tilt_run as TR
from decoding_lab.stages import SettingsError
from decoding_lab.tasks.sets import get_task
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.sessions import SessionJobs
from decoding_lab.ui.common.state import as_number
from decoding_lab.ui.common.stops import StopRequests
from decoding_lab.ui.common.tab import inputs_of
from decoding_lab.ui.common.validate import validator, watch
from decoding_lab.ui.multisample import tilt_views
from decoding_lab.ui.multisample.parts import TiltParts
from decoding_lab.ui.multisample.strings import tr_tilt as tr

TASK = "addition"
N_PROBLEMS = 81
DEFAULTS: dict[str, Any] = {"problem": 2, "eta": 10.0, "temperature": 0.0, "top_m": 4, "rollout_tokens": 16,
                            "seed": 0, "max_new_tokens": 24}
KEYS = tuple(DEFAULTS)                      # the controls, as the API names them (``tilt_run``'s parameters)


def problems() -> list[Any]:
    """All 81 addition problems, in the sweep's order (problem i is the sweep's problem i)."""
    return get_task(TASK).problems(N_PROBLEMS, seed=0)


def problem_choices() -> list[tuple[str, int]]:
    return [(f"{p.index}: {p.data['a']} + {p.data['b']}", p.index) for p in problems()]


def config_from(values: dict[str, Any]) -> TR.TiltConfig:
    """Control values -> a validated ``TiltConfig`` (raises ``SettingsError`` naming the bad value)."""
    def num(key: str, integer: bool = False) -> Any:
        v = as_number(key, values.get(key))
        return int(v) if integer and float(v).is_integer() else v
    return TR.TiltConfig(eta=num("eta"), temperature=num("temperature"), top_m=num("top_m", True),
                         rollout_tokens=num("rollout_tokens", True), seed=num("seed", True),
                         max_new_tokens=num("max_new_tokens", True))


@dataclass(frozen=True)
class TiltRequest:
    """One click of Run: the problem and the tilt settings, validated once."""

    lang: str
    problem: int
    config: TR.TiltConfig

    @classmethod
    def from_inputs(cls, values: dict[str, Any]) -> "TiltRequest":
        config = config_from(values)
        return cls(values.get("lang") or "en", cls.check_problem(values.get("problem")), config)

    @staticmethod
    def check_problem(index: Any) -> int:
        """The problem's index in the sweep's list (the list shows "2: 17 + 25" for index 2)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < N_PROBLEMS:
            raise SettingsError(f"problem must be one of 0..{N_PROBLEMS - 1}, got {str(index)[:40]!r}")
        return index


def fill(ui: TiltParts, values: dict[str, Any]) -> dict:
    """Control updates for a lesson's ``tilt`` preset (unknown keys are refused by name)."""
    unknown = set(values) - set(KEYS)
    if unknown:
        raise SettingsError(f"unknown tilt setting(s): {', '.join(sorted(unknown))}")
    config_from({**DEFAULTS, **values})                   # validate before anything changes
    return {ui.controls[k]: v for k, v in values.items()}


# --------------------------------------------------------------------------- events
def views(ui: TiltParts, lang: str, last: dict | None, status: str | None = None) -> dict:
    """The section's views for the last pair of runs, in ``lang``."""
    return tilt_views.updates(ui, lang, tilt_views.render(lang, last, status, eta=DEFAULTS["eta"]))


def relabel(ui: TiltParts, lang: str, last: dict | None) -> dict:
    """Redraw the last runs in ``lang`` (the controls' labels come back through ``Labels``)."""
    return views(ui, lang, last)


def field_check(key: str) -> Any:
    """One tilt setting checked as ``config_from`` checks it, the others at their defaults."""
    return lambda value, _values: config_from({**DEFAULTS, key: value})


def wire(ui: TiltParts, lang_state: Any, jobs: SessionJobs | None = None) -> dict[str, Any]:
    """Run, Stop and the two "try" buttons; returns the events the page may chain."""
    stops = StopRequests()
    # each setting checked beside its control as it is typed (``common.validate``)
    checks = {k: field_check(k) for k in KEYS if k != "problem"}
    watch(lang_state, dict(ui.controls), checks)
    checks["problem"] = lambda index, _v: TiltRequest.check_problem(index)

    def on_run(values: dict[str, Any]) -> Iterator[dict]:
        from decoding_lab.models import DEFAULT_MODEL, get_model
        req = TiltRequest.from_inputs(values)
        lang, config = req.lang, req.config
        task, problem = get_task(TASK), problems()[req.problem]
        run_id = stops.start()
        try:
            yield {**views(ui, lang, {"eta": config.eta}, tr(lang, "running_plain")), ui.last: None,
                   ui.run_id: run_id}
            lm = get_model(DEFAULT_MODEL)
            plain = TR.run_tilted(lm, task, problem, config.plain)
            last: dict[str, Any] = {"plain": plain.to_json(), "tilted": None, "eta": config.eta}
            for run in TR.iter_tilted(lm, task, problem, config, should_stop=lambda: stops.asked(run_id)):
                last = {**last, "tilted": run.to_json()}
                status = None if run.done else tr(lang, "running", n=len(run.steps), sec=run.seconds, r=run.rollouts)
                yield {**views(ui, lang, last, status), ui.last: last}
        finally:
            stops.end(run_id)

    inputs, names = inputs_of({"lang": lang_state, **ui.controls})
    outs = [*tilt_views.outputs(ui), ui.last, ui.run_id]
    run = ui.run.click(model_event(on_run, names, jobs), inputs, outs, api_name="tilt_run",
                       concurrency_id="model", show_progress="minimal", validator=validator(names, checks))
    # Stop runs at once (its own slot): it only marks the run; the run ends after its current step.
    stop = ui.stop.click(stops.request, [ui.run_id], None, api_visibility="private", concurrency_limit=None)
    ui.try_eta0.click(lambda: {ui.eta: 0.0, ui.temperature: 0.7}, None, [ui.eta, ui.temperature],
                      api_visibility="private")
    ui.try_vg.click(lambda: {ui.eta: 20.0, ui.temperature: 0.05}, None, [ui.eta, ui.temperature],
                    api_visibility="private")
    return {"tilt_run": run, "tilt_stop": stop}
