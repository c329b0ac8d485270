"""Temperature-0 tab: the same greedy decode along several numerical paths (float32
with the KV cache, float32 recomputing the whole prefix, bfloat16, batched next to a
longer prompt), and the step where they part. The core (``decoding_lab.determinism``)
does the runs; this module draws the texts, the first divergence and the margins."""

from __future__ import annotations

import html
from types import SimpleNamespace
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from decoding_lab.determinism import VARIANTS, greedy_variants
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.common.sessions import SessionJobs, gated, session_state

S = {
    "en": {"intro": "Greedy decoding (temperature 0) of one prompt along different numerical paths. Where two "
                    "tokens are nearly tied (a small margin), a tiny numerical difference can flip the argmax; "
                    "from then on the texts differ.",
           "prompt": "Prompt", "tokens": "New tokens", "variants": "Numerical paths", "run": "Run greedy on every path",
           "same": "identical to the reference for all {n} tokens",
           "diverge": "first differs at step {step}: reference {ref!r}, this path {var!r} (reference margin {m:.4f})",
           "margins": "Margin between the two best logits along the reference path", "step": "step",
           "margin": "top-1 − top-2 logit", "flip": "divergence"},
    "zh": {"intro": "同一个提示沿不同的数值路径做贪心解码（温度 0）。两个 token 几乎打平（margin 很小）时，"
                    "微小的数值差异就能翻转 argmax；此后文字就分开了。",
           "prompt": "提示", "tokens": "生成 token 数", "variants": "数值路径", "run": "在每条路径上运行贪心",
           "same": "{n} 个 token 全部与参照一致",
           "diverge": "第 {step} 步开始不同：参照 {ref!r}，本路径 {var!r}（参照的 margin {m:.4f}）",
           "margins": "参照路径上前两名 logit 的差距", "step": "步", "margin": "第一名 − 第二名 logit",
           "flip": "分叉处"},
}


def s(lang: str, key: str, **kw: Any) -> str:
    return S["zh" if norm_lang(lang).startswith("zh") else "en"][key].format(**kw)


def build(lang: str = "en") -> SimpleNamespace:
    ui = SimpleNamespace()
    ui.intro = gr.Markdown(s(lang, "intro"), elem_id="det-intro")
    with gr.Row():
        ui.prompt = gr.Textbox("Write a long story about a dog named Max.", label=s(lang, "prompt"), lines=2,
                               elem_id="det-prompt", scale=3)
        ui.tokens = gr.Slider(5, 80, value=40, step=1, label=s(lang, "tokens"), elem_id="det-tokens", scale=1)
    ui.variants = gr.CheckboxGroup(list(VARIANTS), value=list(VARIANTS), label=s(lang, "variants"),
                                   elem_id="det-variants")
    ui.run = gr.Button(s(lang, "run"), variant="primary", elem_id="determinism-run")
    ui.result = gr.HTML("", elem_id="det-result")
    ui.plot = gr.Plot(None, elem_id="det-margins", show_label=False)
    ui.last = session_state()
    return ui


def render(lang: str, out: dict | None) -> tuple[str, Any]:
    if not out:
        return "", None
    runs = out["runs"]
    n = len(runs[0]["tokens"])
    rows = [f"<div class='det-run'><b>{html.escape(runs[0]['name'])}</b> (reference)<br>"
            f"<span class='det-text'>{html.escape(out['texts'][runs[0]['name']])}</span></div>"]
    flips = []
    for run, div in zip(runs[1:], out["divergence"]):
        if div["step"] is None:
            note = s(lang, "same", n=n)
        else:
            note = s(lang, "diverge", step=div["step"], ref=div["reference_token"], var=div["variant_token"],
                     m=div["reference_margin"])
            flips.append(div["step"])
        rows.append(f"<div class='det-run'><b>{html.escape(run['name'])}</b>: {html.escape(note)}<br>"
                    f"<span class='det-text'>{html.escape(out['texts'][run['name']])}</span></div>")
    fig = go.Figure(go.Bar(x=list(range(n)), y=runs[0]["margins"], name=s(lang, "margin"),
                           marker_color=["#d62728" if i in flips else "#4c78a8" for i in range(n)]))
    fig.update_layout(title=s(lang, "margins"), xaxis_title=s(lang, "step"), yaxis_title=s(lang, "margin"),
                      yaxis_type="log", height=300, margin=dict(l=50, r=20, t=50, b=40))
    return "\n".join(rows), fig


def wire(ui: SimpleNamespace, lang_state: Any, model_component: Any, hub_component: Any, chat_component: Any,
         jobs: SessionJobs | None = None) -> None:
    def on_run(lang, model, hub, chat, prompt, tokens, variants):
        from decoding_lab.errors import USER_ERRORS
        from decoding_lab.models import get_model
        try:
            if not (prompt or "").strip():
                raise SettingsError("the prompt is empty")
            if not variants or len(variants) < 2:
                raise SettingsError("choose at least two numerical paths to compare")
            lm = get_model((hub or "").strip() or model)
            chat_mode = chat == "chat" and lm.has_chat_template
            ordered = tuple(v for v in VARIANTS if v in variants)
            out = greedy_variants(lm, lm.encode_prompt(prompt, chat_mode), int(tokens), ordered)
        except USER_ERRORS as e:
            raise gr.Error(str(e).splitlines()[0]) from None
        html_out, fig = render(lang, out)
        return {ui.result: html_out, ui.plot: fig, ui.last: out}

    on_run = gated(on_run, jobs)  # one model job per tab at a time
    ui.run.click(on_run, [lang_state, model_component, hub_component, chat_component, ui.prompt, ui.tokens,
                          ui.variants], [ui.result, ui.plot, ui.last], api_name="determinism_run",
                 concurrency_id="model")


def rerender(ui: SimpleNamespace, lang: str, last: dict | None) -> dict:
    html_out, fig = render(lang, last)
    return {ui.intro: s(lang, "intro"), ui.prompt: gr.update(label=s(lang, "prompt")),
            ui.tokens: gr.update(label=s(lang, "tokens")), ui.variants: gr.update(label=s(lang, "variants")),
            ui.run: gr.update(value=s(lang, "run")), ui.result: html_out, ui.plot: fig}
