"""The table of decoding parameters: each knob declared once.

Every setting a user can turn is one ``Param`` row below: its key (the ``SamplingSettings``
field, the UI string key and the control's name), the stage it configures, its "off"
default, its bounds (open or closed ends), whether it is a whole number, its short URL
key and its CLI flag. Everything else is a loop over this table:

* ``SamplingSettings`` gets one field per row and checks each value with ``Param.check``;
  the stages call the same ``check`` in their constructors, so there is one rule per knob;
* the Explorer and Compare controls (slider ranges come from ``ui_lo`` / ``ui_hi``),
  share links, lesson presets, "send to Explorer" and exports read and write the table's keys;
* the CLI adds one flag per row;
* each row's **engine columns** (``engines``) say how each engine's API spells the knob, its
  "off" value there when that differs from ours, and llama-server's default; the request
  payloads (``remote.payloads``), llama-server's and vLLM's engine defaults (``engines``) and the
  list of stages a top-N report cannot redo exactly (``backends.remote``) are read from them.

This is llama.cpp's sampler table and transformers' ``GenerationConfig`` in one place.
It imports nothing from the rest of the package, so every layer may read it.

    >>> PARAMS["top_p"].check(0.9)
    0.9
    >>> PARAMS["top_k"].check(40.0)          # whole numbers come back as int
    40
    >>> PARAMS["top_p"].check(0)
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: top-p must be > 0, got 0
    >>> PARAMS["top_p"].cli_flag, PARAMS["repetition_penalty"].url
    ('--top-p', 'rep')
    >>> PARAMS["repetition_penalty"].engine_key("llama-server").name     # llama.cpp's own spelling
    'repeat_penalty'
    >>> PARAMS["top_n_sigma"].engine_off("llama-server"), PARAMS["top_n_sigma"].default
    (-1.0, 0.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Literal

from decoding_lab.errors import SettingsError

Kind = Literal["real", "int", "bool", "bias"]

#: The engine APIs a row may spell: llama-server's ``/completion`` JSON, OpenAI-style
#: ``/v1/completions`` (vLLM, SGLang, llama-cpp-python), SGLang's native ``/generate``
#: ``sampling_params``, and the ``generation_config.json`` keys vLLM takes as its defaults.
ENGINE_APIS = ("llama-server", "openai", "sglang", "vllm-gen-config")


@dataclass(frozen=True)
class EngineKey:
    """How one engine's API spells a knob. ``off`` is the engine's "off" value where it differs
    from the row's default (llama.cpp's top-n-σ is off at -1, ours at 0); ``default`` is what the
    engine uses when a request leaves the knob out (given for llama-server, whose defaults are
    not "off"); ``windowed``: the payload builder turns our window convention into the engine's."""

    name: str
    off: Any = None
    default: Any = None
    windowed: bool = False


def _engines(**spellings: str | EngineKey) -> tuple[tuple[str, EngineKey], ...]:
    """``_engines(llama_server="top_k", openai="top_k")`` → the row's engine columns."""
    out = []
    for api, key in spellings.items():
        api = api.replace("_", "-")
        assert api in ENGINE_APIS, api
        out.append((api, key if isinstance(key, EngineKey) else EngineKey(key)))
    return tuple(out)


