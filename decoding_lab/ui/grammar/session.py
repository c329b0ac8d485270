"""What the Grammar tab is asked (``GrammarRequest``) and what it keeps per visitor (``GrammarSession``).

Every model event of the tab (Reset, Step, Step ×N, Constrained vs free) reads the same
inputs: the model choice, the constraint (kind, preset, text), the prompt and its format, the
temperature, the seed and a token budget. ``GrammarRequest.from_inputs(values)`` turns the
event's named inputs into one frozen request and checks it once: a bad regex, schema or
grammar raises its ``GrammarError`` here, before any model loads and before the session is
touched (so it is one error, and the steps already on screen stay).

The session holds the stepper with its ``GrammarMask`` stage (the grammar matcher) and the
compiled ``Constraint``, so a Step on an unchanged constraint compiles nothing; the model
weights stay shared (the stepper's deepcopy never copies them).

Compiling never holds a model slot (``common.runtime.model_slot``): the constraint and the
model-vocabulary matcher are built in the grammar pool, and only loading the model and the
prompt's forward pass take a slot, so a slow grammar never delays another visitor's Step."""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from decoding_lab.errors import SettingsError
from decoding_lab.grammar import Constraint, GrammarMask, build_constraint, preset
from decoding_lab.grammar.compile import bounded, submit
from decoding_lab.grammar.compile import result as compile_result
from decoding_lab.settings import SamplingSettings
from decoding_lab.ui.common.runtime import model_slot, on_model
from decoding_lab.ui.common.session import Session
from decoding_lab.ui.common.state import as_number, number_input
from decoding_lab.ui.common.validate import check_choice
from decoding_lab.ui.grammar.strings import KINDS

TOP_N = 40            # rows of the raw distribution each trace keeps (the forbidden table reads them)
DEFAULT_PRESET = "json-person"
#: The ranges of the tab's own number controls (the sliders show them; the API is held to them).
STEP_TOKENS = (8, 256)     # token budget of a step-through run
N_STEPS = (1, 64)          # Step ×N
CMP_N = (1, 8)             # samples per side, Constrained vs free
CMP_TOKENS = (8, 192)      # new tokens per sample, Constrained vs free


def constraint_source(kind: str, preset_name: str | None, text: str | None) -> tuple[str, str]:
    """What a constraint is compiled from: (kind, preset name or text)."""
    return (kind, preset_name or DEFAULT_PRESET) if kind == "preset" else (kind, text or "")


def make_constraint(kind: str, preset_name: str | None, text: str | None) -> Constraint:
    """The checked constraint (raises ``GrammarError`` with a one-line message)."""
    if kind == "preset":
        return preset(preset_name or DEFAULT_PRESET)
    return build_constraint(kind, text or "")


#: Compiles of constraints, by source: the Run's validator starts one to check it (a bad one is
#: painted under the grammar box), and the handler that runs next waits on the same compile
#: instead of starting another. A validator waits only ``CHECK_WAIT`` seconds: a grammar that
#: compiles longer is let through, and the handler reports its error (gradio holds the page's
#: request while a validator runs, and API clients time out after a few seconds). A finished
#: ``Constraint`` is immutable, so visitors may share one, as they share the model's weights; the
#: matcher a session steps with is built per session (``GrammarMask``). A failed compile is kept
#: (the same text fails the same way); a refusal as busy starts nothing and keeps nothing.
_COMPILES: "OrderedDict[tuple[str, str], cf.Future]" = OrderedDict()
_COMPILES_LOCK = threading.Lock()
COMPILES_KEPT = 32
CHECK_WAIT = 2.0


def compile_started(kind: str, preset_name: str | None, text: str | None) -> cf.Future:
    """The compile of this constraint, started now in the bounded grammar pool or found running or done."""
    source = constraint_source(kind, preset_name, text)
    with _COMPILES_LOCK:
        if source in _COMPILES:
            _COMPILES.move_to_end(source)
            return _COMPILES[source]
        future = submit(make_constraint, kind, preset_name, text)
        _COMPILES[source] = future
        while len(_COMPILES) > COMPILES_KEPT:
            _COMPILES.popitem(last=False)
    return future


def compiled_constraint(kind: str, preset_name: str | None, text: str | None,
                        wait: float | None = None) -> Constraint | None:
    """The compiled constraint (``GrammarError`` for a bad one, or when the deployment's time
    limit runs out). With ``wait``, None when the compile has not finished in ``wait`` seconds."""
    future = compile_started(kind, preset_name, text)
    if wait is not None:
        done, _ = cf.wait([future], timeout=wait)
        if not done:
            return None
    return compile_result(future)


def settings_of(temperature: Any, seed: Any) -> SamplingSettings:
    """as_number, then the core's check: a whole float seed becomes an int; empty, text, NaN,
    infinity, a boolean or a fractional seed gets a message that names the field (an empty seed
    box means a fresh random seed, as in the Explorer)."""
    return SamplingSettings(temperature=as_number("temperature", temperature), seed=as_number("seed", seed))


def model_name(model: str | None, hub_id: str | None) -> str:
    """A Hub id typed in the box wins over the list."""
    return (hub_id or "").strip() or (model or "")


