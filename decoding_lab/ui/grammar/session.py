"""What the Grammar tab is asked (``GrammarRequest``) and what it keeps per visitor (``GrammarSession``).

Every model event of the tab (Reset, Step, Step ×N, Constrained vs free) reads the same
inputs: the model choice, the constraint (kind, preset, text), the prompt and its format, the
temperature, the seed and a token budget. ``GrammarRequest.from_inputs(values)`` turns the
event's named inputs into one frozen request and checks it once: a bad regex, schema or
grammar raises its ``GrammarError`` here, before any model loads and before the session is
touched (so it is one error, and the steps already on screen stay).

The session holds the stepper with its ``GrammarMask`` stage (the grammar matcher); the model
weights stay shared (the stepper's deepcopy never copies them)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from decoding_lab.errors import SettingsError
from decoding_lab.grammar import Constraint, GrammarMask, build_constraint, preset
from decoding_lab.grammar.compile import bounded
from decoding_lab.settings import SamplingSettings
from decoding_lab.ui.common.session import Session
from decoding_lab.ui.common.state import as_number

TOP_N = 40            # rows of the raw distribution each trace keeps (the forbidden table reads them)
DEFAULT_PRESET = "json-person"


def make_constraint(kind: str, preset_name: str | None, text: str | None) -> Constraint:
    """The checked constraint (raises ``GrammarError`` with a one-line message)."""
    if kind == "preset":
        return preset(preset_name or DEFAULT_PRESET)
    return build_constraint(kind, text or "")


def settings_of(temperature: Any, seed: Any) -> SamplingSettings:
    if temperature is None or seed is None:
        raise SettingsError("temperature and seed need a number")
    # as_number: a whole float seed becomes an int; NaN or a string gets a message, not a crash
    return SamplingSettings(temperature=as_number("temperature", temperature), seed=as_number("seed", seed))


def model_name(model: str | None, hub_id: str | None) -> str:
    """A Hub id typed in the box wins over the list."""
    return (hub_id or "").strip() or (model or "")


def load_model(name: str, chat: str) -> tuple[Any, bool]:
    """The shared model and whether the prompt goes through its chat template."""
    from decoding_lab.models import get_model
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
    def from_inputs(cls, values: dict[str, Any]) -> "GrammarRequest":
        """``values``: the event's named inputs (``model``, ``hub_id``, ``kind``, ``preset``,
        ``constraint``, ``prompt``, ``chat``, ``temperature``, ``seed``, ``max_new_tokens`` and,
        where the event has them, ``n_steps`` / ``n``). Raises ``GrammarError`` / ``SettingsError``."""
        kind = values.get("kind") or ""
        # In the bounded compile pool, with its time limit (``grammar.compile``).
        constraint = bounded(make_constraint, kind, values.get("preset"), values.get("constraint"))
        settings = settings_of(values.get("temperature"), values.get("seed"))
        return cls(lang=values.get("lang") or "en", model=model_name(values.get("model"), values.get("hub_id")),
                   kind=kind, preset=values.get("preset"), text=values.get("constraint") or "",
                   prompt=values.get("prompt") or "", chat=values.get("chat") or "", settings=settings,
                   max_new_tokens=int(values.get("max_new_tokens") or 64), constraint=constraint,
                   n_steps=max(1, int(values.get("n_steps") or 1)), n=int(values.get("n") or 1))

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

    @property
    def mask(self) -> Any:
        return self.stepper.extra_stages["grammar"]

    def apply(self, req: GrammarRequest) -> None:
        """Temperature, seed and budget of ``req``, from the next step on."""
        from decoding_lab.stepper import max_new_tokens_limit
        self.stepper.set_settings(req.settings)
        self.stepper.max_new_tokens = min(req.max_new_tokens, max_new_tokens_limit())


def new_session(req: GrammarRequest) -> GrammarSession:
    """A fresh step-through run: the model loaded, the vocabulary wrapped, the grammar compiled."""
    from decoding_lab.grammar import GrammarTokenizer
    from decoding_lab.stepper import Stepper

    if not req.prompt.strip():
        raise SettingsError("the prompt is empty: type something to continue from")
    lm, chat_mode = load_model(req.model, req.chat)
    t0 = time.perf_counter()
    GrammarTokenizer.from_lm(lm)  # built once per model, then cached
    vocab_s = time.perf_counter() - t0
    mask = bounded(GrammarMask, req.constraint, lm)
    stepper = Stepper(lm, lm.encode_prompt(req.prompt, chat_mode), req.settings, top_n=TOP_N,
                      extra_stages={"grammar": mask}, max_new_tokens=req.max_new_tokens)
    return GrammarSession(req.key, lm.name, req.constraint.label(), mask.compile_seconds, vocab_s, stepper)