def check_number(name: str, value: Any, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, hi_open: bool = False, integer: bool = False) -> float:
    """Validate one number and return it (an int when ``integer``); the message names the bad value.

    Booleans are refused (``True`` is an int in Python, never a sensible top-k), and so are
    NaN, infinities and, for whole-number settings, fractions such as 1.5 (never rounded)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError.coded("not_a_number", name=name, got=repr(value))
    if not math.isfinite(value):  # first: int(inf) and int(nan) would raise their own errors
        raise SettingsError.coded("not_finite", name=name, got=repr(value))
    if integer and int(value) != value:
        raise SettingsError.coded("not_whole", name=name, got=repr(value))
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise SettingsError.coded("out_of_range", name=name, op=">" if lo_open else ">=", bound=f"{lo:g}",
                                  got=f"{value:g}")
    if hi is not None and (value > hi or (hi_open and value == hi)):
        raise SettingsError.coded("out_of_range", name=name, op="<" if hi_open else "<=", bound=f"{hi:g}",
                                  got=f"{value:g}")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class Param:
    """One decoding parameter. ``default`` is its "off" value: nothing is on unless asked for."""

    key: str                     # SamplingSettings field, UI string key, control name
    stage: str                   # the stage it configures ("" for the selector's seed)
    default: Any
    label: str                   # how messages name it: "top-p"
    kind: Kind = "real"
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    none_ok: bool = False        # None is a value (the seed: draw a fresh random one)
    ui_lo: float | None = None   # slider range when the core's bound is wider than a slider can show
    ui_hi: float | None = None
    step: float = 0.01
    group: str = "truncation"    # where the Explorer shows it: main, truncation, penalties, llama
    compare: bool = False        # one control per Compare column
    url: str = ""                # short key in share links (default: the key)
    cli: str = ""                # CLI flag (default: --key-with-dashes)
    help: str = ""               # one line for the CLI's --help
    engines: tuple[tuple[str, EngineKey], ...] = ()   # how each engine API spells it (``_engines``)
    #: Why a server's top-N log-probabilities cannot redo this knob exactly ("" = they can: the knob
    #: needs only the reported ranks), and when the setting hits that (default: it is not off).
    top_n_inexact: str = ""
    top_n_inexact_when: Callable[[Any], bool] | None = None

    @property
    def url_key(self) -> str:
        return self.url or self.key

    @property
    def cli_flag(self) -> str:
        return self.cli or "--" + self.key.replace("_", "-")

    @property
    def integer(self) -> bool:
        return self.kind == "int"

    @property
    def slider_range(self) -> tuple[float, float] | None:
        """(lo, hi) of a slider for this knob, or None when a number box suits it better."""
        lo = self.ui_lo if self.ui_lo is not None else self.lo
        hi = self.ui_hi if self.ui_hi is not None else self.hi
        if self.kind != "real" or lo is None or hi is None:
            return None
        return float(lo), float(hi)

    def engine_key(self, api: str) -> EngineKey | None:
        """This knob's spelling in ``api`` (one of ``ENGINE_APIS``), or None where the API lacks it."""
        return dict(self.engines).get(api)

    def engine_off(self, api: str) -> Any:
        """This knob's "off" value as ``api`` spells it."""
        key = self.engine_key(api)
        return key.off if key is not None and key.off is not None else self.default

    def engine_default(self, api: str) -> Any:
        """What ``api`` uses when a request leaves this knob out (its "off" unless the row says)."""
        key = self.engine_key(api)
        return key.default if key is not None and key.default is not None else self.engine_off(api)

    def inexact_from_top_n(self, engine_value: Any) -> bool:
        """True when a setting of ``engine_value`` (llama-server's spelling) cannot be redone exactly
        from a top-N report."""
        if not self.top_n_inexact:
            return False
        if self.top_n_inexact_when is not None:
            return bool(self.top_n_inexact_when(engine_value))
        return engine_value != self.engine_off("llama-server")

    def check(self, value: Any) -> Any:
        """The one validation of this knob: the settings and the stage constructors both call it."""
        if value is None and self.none_ok:
            return None
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise SettingsError.coded("not_bool", name=self.label, got=repr(value))
            return value
        if self.kind == "bias":
            return check_bias_pairs(value)
        return check_number(self.label, value, self.lo, self.hi, self.lo_open, self.hi_open, self.integer)


def check_bias_pairs(pairs: Any) -> tuple[tuple[int, float], ...]:
    """``logit_bias`` as a tuple of (token id, bias) pairs, each token once, each bias in [-100, 100]."""
    if isinstance(pairs, dict):
        pairs = tuple(pairs.items())
    if not isinstance(pairs, (tuple, list)) or not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise SettingsError(f"logit bias must be (token id, bias) pairs, got {pairs!r:.80}")
    out: list[tuple[int, float]] = []
    for tok, bias in pairs:
        if isinstance(tok, bool) or not isinstance(tok, int) or tok < 0:
            raise SettingsError(f"logit bias keys must be token ids >= 0, got {tok!r}")
        out.append((tok, check_number(f"logit bias for token {tok}", bias, lo=-100.0, hi=100.0)))
    ids = [t for t, _ in out]
    twice = [i for i in ids if ids.count(i) > 1]
    if twice:
        raise SettingsError(f"logit bias names token {twice[0]!r} more than once")
    return tuple(out)