def load_model(name: str, chat: str) -> tuple[Any, bool]:
    """The shared model and whether the prompt goes through its chat template. A load is model
    work, so it takes a model slot (a model already loaded comes back at once)."""
    from decoding_lab.models import get_model
    with model_slot():
        lm = get_model(name)
    return lm, chat == "chat" and bool(getattr(lm, "has_chat_template", False))


@dataclass(frozen=True)
class GrammarRequest:
    """One model event's inputs, checked. ``max_new_tokens`` is the step-through budget for
    Reset / Step and the per-sample budget for Constrained vs free (the API names both so)."""

    lang: str
    model: str                  # the model to load (Hub id or list choice)
    kind: str
    preset: str | None          # as chosen (None: the default preset)
    text: str                   # the constraint text of a non-preset kind
    prompt: str
    chat: str                   # "chat" or "raw"
    settings: SamplingSettings
    max_new_tokens: int
    constraint: Constraint
    n_steps: int = 1            # Step ×N
    n: int = 1                  # samples per side (Constrained vs free)

    @classmethod
    def from_inputs(cls, values: dict[str, Any], known: "GrammarSession | None" = None) -> "GrammarRequest":
        """``values``: the event's named inputs (``model``, ``hub_id``, ``kind``, ``preset``,
        ``constraint``, ``prompt``, ``chat``, ``temperature``, ``seed``, ``max_new_tokens`` and,
        where the event has them, ``n_steps`` / ``n``), as the API sent them: every number is
        checked by name. The constraint is compiled in the grammar pool, unless ``known`` (the
        visitor's session) was built from the same one. Raises ``GrammarError`` / ``SettingsError``."""
        kind = check_choice("constraint kind", values.get("kind"), KINDS)
        check_choice("prompt format", values.get("chat"), ("chat", "raw"))
        preset_name, text = values.get("preset"), values.get("constraint") or ""
        settings = settings_of(values.get("temperature"), values.get("seed"))
        compare = "n" in values
        lo, hi = CMP_TOKENS if compare else STEP_TOKENS
        budget = number_input("max new tokens" if compare else "token budget", values.get("max_new_tokens"), lo, hi,
                              integer=True)
        n_steps = number_input("N (steps)", values["n_steps"], *N_STEPS, integer=True) if "n_steps" in values else 1
        n = number_input("samples per side", values["n"], *CMP_N, integer=True) if compare else 1
        source = constraint_source(kind, preset_name, text)
        if known is not None and known.source == source:
            constraint = known.compiled
        else:  # in the bounded compile pool, with its time limit (``grammar.compile``); no model slot
            constraint = compiled_constraint(kind, preset_name, text)
        return cls(lang=values.get("lang") or "en", model=model_name(values.get("model"), values.get("hub_id")),
                   kind=kind, preset=preset_name, text=text, prompt=values.get("prompt") or "",
                   chat=values.get("chat") or "", settings=settings, max_new_tokens=budget, constraint=constraint,
                   n_steps=n_steps, n=n)

    @property
    def key(self) -> tuple:
        """What a step-through session is built from: a change starts it over (temperature, seed
        and budget apply to a running one from the next step)."""
        is_preset = self.kind == "preset"
        return (self.model, self.kind, self.preset if is_preset else "", "" if is_preset else self.text,
                self.prompt, self.chat)


@dataclass
class GrammarSession(Session):
    """One visitor's step-through run. ``key`` is what it was built from (a change starts over)."""

    key: tuple
    model_name: str
    constraint: str              # label
    compile_seconds: float
    vocab_seconds: float
    stepper: Any                 # decoding_lab.stepper.Stepper with extra_stages={"grammar": GrammarMask}
    source: tuple = ()           # constraint_source(...) of the compiled constraint
    compiled: Any = None         # that Constraint, reused while the text stays the same

    @property
    def mask(self) -> Any:
        return self.stepper.extra_stages["grammar"]

    def apply(self, req: GrammarRequest) -> None:
        """Temperature, seed and budget of ``req``, from the next step on."""
        from decoding_lab.stepper import max_new_tokens_limit
        self.stepper.set_settings(req.settings)
        self.stepper.max_new_tokens = min(req.max_new_tokens, max_new_tokens_limit())


def new_session(req: GrammarRequest) -> GrammarSession:
    """A fresh step-through run: the model loaded (in a model slot), the vocabulary wrapped and
    the grammar compiled for it (in the grammar pool, no slot), the prompt's forward pass (a slot)."""
    from decoding_lab.grammar import GrammarTokenizer
    from decoding_lab.stepper import Stepper

    if not req.prompt.strip():
        raise SettingsError("the prompt is empty: type something to continue from")
    lm, chat_mode = load_model(req.model, req.chat)
    t0 = time.perf_counter()
    GrammarTokenizer.from_lm(lm)  # built once per model, then cached
    vocab_s = time.perf_counter() - t0
    mask = bounded(GrammarMask, req.constraint, lm)
    stepper = on_model(Stepper, lm, lm.encode_prompt(req.prompt, chat_mode), req.settings, top_n=TOP_N,
                       extra_stages={"grammar": mask}, max_new_tokens=req.max_new_tokens)
    return GrammarSession(req.key, lm.name, req.constraint.label(), mask.compile_seconds, vocab_s, stepper,
                          constraint_source(req.kind, req.preset, req.text), req.constraint)
