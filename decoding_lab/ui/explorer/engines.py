"""The Explorer's engine controls: start from an engine's defaults, and what each order preset follows.

A preset is an engine's rules, not only its order (``decoding_lab.engines``). The note under
the order says, for each preset, which engine version it follows and the rules that differ;
"Start from an engine's defaults" loads what a request that sets nothing gets from that engine
(llama-server's T 0.8 / top-k 40 / top-p 0.95 / min-p 0.05; vLLM and transformers read the
model's generation config) into the settings, with the engine's order.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from decoding_lab.engines import DEFAULTS_PRESETS
from decoding_lab.settings import engine_defaults
from decoding_lab.ui.common.i18n import register
from decoding_lab.ui.common.state import SETTING_KEYS, values_from_settings
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.explorer.parts import ExplorerParts

EN = {
    "defaults": "Start from an engine's defaults",
    "defaults_info": "what a request that sets nothing gets from that engine (its order, too)",
    "none": "—",
    "llama-server": "llama-server: T 0.8, top-k 40, top-p 0.95, min-p 0.05",
    "vllm": "vLLM: the model's generation_config over T 1",
    "transformers": "transformers generate(): the model's generation_config (greedy unless it samples)",
    "presets_box": "What each order preset follows",
    "presets_md": "**transformers**: transformers' logits processors. Penalties: repetition over prompt + output, "
                  "presence / frequency over the output. Top-k keeps every tie.  \n"
                  "**vllm**: vLLM's v1 engine sampler. No typical-p (refused). Same penalty rules.  \n"
                  "**llama.cpp**: llama.cpp 0c1e57098bba, as llama-server runs it (checked against llama.cpp's own "
                  "sampler chain). All three penalties over the last 64 tokens, prompt included; top-k keeps exactly "
                  "k; typical-p stops once the mass is above p; temperature last.  \n"
                  "**llama-cpp-python**: the same chain as that package's Llama.generate runs it: the prompt never "
                  "counts for the penalties.",
}
ZH = {
    "defaults": "从某个引擎的默认值开始",
    "defaults_info": "请求什么都不设时，该引擎实际用的设置（连同它的阶段顺序）",
    "none": "—",
    "llama-server": "llama-server：T 0.8、top-k 40、top-p 0.95、min-p 0.05",
    "vllm": "vLLM：在 T 1 之上套用模型的 generation_config",
    "transformers": "transformers generate()：模型的 generation_config（除非它要求采样，否则是贪心）",
    "presets_box": "每个顺序预设对应哪个引擎版本",
    "presets_md": "**transformers**：transformers 的 logits 处理器。惩罚：重复惩罚看提示词 + 输出，存在惩罚 / 频率惩罚"
                  "只看输出。top-k 保留所有并列的词元。  \n"
                  "**vllm**：vLLM v1 引擎的采样器。没有 typical-p（会被拒绝）。惩罚规则同上。  \n"
                  "**llama.cpp**：llama.cpp 0c1e57098bba，按 llama-server 的方式运行（已与 llama.cpp 自己的采样链逐项核对）。"
                  "三种惩罚都只看最近 64 个词元，包括提示词；top-k 恰好保留 k 个；typical-p 在累计概率超过 p 时停止；"
                  "温度放在最后。  \n"
                  "**llama-cpp-python**：与该库 Llama.generate 的采样链相同：提示词从不计入惩罚。",
}
register("engines", EN, ZH)


def _tr(lang: str, key: str, **kw: Any) -> str:
    from decoding_lab.ui.common.i18n import t
    return t(lang, f"engines.{key}", **kw)


def defaults_choices(lang: str) -> list[tuple[str, str]]:
    return [(_tr(lang, "none"), "")] + [(_tr(lang, name), name) for name in DEFAULTS_PRESETS]


def controls(L: Any, lang: str) -> tuple[gr.Dropdown, gr.Markdown]:
    """The defaults dropdown and the presets note (in a closed accordion), laid out where called."""
    dd = L(gr.Dropdown(defaults_choices(lang), value="", label=_tr(lang, "defaults"), info=_tr(lang, "defaults_info"),
                       elem_id="engine-defaults"), "engines.defaults", "choices", defaults_choices)
    with gr.Accordion(_tr(lang, "presets_box"), open=False, elem_id="engine-presets-box") as acc:
        L(acc, "engines.presets_box")
        note = L(gr.Markdown(_tr(lang, "presets_md"), elem_id="engine-presets"), "engines.presets_md", "value")
    return dd, note


def settings_for(name: str, model_name: str) -> Any:
    """The engine's defaults for the chosen model (its generation_config, for vLLM and transformers)."""
    config = None
    if name in ("vllm", "transformers") and model_name:
        from decoding_lab.models import get_model
        from decoding_lab.ui.common.runtime import model_slot
        with model_slot():  # loading a model is model work (usually it is loaded already)
            config = get_model(model_name).generation_config
    return engine_defaults(name, config)


def wire(ui: ExplorerParts, lang_state: Any) -> Any:
    """Choosing an engine fills every settings control (the next Step starts a run with them)."""
    outputs = [ui.settings[k] for k in SETTING_KEYS]

    def on_defaults(name: str, model: str, hub: str, lang: str) -> list[Any]:
        if not name or name not in DEFAULTS_PRESETS:
            return [gr.update() for _ in outputs]
        values = values_from_settings(settings_for(name, (hub or "").strip() or model))
        return [values[k] for k in SETTING_KEYS]   # the filled controls are the feedback

    # no tab gate: it holds a model slot itself, only while a model loads (``settings_for``)
    return ui.engine_defaults.input(model_event(on_defaults, None, None),
                                    [ui.engine_defaults, ui.model, ui.hub, lang_state], outputs,
                                    api_name="explorer_engine_defaults", concurrency_id="model")