def parse_bias_text(text: str) -> tuple[tuple[int, float], ...]:
    """``"12:-100, 7:2.5"`` -> ((12, -100.0), (7, 2.5)); an empty text is no bias.

    >>> parse_bias_text("12:-100, 7:2.5")
    ((12, -100.0), (7, 2.5))
    """
    pairs: list[tuple[int, float]] = []
    for part in (text or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        tok, sep, bias = part.partition(":")
        try:
            if not sep:
                raise ValueError
            tok_f, bias_f = float(tok), float(bias)
        except ValueError:
            raise SettingsError(f"logit bias must look like 'token id:bias, …', got {part.strip()!r:.40}") from None
        if not tok_f.is_integer():
            raise SettingsError(f"logit bias keys must be whole token ids, got {tok.strip()!r:.20}")
        pairs.append((int(tok_f), bias_f))
    return check_bias_pairs(pairs)


def format_bias(pairs: tuple[tuple[int, float], ...]) -> str:
    """The inverse of ``parse_bias_text``: ``((12, -100.0),)`` -> ``"12:-100"``."""
    return ", ".join(f"{t}:{b:g}" for t, b in pairs)


_ENTROPY = "it needs the entropy of the whole distribution"

_ROWS: tuple[Param, ...] = (
    # --- temperature (llama.cpp's temp_ext: a range makes it dynamic) ---------------------
    Param("temperature", "temperature", 1.0, "temperature", lo=0.0, hi=100.0, ui_hi=5.0, step=0.05, group="main",
          compare=True, url="T", help="0 = greedy (default 1: no scaling)",
          engines=_engines(llama_server=EngineKey("temperature", default=0.8), openai="temperature",
                           sglang="temperature", vllm_gen_config="temperature")),
    Param("dynatemp_range", "temperature", 0.0, "dynamic temperature range", lo=0.0, hi=100.0, ui_hi=3.0, step=0.05,
          group="llama", url="dyn", help="0 = off; T varies in [T - range, T + range] with the entropy (llama.cpp)",
          engines=_engines(llama_server="dynatemp_range"),
          top_n_inexact="dynamic temperature needs the entropy of the whole distribution"),
    Param("dynatemp_exponent", "temperature", 1.0, "dynamic temperature exponent", lo=0.0, hi=100.0, lo_open=True,
          ui_lo=0.1, ui_hi=5.0, step=0.05, group="llama", url="dyn_exp",
          help="how the normalised entropy maps to T (llama.cpp's dynatemp exponent)",
          engines=_engines(llama_server="dynatemp_exponent")),
    # --- truncation -----------------------------------------------------------------------
    # top-k "off" has no common spelling: SGLang wants -1, llama-cpp-python refuses -1 (and defaults to
    # 40), older vLLM refuses 0; on the OpenAI route k = the vocabulary size keeps every token everywhere.
    Param("top_k", "top-k", 0, "top-k", kind="int", lo=0, compare=True, step=1, help="0 = off",
          engines=_engines(llama_server=EngineKey("top_k", default=40), openai=EngineKey("top_k", off="vocabulary"),
                           sglang=EngineKey("top_k", off=-1), vllm_gen_config="top_k")),
    Param("top_p", "top-p", 1.0, "top-p", lo=0.0, hi=1.0, lo_open=True, compare=True, help="1 = off",
          engines=_engines(llama_server=EngineKey("top_p", default=0.95), openai="top_p", sglang="top_p",
                           vllm_gen_config="top_p")),
    Param("min_p", "min-p", 0.0, "min-p", lo=0.0, hi=1.0, compare=True, help="0 = off",
          engines=_engines(llama_server=EngineKey("min_p", default=0.05), openai="min_p", sglang="min_p",
                           vllm_gen_config="min_p")),
    Param("typical_p", "typical-p", 1.0, "typical-p", lo=0.0, hi=1.0, lo_open=True, help="1 = off",
          engines=_engines(llama_server="typical_p"), top_n_inexact=_ENTROPY),
    Param("top_n_sigma", "top-n-sigma", 0.0, "top-n-sigma", lo=-1.0, hi=100.0, ui_lo=0.0, ui_hi=5.0, step=0.05,
          group="llama", url="nsigma", help="<= 0 = off; keep logits within n standard deviations of the best",
          engines=_engines(llama_server=EngineKey("top_n_sigma", off=-1.0)),
          top_n_inexact="it needs the spread of all the raw logits", top_n_inexact_when=lambda v: v > 0),
    Param("xtc_probability", "xtc", 0.0, "XTC probability", lo=0.0, hi=1.0, group="llama", url="xtc_p",
          help="0 = off; chance per step that XTC removes the top choices",
          engines=_engines(llama_server="xtc_probability"),
          top_n_inexact="its coin is drawn by the engine's own random generator, ours by a hash",
          top_n_inexact_when=lambda v: 0 < v < 1),
    Param("xtc_threshold", "xtc", 0.1, "XTC threshold", lo=0.0, hi=1.0, group="llama", url="xtc_t",
          help="tokens at or above this probability are 'top choices' (> 0.5 turns XTC off)",
          engines=_engines(llama_server="xtc_threshold")),
    # --- penalties --------------------------------------------------------------------------
    Param("repetition_penalty", "repetition-penalty", 1.0, "repetition penalty", lo=0.0, hi=100.0, lo_open=True,
          ui_lo=0.5, ui_hi=2.0, group="penalties", compare=True, url="rep", help="1 = off (multiplicative, CTRL)",
          engines=_engines(llama_server="repeat_penalty", openai="repetition_penalty", sglang="repetition_penalty",
                           vllm_gen_config="repetition_penalty"),
          top_n_inexact="it divides or multiplies the raw logit by its sign"),
    Param("presence_penalty", "presence-penalty", 0.0, "presence penalty", lo=-2.0, hi=2.0, step=0.05,
          group="penalties", url="presence", help="0 = off (OpenAI, output tokens)",
          engines=_engines(llama_server="presence_penalty", openai="presence_penalty", sglang="presence_penalty")),
    Param("frequency_penalty", "frequency-penalty", 0.0, "frequency penalty", lo=-2.0, hi=2.0, step=0.05,
          group="penalties", url="frequency", help="0 = off (OpenAI, output tokens)",
          engines=_engines(llama_server="frequency_penalty", openai="frequency_penalty",
                           sglang="frequency_penalty")),
    Param("penalty_include_prompt", "presence-penalty", False, "penalty_include_prompt", kind="bool",
          group="penalties", url="pen_prompt", cli="--penalize-prompt",
          help="presence/frequency also count prompt tokens"),
    Param("repetition_window", "repetition-penalty", -1, "repetition window", kind="int", lo=-1, step=1,
          group="penalties", url="rep_window", help="repetition penalty looks at the last N tokens (0 = all; "
          "-1, the default: the preset's convention, 64 for llama.cpp)",
          engines=_engines(llama_server=EngineKey("repeat_last_n", default=64, windowed=True))),
    Param("no_repeat_ngram_size", "no-repeat-ngram", 0, "no-repeat n-gram size", kind="int", lo=0, step=1,
          group="penalties", url="ngram", help="0 = off"),
    Param("dry_multiplier", "dry", 0.0, "DRY multiplier", lo=0.0, hi=100.0, ui_hi=5.0, step=0.05, group="llama",
          url="dry", help="0 = off; DRY (don't repeat yourself) penalty strength",
          engines=_engines(llama_server="dry_multiplier")),
    Param("dry_base", "dry", 1.75, "DRY base", lo=1.0, hi=100.0, ui_hi=4.0, step=0.05, group="llama", url="dry_base",
          help="the penalty grows as base ** (match length - allowed length)",
          engines=_engines(llama_server="dry_base")),
    Param("dry_allowed_length", "dry", 2, "DRY allowed length", kind="int", lo=1, hi=1000, step=1, group="llama",
          url="dry_len", help="repeats up to this many tokens are not penalised",
          engines=_engines(llama_server="dry_allowed_length")),
    Param("dry_penalty_last_n", "dry", -1, "DRY window", kind="int", lo=-1, step=1, group="llama", url="dry_n",
          help="how many recent tokens DRY scans (-1 = all, 0 = off)",
          engines=_engines(llama_server=EngineKey("dry_penalty_last_n", windowed=True))),
    Param("logit_bias", "logit-bias", (), "logit bias", kind="bias", group="penalties", url="bias",
          help="'token id:bias, …' added to the logits (-100 bans a token)",
          engines=_engines(llama_server="logit_bias")),
    # --- the selector ----------------------------------------------------------------------
    Param("seed", "", 0, "seed", kind="int", lo=0, hi=2**63 - 1, none_ok=True, group="main", compare=True, step=1,
          help="random seed of the sampler", engines=_engines(llama_server="seed", openai="seed")),
)

#: key -> Param, in display order.
PARAMS: dict[str, Param] = {p.key: p for p in _ROWS}


def engine_rows(api: str) -> list[tuple[Param, EngineKey]]:
    """The rows ``api`` has, with its spelling of each, in table order.

    >>> [p.key for p, _ in engine_rows("vllm-gen-config")]
    ['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty']
    """
    if api not in ENGINE_APIS:
        raise SettingsError(f"unknown engine API {api!r}; known: {', '.join(ENGINE_APIS)}")
    return [(p, key) for p in _ROWS if (key := p.engine_key(api)) is not None]


def params_of(stage: str) -> list[Param]:
    """The rows that configure one stage, e.g. ``params_of("dry")``."""
    return [p for p in _ROWS if p.stage == stage]
