"""Compare tab, what one run asks for: ``CompareRequest`` (the model, the prompt and 2–4
``ColumnSpec`` columns), built once from the named inputs and checked there, and written into
exports (``to_json``) so that a file alone says how to run it again (``from_json``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.controls import model_names
from decoding_lab.ui.common.state import as_number, number_input
from decoding_lab.ui.common.validate import check_choice
from decoding_lab.ui.compare import views
from decoding_lab.ui.compare.layout import COL_KEYS, MAX_COLS, MAX_NEW_TOKENS, SAMPLE_ONLY, SETTING_COL_KEYS


@dataclass(frozen=True)
class ColumnSpec:
    """One column, validated: its strategy, its settings and (beam search) the beam knobs."""

    strategy: str
    settings: SamplingSettings
    num_beams: int | None = None
    length_penalty: float | None = None

    @classmethod
    def from_values(cls, v: dict[str, Any]) -> "ColumnSpec":
        """One column's control values, keyed like ``COL_KEYS``. Raises ``SettingsError``."""
        strategy = check_choice("strategy", v["strategy"], ("greedy", "beam", "sample"))
        check_choice("stage order", v["order"], tuple(PRESET_ORDERS))

        def num(key: str) -> Any:
            x = as_number(key, v.get(key))  # None -> a clear "is empty" error; whole floats -> int
            return int(x) if key == "num_beams" and isinstance(x, float) and x.is_integer() else x

        drawn = strategy == "sample"
        # greedy and beam: the hidden sampling knobs are not read at all (an emptied or stale box
        # cannot act or fail); they go back to "off", and temperature to 0
        values = {k: num(k) if drawn or k not in SAMPLE_ONLY else PARAMS[k].default
                  for k in SETTING_COL_KEYS if k in v}
        if not drawn:
            values["temperature"] = 0.0
        settings = SamplingSettings(**values, order=v["order"])
        if strategy != "beam":
            return cls(strategy, settings)
        return cls(strategy, settings, num("num_beams"), float(num("length_penalty")))

    @property
    def kwargs(self) -> dict[str, Any]:
        """The strategy's own arguments besides the settings."""
        if self.strategy != "beam":
            return {}
        return {"num_beams": self.num_beams, "length_penalty": self.length_penalty}

    def label(self, i: int, lang: str = "en") -> str:
        return views.column_label(i, self.strategy, self.settings, self.kwargs, lang)

    def to_json(self) -> dict[str, Any]:
        """``{strategy, settings, num_beams, length_penalty}``: the settings as the core writes
        them (``SamplingSettings.to_json``), every knob, the "off" ones too."""
        return {"strategy": self.strategy, "settings": self.settings.to_json(), **self.kwargs}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ColumnSpec":
        """The inverse of ``to_json`` (raises ``SettingsError`` on a bad file)."""
        strategy = d.get("strategy")
        if strategy not in ("greedy", "beam", "sample"):
            raise SettingsError(f"strategy must be greedy, beam or sample, got {strategy!r}")
        settings = SamplingSettings.from_json(dict(d.get("settings", {})))
        if strategy != "beam":
            return cls(strategy, settings)
        return cls(strategy, settings, int(d["num_beams"]), float(d["length_penalty"]))


def column_inputs(values: dict[str, Any], i: int) -> dict[str, Any]:
    """Column ``i``'s values out of the named inputs (``c{i}_{key}``)."""
    return {k: values[f"c{i}_{k}"] for k in COL_KEYS}


@dataclass(frozen=True)
class CompareRequest:
    """One side-by-side run: the model and prompt, and the first ``ncols`` columns."""

    model: str
    prompt: str
    chat: bool
    max_new_tokens: int
    columns: tuple[ColumnSpec, ...]

    @classmethod
    def from_inputs(cls, v: dict[str, Any]) -> "CompareRequest":
        check_choice("model", v["model"], model_names())
        check_choice("prompt format", v["chat"], ("chat", "raw"))
        ncols = int(number_input("columns", v["ncols"], 2, MAX_COLS, integer=True))
        max_new = number_input("max new tokens", v["max_new_tokens"], 1, MAX_NEW_TOKENS, integer=True)
        columns = tuple(ColumnSpec.from_values(column_inputs(v, i)) for i in range(ncols))
        return cls(v["model"], v["prompt"] or "", v["chat"] == "chat", int(max_new), columns)

    def to_json(self, seeds: list[int | None] | None = None) -> dict[str, Any]:
        """What a file needs to run this again: model, prompt text, format, length and every
        column. ``seeds[i]``, when given, is the seed column i really drew with (a column asked
        for a fresh random seed writes the one it got)."""
        columns = [c.to_json() for c in self.columns]
        for col, seed in zip(columns, seeds or []):
            if seed is not None and col["strategy"] == "sample":
                col["settings"]["seed"] = seed
        return {"model": self.model, "prompt": self.prompt, "chat": self.chat,
                "max_new_tokens": self.max_new_tokens, "columns": columns}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CompareRequest":
        """A request back from an export (``to_json``): run its columns with the core's
        ``greedy`` / ``beam_search`` / ``sample`` on ``lm.encode_prompt(prompt, chat)``."""
        columns = tuple(ColumnSpec.from_json(c) for c in d["columns"])
        return cls(str(d["model"]), str(d["prompt"]), bool(d["chat"]), int(d["max_new_tokens"]), columns)
