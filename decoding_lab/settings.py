"""Sampling settings and the stage chain they build.

A ``SamplingSettings`` is a frozen, validated description of what the user asked for:
each stage's parameter (with its "off" value as default: nothing is on unless asked
for), the order of the stages, the seed. ``build_chain()`` turns it into the ordered
list of active stages. The order is data: a preset name or a list of stage names.

Presets reproduce what real engines do:

* ``transformers`` (``generate``): logit bias, repetition penalty, n-gram blocking, then
  temperature, top-k, top-p, min-p, typical-p. Truncation sees the *tempered* distribution.
* ``vllm`` (v1 sampler): logit bias, then penalties (repetition, frequency, presence),
  temperature, min-p, then top-k and top-p.
* ``llama.cpp`` (default sampler chain ``penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;
  xtc;temperature``): penalties first, truncation on the T = 1 distribution, temperature
  *last*, so its min-p and top-p never see the temperature.

Temperature 0 means greedy: the temperature stage is left out and the selector takes
the argmax (other stages still run, so their effect on the argmax stays visible).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable

from decoding_lab.stages import (STAGE_CLASSES, FrequencyPenalty, LogitBias, MinP, NoRepeatNGram, PresencePenalty,
                                 RepetitionPenalty, SettingsError, Stage, Temperature, TopK, TopP, TypicalP)
from decoding_lab.stages.base import check_number

#: Stages that live in their own modules (they need extra inputs: a grammar, a verifier).
EXTRA_STAGE_NAMES: tuple[str, ...] = ("grammar", "healing", "verifier-tilt")
STAGE_NAMES: tuple[str, ...] = tuple(STAGE_CLASSES) + EXTRA_STAGE_NAMES

PRESET_ORDERS: dict[str, tuple[str, ...]] = {
    "transformers": ("logit-bias", "repetition-penalty", "no-repeat-ngram", "presence-penalty",
                     "frequency-penalty", "temperature", "top-k", "top-p", "min-p", "typical-p"),
    "vllm": ("logit-bias", "no-repeat-ngram", "repetition-penalty", "frequency-penalty", "presence-penalty",
             "temperature", "min-p", "top-k", "top-p", "typical-p"),
    "llama.cpp": ("logit-bias", "repetition-penalty", "frequency-penalty", "presence-penalty", "no-repeat-ngram",
                  "top-k", "typical-p", "top-p", "min-p", "temperature"),
}

#: Default repetition-penalty window per preset (llama.cpp looks at the last 64 tokens).
PRESET_PENALTY_WINDOW: dict[str, int] = {"transformers": 0, "vllm": 0, "llama.cpp": 64}


def canonical_stage_name(name: str) -> str:
    """Accept ``top_p``, ``Top-P``, ``topp`` …; raise with the list of known names otherwise."""
    key = name.strip().lower().replace("_", "-")
    aliases = {"topk": "top-k", "topp": "top-p", "minp": "min-p", "typical": "typical-p", "typicalp": "typical-p",
               "temp": "temperature", "repetition": "repetition-penalty", "presence": "presence-penalty",
               "frequency": "frequency-penalty", "no-repeat-ngram-size": "no-repeat-ngram", "ngram": "no-repeat-ngram",
               "bias": "logit-bias"}
    key = aliases.get(key, key)
    if key not in STAGE_NAMES:
        raise SettingsError(f"unknown stage {name!r}; known stages: {', '.join(STAGE_NAMES)}")
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
        raise SettingsError(f"stage order names {', '.join(dupes)} more than once")
    return names


def _bias_pairs(pairs: Any) -> tuple[tuple[int, float], ...]:
    """``logit_bias`` as a tuple of (token id, bias) pairs, each token once, each bias in range."""
    if not isinstance(pairs, (tuple, list)) or not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise SettingsError(f"logit_bias must be (token id, bias) pairs, got {pairs!r:.80}")
    ids = [p[0] for p in pairs]
    twice = [i for i in ids if ids.count(i) > 1]
    if twice:
        raise SettingsError(f"logit_bias names token {twice[0]!r} more than once")
    LogitBias(dict(pairs))  # ids >= 0, biases in [-100, 100]
    return tuple((p[0], p[1]) for p in pairs)


@dataclass(frozen=True)
class SamplingSettings:
    """Everything that decides how one distribution becomes one token.

    Defaults are "off": T = 1, top-k 0, top-p 1, min-p 0, typical-p 1, penalties neutral."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    typical_p: float = 1.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    no_repeat_ngram_size: int = 0
    logit_bias: tuple[tuple[int, float], ...] = ()
    penalty_include_prompt: bool = False   # presence / frequency: count prompt tokens too
    repetition_window: int | None = None   # None: the preset's convention
    order: str | tuple[str, ...] = "transformers"
    seed: int | None = 0

    def __post_init__(self) -> None:
        check_number("temperature", self.temperature, lo=0.0, hi=100.0)
        # Whole-number settings are stored as int (a JSON 40.0 becomes 40; torch's seed wants an int).
        object.__setattr__(self, "top_k", check_number("top-k", self.top_k, lo=0, integer=True))
        check_number("top-p", self.top_p, lo=0.0, hi=1.0, lo_open=True)
        check_number("min-p", self.min_p, lo=0.0, hi=1.0)
        check_number("typical-p", self.typical_p, lo=0.0, hi=1.0, lo_open=True)
        check_number("repetition penalty", self.repetition_penalty, lo=0.0, lo_open=True, hi=100.0)
        check_number("presence penalty", self.presence_penalty, lo=-2.0, hi=2.0)
        check_number("frequency penalty", self.frequency_penalty, lo=-2.0, hi=2.0)
        object.__setattr__(self, "no_repeat_ngram_size",
                           check_number("no-repeat n-gram size", self.no_repeat_ngram_size, lo=0, integer=True))
        if self.repetition_window is not None:
            object.__setattr__(self, "repetition_window",
                               check_number("repetition window", self.repetition_window, lo=0, integer=True))
        if self.seed is not None:
            object.__setattr__(self, "seed", check_number("seed", self.seed, lo=0, hi=2**63 - 1, integer=True))
        if not isinstance(self.penalty_include_prompt, bool):
            raise SettingsError(f"penalty_include_prompt must be true or false, got {self.penalty_include_prompt!r}")
        object.__setattr__(self, "logit_bias", _bias_pairs(self.logit_bias))
        if isinstance(self.order, list):  # lists become tuples: settings stay hashable and compare equal
            object.__setattr__(self, "order", tuple(self.order))
        parse_order(self.order)

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

    def replace(self, **changes: Any) -> "SamplingSettings":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
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
        if "logit_bias" in d:
            lb = d["logit_bias"]
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
        """Every stage built from these settings, active or not, by name."""
        window = self.repetition_window
        if window is None:
            window = PRESET_PENALTY_WINDOW.get(self.preset or "", 0)
        stages: dict[str, Stage] = {
            "top-k": TopK(self.top_k),
            "top-p": TopP(self.top_p),
            "min-p": MinP(self.min_p),
            "typical-p": TypicalP(self.typical_p),
            "repetition-penalty": RepetitionPenalty(self.repetition_penalty, include_prompt=True, last_n=window),
            "presence-penalty": PresencePenalty(self.presence_penalty, self.penalty_include_prompt),
            "frequency-penalty": FrequencyPenalty(self.frequency_penalty, self.penalty_include_prompt),
            "no-repeat-ngram": NoRepeatNGram(self.no_repeat_ngram_size),
            "logit-bias": LogitBias(dict(self.logit_bias)),
        }
        if not self.greedy:
            stages["temperature"] = Temperature(self.temperature)
        return stages

    def build_chain(self, extra: dict[str, Stage] | None = None) -> list[Stage]:
        """The active stages in order. ``extra`` adds stages built elsewhere (e.g. a grammar
        mask); an extra stage missing from the order goes first (a constraint should see
        the model's own distribution unless the user places it elsewhere)."""
        stages = self.all_stages()
        stages.update(extra or {})
        order = list(self.order_names)
        for name in (extra or {}):
            if name not in order:
                order.insert(0, name)
        active = {n: s for n, s in stages.items() if s.is_active()}
        missing = [n for n in active if n not in order]
        if missing:
            raise SettingsError(f"stage(s) {', '.join(missing)} are on but missing from the order {','.join(order)}")
        return [active[n] for n in order if n in active]


TRANSFORMERS_SAMPLING_DEFAULTS = SamplingSettings(top_k=50)
"""transformers' ``generate(do_sample=True)`` silently adds top-k 50; here it is a visible preset."""
