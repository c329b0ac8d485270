"""What each real engine does, as data: stage order, penalty rules, boundary rules, defaults.

An engine preset is more than an order. Two engines with the same order can still give
different distributions, because they differ in small rules that nobody writes on the box:

* **which tokens the penalties count.** transformers and vLLM apply the repetition penalty
  to every token of prompt + output, and vLLM counts presence / frequency over the output
  only (OpenAI's rule). llama.cpp has one penalty sampler for all three, counting the last
  ``penalty_last_n`` (64) *accepted* tokens, and llama-server accepts the prompt tokens
  into that history, so a prompt word is penalised until 64 newer tokens push it out.
  llama-cpp-python's high-level ``Llama.generate`` never accepts the prompt: same order,
  same window, a third behaviour (the ``llama-cpp-python`` preset).
* **ties at a boundary.** transformers' and vLLM's top-k keep every token whose logit equals
  the k-th (so a tie can keep more than k); llama.cpp sorts and keeps exactly k. llama.cpp's
  typical-p adds tokens until the running mass is strictly above p and keeps exactly those;
  transformers stops when the mass reaches p and keeps every token tied with the last one.
  llama.cpp's top-p adds float32 probabilities one by one; near p that running sum can be
  ~1e-4 above the exact mass, so it stops a token earlier than exact arithmetic would.
* **which stages exist.** vLLM has no typical-p; DRY, XTC and top-n-sigma exist only in
  llama.cpp. A preset refuses a stage its engine does not have, naming the engine.
* **defaults.** A user who sends no parameters gets the engine's defaults: llama-server
  samples at T 0.8 with top-k 40, top-p 0.95, min-p 0.05; vLLM takes the model's
  ``generation_config.json`` (``--generation-config auto``) over plain T = 1 sampling;
  transformers' ``generate`` uses the model's generation config, which is greedy unless it
  sets ``do_sample``, and adds top-k 50 when sampling. ``engine_defaults`` builds those.

A custom order follows transformers' rules (ties kept, the penalty checkbox decides whether
presence / frequency count the prompt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoding_lab.errors import SettingsError
from decoding_lab.params import engine_rows

__all__ = ["EngineRules", "ENGINES", "CUSTOM_RULES", "DEFAULTS_PRESETS", "engine_default_values", "engines_with"]


@dataclass(frozen=True)
class EngineRules:
    """The rules of one engine preset (see the module docstring for why each exists)."""

    preset: str                     # the order preset's name
    engine: str                     # what the UI calls it
    follows: str                    # the engine version these rules were read from / checked against
    order: tuple[str, ...]          # stage order, logit bias first
    penalty_window: int = 0         # tokens the penalties look back (0 = the whole history)
    shared_window: bool = False     # the window applies to all three penalties (llama.cpp), not only repetition
    repetition_prompt: bool = True  # the repetition penalty counts prompt tokens
    presence_prompt: bool | None = None  # presence / frequency count the prompt; None = the user's checkbox
    top_k_exact: bool = False       # top-k keeps exactly k (ties broken by sort order), not every tie
    typical_strict: bool = False    # typical-p stops at mass > p and keeps exactly that many
    float32_sums: bool = False      # top-p's running mass is a float32 running sum, as llama.cpp's


_LLAMA_ORDER = ("logit-bias", "repetition-penalty", "frequency-penalty", "presence-penalty", "no-repeat-ngram",
                "dry", "top-n-sigma", "top-k", "typical-p", "top-p", "min-p", "xtc", "temperature")
_LLAMA_VERSION = "llama.cpp 0c1e57098bba (as vendored by llama-cpp-python 0.3.36)"

ENGINES: dict[str, EngineRules] = {
    "transformers": EngineRules(
        "transformers", "transformers generate()", "transformers' LogitsProcessor / LogitsWarper classes",
        ("logit-bias", "repetition-penalty", "no-repeat-ngram", "presence-penalty", "frequency-penalty",
         "temperature", "top-k", "top-p", "min-p", "typical-p")),
    "vllm": EngineRules(
        "vllm", "vLLM", "vLLM's v1 engine sampler (vllm/v1/sample)",
        ("logit-bias", "no-repeat-ngram", "repetition-penalty", "frequency-penalty", "presence-penalty",
         "temperature", "min-p", "top-k", "top-p"),
        presence_prompt=False),
    "llama.cpp": EngineRules(
        "llama.cpp", "llama.cpp (llama-server)", _LLAMA_VERSION, _LLAMA_ORDER,
        penalty_window=64, shared_window=True, repetition_prompt=True, presence_prompt=True,
        top_k_exact=True, typical_strict=True, float32_sums=True),
    "llama-cpp-python": EngineRules(
        "llama-cpp-python", "llama-cpp-python Llama.generate()", _LLAMA_VERSION, _LLAMA_ORDER,
        penalty_window=64, shared_window=True, repetition_prompt=False, presence_prompt=False,
        top_k_exact=True, typical_strict=True, float32_sums=True),
}

#: Rules for a custom order: transformers' boundary rules, the checkbox decides the prompt.
CUSTOM_RULES = EngineRules("custom", "custom order", "this app's own rules (transformers' boundaries)", ())


def engines_with(stage: str) -> list[str]:
    """The engines that have ``stage`` (for messages such as "only llama.cpp has it"); presets
    that share an order (llama.cpp and llama-cpp-python) count once.

    >>> engines_with("typical-p"), engines_with("xtc")
    (['transformers', 'llama.cpp'], ['llama.cpp'])
    """
    seen: set[tuple[str, ...]] = set()
    out = []
    for name, rules in ENGINES.items():
        if stage in rules.order and rules.order not in seen:
            out.append(name)
        seen.add(rules.order)
    return out


# --------------------------------------------------------------------------------------
# Engine defaults: what a user of each engine gets when the request sets nothing.

#: Name -> (preset, one-line description). ``engine_defaults(name, model)`` builds the settings.
DEFAULTS_PRESETS: dict[str, tuple[str, str]] = {
    "llama-server": ("llama.cpp", "T 0.8, top-k 40, top-p 0.95, min-p 0.05, penalties off (window 64)"),
    "vllm": ("vllm", "T 1 sampling, overridden by the model's generation_config (--generation-config auto)"),
    "transformers": ("transformers", "the model's generation_config; greedy unless it sets do_sample, "
                                     "and top-k 50 when sampling"),
}

# llama.cpp's common_params_sampling defaults (common/common.h at the commit in _LLAMA_VERSION), read from
# the parameter table's llama-server column. Left out: the penalty window (the llama.cpp preset's own
# convention, 64), the seed (random unless given) and the logit bias (none).
_LLAMA_SERVER = {p.key: p.engine_default("llama-server") for p, _ in engine_rows("llama-server")
                 if p.key not in ("repetition_window", "seed", "logit_bias")}

# Keys vLLM reads from generation_config.json (ModelConfig.get_diff_sampling_param): the table's column.
_VLLM_KEYS = {p.key: key.name for p, key in engine_rows("vllm-gen-config")}


def _config_dict(generation_config: Any) -> dict[str, Any]:
    if generation_config is None:
        return {}
    if isinstance(generation_config, dict):
        return dict(generation_config)
    return generation_config.to_diff_dict() if hasattr(generation_config, "to_diff_dict") else {}


def engine_default_values(name: str, generation_config: Any = None) -> dict[str, Any]:
    """The settings an engine uses when a request sets nothing, as ``SamplingSettings`` fields
    (``order`` included); ``settings.engine_defaults`` builds the settings from them.

    ``generation_config`` is the loaded model's (a transformers ``GenerationConfig`` or a
    dict); GGUF files carry none, so transformers' own defaults apply to them.

    >>> v = engine_default_values("llama-server")
    >>> v["order"], v["temperature"], v["top_k"], v["top_p"], v["min_p"]
    ('llama.cpp', 0.8, 40, 0.95, 0.05)
    >>> engine_default_values("vllm", {"temperature": 0.6, "top_p": 0.9})["top_p"]
    0.9
    >>> t = engine_default_values("transformers", {"do_sample": True, "temperature": 0.7})
    >>> t["temperature"], t["top_k"]
    (0.7, 50)
    >>> engine_default_values("transformers")["temperature"]     # no do_sample: greedy
    0.0
    """
    if name not in DEFAULTS_PRESETS:
        raise SettingsError(f"unknown engine defaults {name!r}; known: {', '.join(DEFAULTS_PRESETS)}")
    preset = DEFAULTS_PRESETS[name][0]
    cfg = _config_dict(generation_config)
    if preset == "llama.cpp":
        return {"order": preset, **_LLAMA_SERVER}
    if preset == "vllm":
        values: dict[str, Any] = {"temperature": 1.0}
        for ours, theirs in _VLLM_KEYS.items():
            if cfg.get(theirs) is not None:
                values[ours] = cfg[theirs]
        if values.get("top_k", 0) < 0:  # vLLM's -1 = off
            values["top_k"] = 0
        return {"order": preset, **values}
    # transformers: GenerationConfig's own defaults under the model's values.
    values = {"repetition_penalty": cfg.get("repetition_penalty", 1.0),
              "no_repeat_ngram_size": cfg.get("no_repeat_ngram_size", 0)}
    if cfg.get("do_sample"):
        values.update(temperature=cfg.get("temperature", 1.0), top_k=cfg.get("top_k", 50) or 0,
                      top_p=cfg.get("top_p", 1.0), min_p=cfg.get("min_p") or 0.0, typical_p=cfg.get("typical_p", 1.0))
    else:
        values["temperature"] = 0.0
    return {"order": preset, **values}
