"""Sampling settings and the stage chain they build.

A ``SamplingSettings`` is a frozen, validated description of what the user asked for:
each stage's parameter (with its "off" value as default: nothing is on unless asked
for), the order of the stages, the seed. ``build_chain()`` turns it into the ordered
list of active stages. The order is data: a preset name or a list of stage names.

Presets reproduce what real engines do:

* ``transformers`` (``generate``): logit bias, repetition penalty, n-gram blocking, then
  temperature, top-k, top-p, min-p, typical-p. Truncation sees the *tempered* distribution.
* ``vllm`` (v1 sampler): logit bias, then penalties (repetition, frequency, presence),
  temperature, min-p, then top-k and top-p. vLLM has no typical-p.
* ``llama.cpp`` (default sampler chain ``penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;
  xtc;temperature``): penalties first, truncation on the T = 1 distribution, temperature
  *last*, so its min-p and top-p never see the temperature. All three penalties count the
  last 64 tokens, prompt included (llama-server); ``llama-cpp-python`` is the same chain as
  that package's ``Llama.generate`` runs it, without the prompt.

The rules beyond the order (penalty windows, ties at the top-k and typical-p boundaries,
defaults) live in ``decoding_lab.engines``. A stage an engine does not have (DRY, XTC and
top-n-sigma outside llama.cpp, typical-p in vLLM) is refused with a message naming the engine.

Each knob is declared once, in ``decoding_lab.params``: ``SamplingSettings`` has one field
per row of that table, and validation is the row's ``check`` (the stage constructors call
the same check). The stages build themselves from the settings (``Stage.from_settings``).

Temperature 0 means greedy: the temperature stage is left out and the selector takes
the argmax (other stages still run, so their effect on the argmax stays visible).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, TYPE_CHECKING

from decoding_lab.engines import CUSTOM_RULES, ENGINES, EngineRules, engine_default_values, engines_with
from decoding_lab.params import PARAMS, parse_bias_text
from decoding_lab.stages import STAGE_CLASSES, Stage
from decoding_lab.stages.registry import EXTRA_STAGE_NAMES, STAGE_NAMES
from decoding_lab.errors import SettingsError

if TYPE_CHECKING:  # a type hint only: the backends sit above this layer
    from decoding_lab.backends.base import LanguageModel

__all__ = ["SamplingSettings", "PRESET_ORDERS", "PRESET_PENALTY_WINDOW", "STAGE_NAMES",
           "EXTRA_STAGE_NAMES", "canonical_stage_name", "parse_order", "TRANSFORMERS_SAMPLING_DEFAULTS",
           "engine_defaults"]

#: Stage order per engine preset (the rest of each engine's rules: ``decoding_lab.engines``).
PRESET_ORDERS: dict[str, tuple[str, ...]] = {name: rules.order for name, rules in ENGINES.items()}

#: Default penalty window per preset (llama.cpp looks at the last 64 tokens).
PRESET_PENALTY_WINDOW: dict[str, int] = {name: rules.penalty_window for name, rules in ENGINES.items()}

_ALIASES = {"topk": "top-k", "topp": "top-p", "minp": "min-p", "typical": "typical-p", "typicalp": "typical-p",
            "temp": "temperature", "repetition": "repetition-penalty", "presence": "presence-penalty",
            "frequency": "frequency-penalty", "no-repeat-ngram-size": "no-repeat-ngram", "ngram": "no-repeat-ngram",
            "bias": "logit-bias", "top-nsigma": "top-n-sigma", "topnsigma": "top-n-sigma", "nsigma": "top-n-sigma",
            "dynatemp": "temperature", "penalties": "repetition-penalty"}


def canonical_stage_name(name: str) -> str:
    """Accept ``top_p``, ``Top-P``, ``topp`` …; raise with the list of known names otherwise."""
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in STAGE_NAMES:
        raise SettingsError.coded("unknown_stage", name=repr(name), known=", ".join(STAGE_NAMES))
    return key


def parse_order(order: str | Iterable[str]) -> tuple[str, ...]:
    """A preset name, a comma-separated list, or a sequence of stage names -> stage names."""
    if not isinstance(order, (str, list, tuple)) or not all(isinstance(p, str) for p in order):
        raise SettingsError(f"the stage order must be a preset name or stage names, got {order!r:.80}")
    if isinstance(order, str):
        if order.strip().lower() in PRESET_ORDERS:
            return PRESET_ORDERS[order.strip().lower()]
        parts = [p for p in order.split(",") if p.strip()]
        if not parts:
            raise SettingsError("the stage order is empty; give a preset (transformers, vllm, llama.cpp) or stage names")
    else:
        parts = list(order)
    names = tuple(canonical_stage_name(p) for p in parts)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SettingsError.coded("stage_twice", names=", ".join(dupes))
    return names


def _with_param_fields(cls: type) -> type:
    """Give ``cls`` one dataclass field per row of the parameter table, before its own fields."""
    own = dict(cls.__dict__.get("__annotations__", {}))
    cls.__annotations__ = {**{p.key: Any for p in PARAMS.values()}, **own}
    for p in PARAMS.values():
        if p.key not in own:
            setattr(cls, p.key, p.default)
    return dataclass(frozen=True)(cls)


@_with_param_fields
class SamplingSettings:
    """Everything that decides how one distribution becomes one token.

    One field per row of ``decoding_lab.params.PARAMS`` (temperature, top_k, top_p, min_p,
    typical_p, the penalties, DRY, XTC, top-n-sigma, dynamic temperature, logit_bias,
    seed …), each defaulting to its "off" value, plus the stage ``order``.

    >>> s = SamplingSettings(temperature=0.7, top_k=40.0, order="llama.cpp")
    >>> s.top_k, [st.name for st in s.build_chain()]
    (40, ['top-k', 'temperature'])
    """

    order: str | tuple[str, ...] = "transformers"

    def __post_init__(self) -> None:
        for p in PARAMS.values():  # whole numbers stored as int (a JSON 40.0 becomes 40)
            object.__setattr__(self, p.key, p.check(getattr(self, p.key)))
        # One spelling per order, so equal orders compare equal: a preset by its name, anything
        # else as the tuple of canonical stage names ("top_p, temp" -> ("top-p", "temperature")).
        names = parse_order(self.order)
        preset = self.order.strip().lower() if isinstance(self.order, str) else None
        object.__setattr__(self, "order", preset if preset in PRESET_ORDERS else names)
        stages = self.all_stages()  # the stages' constructors check what depends on several knobs
        self._check_in_order({n: st for n, st in stages.items() if st.is_active()}, list(self.order_names))

    # ------------------------------------------------------------------------------
    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def order_names(self) -> tuple[str, ...]:
        return parse_order(self.order)

    @property
    def preset(self) -> str | None:
        return self.order.strip().lower() if isinstance(self.order, str) and self.order.strip().lower() in PRESET_ORDERS else None

    @property
    def rules(self) -> EngineRules:
        """The engine rules of the preset (a custom order follows transformers' rules)."""
        return ENGINES.get(self.preset or "", CUSTOM_RULES)

    @property
    def penalty_window(self) -> int:
        """The penalties' window (0 = whole history): the setting, else the preset's convention.
        In transformers and vLLM it applies to the repetition penalty only; in llama.cpp to all three."""
        if self.repetition_window >= 0:
            return self.repetition_window
        return PRESET_PENALTY_WINDOW.get(self.preset or "", 0)

    def replace(self, **changes: Any) -> "SamplingSettings":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["logit_bias"] = {str(k): v for k, v in self.logit_bias}
        d["order"] = self.order if isinstance(self.order, str) else list(self.order)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "SamplingSettings":
        known = {f.name for f in dataclasses.fields(SamplingSettings)}
        unknown = set(d) - known
        if unknown:
            raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        d = dict(d)
        if "repetition_window" in d and d["repetition_window"] is None:  # older exports: null = the preset's rule
            d["repetition_window"] = -1
        if "logit_bias" in d:
            lb = d["logit_bias"]
            if isinstance(lb, str):
                d["logit_bias"] = parse_bias_text(lb)
            else:
                items = lb.items() if isinstance(lb, dict) else lb
                try:
                    d["logit_bias"] = tuple((int(k), float(v)) for k, v in items)
                except (TypeError, ValueError) as e:
                    raise SettingsError(f"logit_bias must map token ids to numbers ({e})") from None
        if isinstance(d.get("order"), list):
            d["order"] = tuple(d["order"])
        return SamplingSettings(**d)

    # ------------------------------------------------------------------------------
    def all_stages(self) -> dict[str, Stage]:
        """Every stage built from these settings, active or not, by name (no temperature
        stage at T = 0: greedy is the selector's job)."""
        stages = {name: cls.from_settings(self) for name, cls in STAGE_CLASSES.items()}
        return {name: st for name, st in stages.items() if st is not None}

    def _check_in_order(self, active: dict[str, Stage], order: list[str]) -> None:
        """Refuse a stage that is on but has no place in the order, naming the engine that lacks it."""
        missing = [n for n in active if n not in order]
        if missing and self.preset:
            name = missing[0]
            having = engines_with(name)
            where = (f"only {', '.join(having)} {'has' if len(having) == 1 else 'have'} it: choose "
                     f"{'the ' + having[0] + ' order' if len(having) == 1 else 'one of their orders'} "
                     "or a custom order" if having else "no engine preset has it: use a custom order")
            raise SettingsError(f"{name} is not in {self.rules.engine}'s sampler; {where}")
        if missing:
            raise SettingsError(f"stage(s) {', '.join(missing)} are on but missing from the order {','.join(order)}")

    def build_chain(self, extra: dict[str, Stage] | None = None, lm: LanguageModel | None = None) -> list[Stage]:
        """The active stages in order. ``extra`` adds stages built elsewhere (e.g. a grammar
        mask); an extra stage missing from the order goes first (a constraint should see
        the model's own distribution unless the user places it elsewhere). With ``lm`` the
        stages that need to know the vocabulary (DRY) learn it."""
        stages = self.all_stages()
        stages.update(extra or {})
        order = list(self.order_names)
        for name in (extra or {}):
            if name not in order:
                order.insert(0, name)
        active = {n: s for n, s in stages.items() if s.is_active()}
        self._check_in_order(active, order)
        chain = [active[n] for n in order if n in active]
        if lm is not None:
            for stage in chain:
                stage.bind_model(lm)
        return chain


TRANSFORMERS_SAMPLING_DEFAULTS = SamplingSettings(top_k=50)
"""transformers' ``generate(do_sample=True)`` silently adds top-k 50; here it is a visible preset."""


def engine_defaults(name: str, generation_config: Any = None) -> SamplingSettings:
    """The ``SamplingSettings`` an engine uses when a request sets nothing
    (``engines.engine_default_values`` holds the rules).

    >>> s = engine_defaults("llama-server")
    >>> s.order, s.temperature, s.top_k, s.top_p, s.min_p
    ('llama.cpp', 0.8, 40, 0.95, 0.05)
    """
    return SamplingSettings(**engine_default_values(name, generation_config))
