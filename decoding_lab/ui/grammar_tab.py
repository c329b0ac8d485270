"""Grammar tab: let the model write only what a grammar allows, and watch what that costs.

Three sections, one constraint (a preset, a regex, a JSON Schema, a list of choices, or a
Lark / GBNF grammar):

* **Step through** — a ``Stepper`` with the ``GrammarMask`` stage: per step, how many
  tokens the grammar still allows (log scale) and how much of the model's probability it
  removed ("how hard the grammar pushed"), the model's favourite tokens it forbade, and the
  engine's compile and mask times next to the forward pass.
* **Constrained vs free** — ``grammar.compare.constrained_vs_free``: n samples each side,
  each checked by the same validator.
* **Token healing** — ``grammar.healing_demo``: the next-token distribution after a prompt
  that ends in ``{"name": "``, with and without backing up over the last token.

The core computes and records; this module lays out. Strings (English, Chinese) are local.
Per-visitor state is a ``GrammarSession`` in ``gr.State`` (the stepper and its grammar
matcher; the model weights stay shared: the stepper's deepcopy never copies them).
"""

from __future__ import annotations

import functools
import html
import json
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from decoding_lab.grammar import PRESETS, GrammarMask, build_constraint, preset, preset_prompt
from decoding_lab.grammar.stage import GrammarExtra, mask_seconds_per_token
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.common.plots import BLUE, FONT, ORANGE, show_token
from decoding_lab.ui.common.runtime import gpu
from decoding_lab.ui.common.sessions import SessionJobs, gated, session_state
from decoding_lab.ui.common.state import as_number

KINDS = ("preset", "regex", "json_schema", "choices", "lark", "gbnf")
TOP_N = 40            # rows of the raw distribution each trace keeps (the forbidden table reads them)
FORBIDDEN_ROWS = 12
HEAL_ROWS = 10
HEAL_PREFIX = '{"name": "'

#: What the text area holds when the user switches to a kind: (constraint text, a prompt that suits it).
EXAMPLES: dict[str, tuple[str, str]] = {
    "regex": (r"(1[0-2]|[1-9]):[0-5][0-9] (am|pm)",
              "What time do people usually eat lunch? Answer with a time like 12:30 pm."),
    "json_schema": (json.dumps({"type": "object", "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 20},
        "country": {"type": "string", "minLength": 1, "maxLength": 20},
        "population_millions": {"type": "number", "minimum": 0, "maximum": 50}},
        "required": ["city", "country", "population_millions"], "additionalProperties": False}, indent=2),
        "Give facts about Paris as JSON with the fields city, country and population_millions."),
    "choices": ("positive\nnegative\nneutral",
                "Is this review positive, negative or neutral? \"The soup was cold and the waiter was rude.\""),
    "lark": ('start: "[" item ", " item ", " item "]"\nitem: "\\"" /[a-z]{3,10}/ "\\""',
             "List three colours as a JSON array of strings."),
    "gbnf": ('root ::= "The answer is " answer "."\nanswer ::= "yes" | "no"', "Is the Sun a star?"),
}

S: dict[str, dict[str, str]] = {
    "en": {
        "intro": "A grammar turns *which texts are allowed* into *which tokens may come next*: at every step the "
                 "engine (llguidance) masks every token that could not lead to a valid text, and the model ranks "
                 "what is left. The format is then guaranteed; the content is still the model's, pushed onto "
                 "tokens it liked less.",
        "kind": "Constraint", "preset": "Preset", "text": "Constraint text",
        "text_info": "regex: Rust syntax · JSON Schema · choices: one per line · Lark: start: ... · GBNF: root ::= ...",
        "k_preset": "preset", "k_regex": "regex", "k_json_schema": "JSON Schema", "k_choices": "choices",
        "k_lark": "Lark", "k_gbnf": "GBNF",
        "prompt": "Prompt", "chat": "Prompt format", "chat_choice": "chat template", "raw_choice": "raw text",
        "temperature": "Temperature", "temperature_info": "0 = greedy", "seed": "Seed",
        "max_tokens": "Token budget", "max_tokens_info": "a constrained text not finished within it is reported",
        "sec_step": "### Step through", "step": "Step", "step_n": "Step ×N", "n_steps": "N", "reset": "Reset",
        "sec_compare": "### Constrained vs free",
        "cmp_intro": "The same prompt and settings, with and without the grammar; every output checked by the same "
                     "validator. *Salvageable*: a valid piece can at least be cut out of it (a code fence, the first "
                     "JSON value, the start of the first line).",
        "cmp_n": "Samples per side", "cmp_tokens": "Max new tokens", "cmp_run": "Run both",
        "sec_heal": "### Token healing",
        "heal_intro": "The prompt (above) is followed by the start of the answer. A prompt that ends inside what the "
                      "model would write as one token shows it an unusual split. Healing removes the last prompt "
                      "token and lets the model write it again, allowing only tokens consistent with the removed text.",
        "heal_prefix": "The answer starts with", "heal_run": "Compare next-token distributions",
        "empty_trace": "Press Step to start", "trace_title": "How hard the grammar pushed",
        "allowed_axis": "allowed tokens (log)", "mass_axis": "p removed", "step_axis": "step",
        "allowed": "allowed tokens", "removed": "probability the grammar removed", "forced": "forced (1 allowed)",
        "col_token": "token", "col_id": "id", "col_rank": "model rank", "col_p": "p (model)",
        "col_p_heal": "p (renormalised)", "none_forbidden": "(none of the model's top tokens was forbidden)",
        "forbidden_label": "Top tokens the grammar forbade at this step",
        "status_ready": "**{model}** · {constraint} · compiled in {ms:.1f} ms · prompt {n} tokens. Press Step.",
        "status_step": "Step {step} · chose {token} (model rank {rank}, p = {p:.3f}) · allowed here: {allowed:,} · "
                       "grammar: {state}",
        "state_incomplete": "not complete yet", "state_complete": "complete (may stop or go on)",
        "state_finished": "finished", "forced_note": " · forced: the only allowed token",
        "restarted": "The constraint, prompt or model changed: started over.",
        "timing": "| | time |\n|---|---|\n| vocabulary wrapper (once per model) | {vocab:.0f} ms |\n"
                  "| grammar compile | {compile:.1f} ms |\n| mask, this step | {mask:.3f} ms |\n"
                  "| mask, mean over {n} steps | {mean:.3f} ms |\n| model forward, this step | {fwd:.0f} ms |",
        "gen_label": "Generated so far", "gen_empty": "(nothing yet)",
        "gen_legend": "grey = forced (only one token allowed) · orange underline = the model's favourite was "
                      "forbidden (hover a token for details)",
        "budget": "Token budget of {n} used up and the text is not complete under the grammar: raise the budget "
                  "and Reset.", "finished": "The grammar is satisfied and the text ended: press Reset to start again.",
        "free": "Free", "constrained": "Constrained", "valid": "valid", "invalid": "invalid",
        "salvage": "salvageable", "cut": "cut by the budget", "r_not_json": "not JSON",
        "r_schema": "JSON, but breaks the schema", "r_no_match": "not in the language", "n_tokens": "{n} tokens",
        "cmp_summary": "**Format failures** — free: **{ff:.0%}** (nothing salvageable: {fs:.0%}) · constrained: "
                       "**{cf:.0%}**\n\nTimes — grammar compile {compile:.1f} ms · grammar work {gms:.3f} ms per "
                       "token · free run {ft:.1f} s · constrained run {ct:.1f} s",
        "cmp_unfinished": "{k} constrained sample(s) ran out of tokens before the grammar was satisfied: raise "
                          "Max new tokens.",
        "heal_without": "Without healing (after the full prompt)", "heal_with": "With healing (last token removed)",
        "heal_summary": "Removed prompt text: `{removed}` · {allowed:,} tokens are consistent with it and hold "
                        "{mass:.1%} of the model's probability · chance the model writes the removed token again "
                        "as it was: {again:.1%}",
        "heal_nothing": "Nothing to heal: the prompt ends in a special token.",
        "error": "Error", "bad_input": "{msg}",
    },
    "zh": {
        "intro": "语法把“允许哪些文本”变成“下一个可以是哪些词元”：每一步，引擎（llguidance）屏蔽所有不可能通向合法文本的词元，"
                 "模型在剩下的词元里排序。格式因此得到保证；内容仍然是模型的，只是被推到了它不那么喜欢的词元上。",
        "kind": "约束", "preset": "预设", "text": "约束文本",
        "text_info": "正则：Rust 语法 · JSON Schema · 选项：每行一个 · Lark：start: ... · GBNF：root ::= ...",
        "k_preset": "预设", "k_regex": "正则", "k_json_schema": "JSON Schema", "k_choices": "选项",
        "k_lark": "Lark", "k_gbnf": "GBNF",
        "prompt": "提示词", "chat": "提示格式", "chat_choice": "对话模板", "raw_choice": "原始文本",
        "temperature": "温度", "temperature_info": "0 = 贪心", "seed": "随机种子",
        "max_tokens": "词元预算", "max_tokens_info": "在预算内没写完的受约束文本会被报告",
        "sec_step": "### 单步查看", "step": "单步", "step_n": "走 N 步", "n_steps": "N", "reset": "重置",
        "sec_compare": "### 受约束 vs 自由生成",
        "cmp_intro": "同样的提示词和设置，分别带语法和不带语法；所有输出用同一个校验器检查。*可挽救*：至少能从中切出一段"
                     "合法内容（代码块、第一个 JSON 值、第一行的开头）。",
        "cmp_n": "每边的样本数", "cmp_tokens": "最多新词元数", "cmp_run": "两边都运行",
        "sec_heal": "### 词元修复（token healing）",
        "heal_intro": "提示词（上方）后面接着回答的开头。如果提示词在模型通常写成一个词元的地方中途结束，模型看到的是一种"
                      "少见的切分。修复会删掉提示词的最后一个词元，让模型重新写它，只允许与被删文本一致的词元。",
        "heal_prefix": "回答的开头", "heal_run": "比较下一个词元的分布",
        "empty_trace": "点击“单步”开始", "trace_title": "语法推得有多用力",
        "allowed_axis": "允许的词元数（对数）", "mass_axis": "被移除的 p", "step_axis": "步",
        "allowed": "允许的词元数", "removed": "语法移除的概率", "forced": "强制（只允许 1 个）",
        "col_token": "词元", "col_id": "id", "col_rank": "模型排名", "col_p": "p（模型）",
        "col_p_heal": "p（重新归一化）", "none_forbidden": "（模型的前几名词元都没有被禁止）",
        "forbidden_label": "本步被语法禁止的高概率词元",
        "status_ready": "**{model}** · {constraint} · 编译 {ms:.1f} 毫秒 · 提示词 {n} 个词元。点击“单步”。",
        "status_step": "第 {step} 步 · 选择 {token}（模型排名 {rank}，p = {p:.3f}）· 允许 {allowed:,} 个词元 · 语法：{state}",
        "state_incomplete": "尚未完整", "state_complete": "已完整（可停止也可继续）", "state_finished": "已结束",
        "forced_note": " · 强制：唯一允许的词元",
        "restarted": "约束、提示词或模型已更改：已重新开始。",
        "timing": "| | 耗时 |\n|---|---|\n| 词表包装（每个模型一次） | {vocab:.0f} 毫秒 |\n"
                  "| 语法编译 | {compile:.1f} 毫秒 |\n| 本步掩码 | {mask:.3f} 毫秒 |\n"
                  "| {n} 步掩码的平均 | {mean:.3f} 毫秒 |\n| 本步模型前向 | {fwd:.0f} 毫秒 |",
        "gen_label": "目前生成的文本", "gen_empty": "（还没有）",
        "gen_legend": "灰底 = 强制（只允许一个词元）· 橙色下划线 = 模型最想要的词元被禁止（悬停查看详情）",
        "budget": "{n} 个词元的预算已用完，但文本在语法下还不完整：请提高预算并重置。",
        "finished": "语法已满足、文本已结束：点击“重置”重新开始。",
        "free": "自由生成", "constrained": "受约束", "valid": "合法", "invalid": "不合法", "salvage": "可挽救",
        "cut": "被预算截断", "r_not_json": "不是 JSON", "r_schema": "是 JSON，但不符合 schema", "r_no_match": "不属于该语言",
        "n_tokens": "{n} 个词元",
        "cmp_summary": "**格式失败率** — 自由生成：**{ff:.0%}**（无法挽救：{fs:.0%}）· 受约束：**{cf:.0%}**\n\n"
                       "耗时 — 语法编译 {compile:.1f} 毫秒 · 语法开销每词元 {gms:.3f} 毫秒 · 自由生成 {ft:.1f} 秒 · "
                       "受约束生成 {ct:.1f} 秒",
        "cmp_unfinished": "{k} 个受约束样本在语法满足前用完了词元：请提高“最多新词元数”。",
        "heal_without": "不修复（完整提示词之后）", "heal_with": "修复（删掉最后一个词元）",
        "heal_summary": "被删掉的提示文本：`{removed}` · 与它一致的词元有 {allowed:,} 个，占模型概率的 {mass:.1%} · "
                        "模型原样重写被删词元的概率：{again:.1%}",
        "heal_nothing": "无需修复：提示词以特殊词元结尾。",
        "error": "错误", "bad_input": "{msg}",
    },
}


def s(lang: str, key: str, **kw: Any) -> str:
    text = S["zh" if norm_lang(lang) == "zh" else "en"].get(key, S["en"][key])
    return text.format(**kw) if kw else text


def kind_choices(lang: str) -> list[tuple[str, str]]:
    return [(s(lang, f"k_{k}"), k) for k in KINDS]


def chat_choices(lang: str) -> list[tuple[str, str]]:
    return [(s(lang, "chat_choice"), "chat"), (s(lang, "raw_choice"), "raw")]


def preset_source(name: str) -> str:
    """What the (read-only) text area shows for a preset."""
    c = preset(name)
    if c.kind == "json_schema":
        return json.dumps(c.schema, indent=2, ensure_ascii=False)
    if c.kind == "choices":
        return "\n".join(c.options or [])
    return c.source


# ----------------------------------------------------------------------------- session
@dataclass
class GrammarSession:
    """One visitor's step-through run. ``key`` is what it was built from (a change starts over)."""

    key: tuple
    model_name: str
    constraint: str              # label
    compile_seconds: float
    vocab_seconds: float
    stepper: Any                 # decoding_lab.stepper.Stepper with extra_stages={"grammar": GrammarMask}
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def mask(self) -> Any:
        return self.stepper.extra_stages["grammar"]

    def __deepcopy__(self, memo: dict) -> "GrammarSession":
        import copy
        return GrammarSession(self.key, self.model_name, self.constraint, self.compile_seconds, self.vocab_seconds,
                              copy.deepcopy(self.stepper, memo))


def make_constraint(kind: str, preset_name: str, text: str) -> Any:
    if kind == "preset":
        return preset(preset_name or "json-person")
    return build_constraint(kind, text or "")


def settings_of(temperature: Any, seed: Any) -> SamplingSettings:
    if temperature is None or seed is None:
        raise SettingsError("temperature and seed need a number")
    # as_number: a whole float seed becomes an int; NaN or a string gets a message, not a crash
    return SamplingSettings(temperature=as_number("temperature", temperature), seed=as_number("seed", seed))


def _model_name(model: str, hub: str) -> str:
    return (hub or "").strip() or (model or "")


def _load(model: str, hub: str, chat: str) -> tuple[Any, bool]:
    from decoding_lab.models import get_model
    lm = get_model(_model_name(model, hub))
    return lm, chat == "chat" and bool(getattr(lm, "has_chat_template", False))


def new_session(key: tuple, model: str, hub: str, kind: str, preset_name: str, text: str, prompt: str, chat: str,
                temperature: Any, seed: Any, max_tokens: Any) -> GrammarSession:
    from decoding_lab.grammar import GrammarTokenizer
    from decoding_lab.stepper import Stepper

    constraint = make_constraint(kind, preset_name, text)  # a bad grammar fails here, before the model loads
    settings = settings_of(temperature, seed)
    if not (prompt or "").strip():
        raise SettingsError("the prompt is empty: type something to continue from")
    lm, chat_mode = _load(model, hub, chat)
    t0 = time.perf_counter()
    GrammarTokenizer.from_lm(lm)  # built once per model, then cached
    vocab_s = time.perf_counter() - t0
    mask = GrammarMask(constraint, lm)
    stepper = Stepper(lm, lm.encode_prompt(prompt, chat_mode), settings, top_n=TOP_N,
                      extra_stages={"grammar": mask}, max_new_tokens=int(max_tokens or 64))
    return GrammarSession(key, lm.name, constraint.label(), mask.compile_seconds, vocab_s, stepper)


# ----------------------------------------------------------------------------- views
def _grammar_record(trace: Any) -> Any:
    """The step's ``GrammarMask`` record (its ``extra`` a ``GrammarExtra``), or None."""
    r = trace.record(GrammarMask)
    return r if r is not None and isinstance(r.extra, GrammarExtra) else None


def trace_figure(lang: str, session: GrammarSession | None) -> go.Figure:
    """Allowed-token count (log y) and removed probability per step, from the stepper's records."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, row_heights=[0.6, 0.4])
    traces = session.stepper.traces if session is not None else []
    recs = [(tr, _grammar_record(tr)) for tr in traces]
    recs = [(tr, r) for tr, r in recs if r is not None]
    if not recs:
        fig.add_annotation(text=s(lang, "empty_trace"), showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                           font=dict(size=14, color="#6b7280"))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
    else:
        xs = [tr.step for tr, _ in recs]
        allowed = [r.extra.allowed for _, r in recs]
        forced = [r.extra.forced for _, r in recs]
        hover = [f"step {tr.step}: <b>{html.escape(show_token(tr.chosen_token))}</b><br>{a:,} allowed"
                 f"<br>p removed {r.removed_mass:.3f}" for (tr, r), a in zip(recs, allowed)]
        fig.add_scatter(x=xs, y=allowed, mode="lines+markers", name=s(lang, "allowed"), row=1, col=1,
                        line=dict(color=BLUE, width=2), hovertext=hover, hoverinfo="text",
                        marker=dict(size=[11 if f else 7 for f in forced],
                                    color=[ORANGE if f else BLUE for f in forced]))
        fig.add_scatter(x=[x for x, f in zip(xs, forced) if f], y=[a for a, f in zip(allowed, forced) if f],
                        mode="markers", name=s(lang, "forced"), marker=dict(color=ORANGE, size=11), row=1, col=1,
                        hoverinfo="skip")
        fig.add_bar(x=xs, y=[r.removed_mass for _, r in recs], name=s(lang, "removed"), marker_color=ORANGE,
                    hovertext=hover, hoverinfo="text", row=2, col=1)
        top = max(allowed + [10])
        fig.update_yaxes(type="log", title=s(lang, "allowed_axis"), range=[-0.2, len(str(int(top))) + 0.1],
                         row=1, col=1)
        fig.update_yaxes(title=s(lang, "mass_axis"), range=[0, 1], row=2, col=1)
        fig.update_xaxes(title=s(lang, "step_axis"), row=2, col=1)
    fig.update_layout(title=dict(text=s(lang, "trace_title"), x=0.01, font=dict(size=14)), height=380, font=FONT,
                      margin=dict(l=60, r=20, t=50, b=40), template="plotly_white", bargap=0.2,
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig


def forbidden_table(lang: str, session: GrammarSession | None) -> pd.DataFrame:
    """The model's top tokens that the grammar cut at the latest step (as the trace recorded them)."""
    cols = [s(lang, "col_token"), s(lang, "col_id"), s(lang, "col_rank"), s(lang, "col_p")]
    st = session.stepper if session is not None else None
    if st is None or not st.traces:
        return pd.DataFrame([], columns=cols)
    rows = sorted((r for r in st.traces[-1].top if r.cut_by == GrammarMask.name),
                  key=lambda r: -r.p_raw)[:FORBIDDEN_ROWS]
    if not rows:
        return pd.DataFrame([[s(lang, "none_forbidden"), "", "", ""]], columns=cols)
    # three significant digits: far down the ranking a forbidden token's p is tiny, not zero
    return pd.DataFrame([[show_token(r.token), r.token_id, r.rank, float(f"{r.p_raw:.3g}")] for r in rows],
                        columns=cols)


def generated_html(lang: str, session: GrammarSession | None) -> str:
    st = session.stepper if session is not None else None
    box = ("font-family:ui-monospace,Menlo,Consolas,monospace;font-size:15px;line-height:1.9;padding:8px 10px;"
           "border:1px solid var(--border-color-primary);border-radius:8px;white-space:pre-wrap;"
           "word-break:break-word;min-height:44px;max-height:220px;overflow-y:auto")
    if st is None or not st.traces:
        return f"<div style='{box};color:#8a8f98'>{html.escape(s(lang, 'gen_empty'))}</div>"
    spans = []
    for tr in st.traces:
        r = _grammar_record(tr)
        forced = r is not None and r.extra.forced
        pf = r.extra.preferred_forbidden if r is not None else None
        pushed = pf is not None
        style = "border-radius:3px;padding:1px 0;margin:0 1px;"
        style += "background:#e5e7eb;color:#4b5563;" if forced else ""
        style += "box-shadow:inset 0 -3px 0 #f97316;" if pushed else ""
        tip = f"p={tr.chosen_p_raw:.3f}, rank {tr.chosen_rank}"
        if pf is not None:
            tip += f"; model wanted {pf.token!r} (p={pf.p:.3f})"
        text = "⏎" if tr.finished else tr.chosen_token
        spans.append(f"<span style='{style}' title='{html.escape(tip, quote=True)}'>{html.escape(text)}</span>")
    legend = f"<div style='font-size:12px;color:#6b7280;margin:4px 2px'>{html.escape(s(lang, 'gen_legend'))}</div>"
    return f"<div style='{box}'>{''.join(spans)}</div>{legend}"


def status_md(lang: str, session: GrammarSession | None) -> str:
    if session is None:
        return ""
    st = session.stepper
    if not st.traces:
        return s(lang, "status_ready", model=session.model_name, constraint=session.constraint,
                 ms=1e3 * session.compile_seconds, n=len(st.prompt_ids))
    tr = st.traces[-1]
    r = _grammar_record(tr)
    allowed = r.extra.allowed if r is not None else tr.kept_final
    text = s(lang, "status_step", step=tr.step, token=f"`{show_token(tr.chosen_token)}`", rank=tr.chosen_rank,
             p=tr.chosen_p_raw, allowed=allowed, state=s(lang, f"state_{session.mask.status()}"))
    return text + (s(lang, "forced_note") if r is not None and r.extra.forced else "")


def timing_md(lang: str, session: GrammarSession | None) -> str:
    if session is None:
        return ""
    masks = mask_seconds_per_token([r for tr in session.stepper.traces for r in tr.stages])
    last = session.stepper.traces[-1] if session.stepper.traces else None
    return s(lang, "timing", vocab=1e3 * session.vocab_seconds, compile=1e3 * session.compile_seconds,
             mask=1e3 * (masks[-1] if masks else 0.0), n=len(masks),
             mean=1e3 * (sum(masks) / len(masks) if masks else 0.0),
             fwd=1e3 * (last.timings.get("forward", 0.0) if last else session.stepper.prefill_seconds))


def render_step(ui: SimpleNamespace, lang: str, session: GrammarSession | None) -> dict:
    return {ui.status: status_md(lang, session), ui.generated: generated_html(lang, session),
            ui.trace: trace_figure(lang, session),
            ui.forbidden: forbidden_table(lang, session), ui.timing: timing_md(lang, session)}


def compare_html(lang: str, r: Any) -> tuple[str, str]:
    """(summary markdown, side-by-side HTML) for a ``ConstrainedVsFree``."""
    if r is None:
        return "", ""
    summary = s(lang, "cmp_summary", ff=r.free_failure_rate, fs=r.free_salvage_failure_rate,
                cf=r.constrained_failure_rate, compile=1e3 * r.compile_seconds, gms=r.grammar_ms_per_token,
                ft=r.free_seconds, ct=r.constrained_seconds)

    def column(side: str, title: str, samples: list, fail: float) -> str:
        items = []
        for i, x in enumerate(samples):
            ok = "#16a34a" if x.valid else "#dc2626"
            badge = s(lang, "valid") if x.valid else " · ".join(
                [s(lang, "invalid")] + ([s(lang, f"r_{x.reason}")] if x.reason else []) +
                ([s(lang, "salvage")] if x.salvaged else []))
            cut = "" if x.finished else f" · {s(lang, 'cut')}"
            items.append(
                f"<div class='grammar-sample' data-valid='{str(x.valid).lower()}' style='border-top:1px dashed "
                f"var(--border-color-primary);padding:6px 0'><span style='font-size:12px;color:{ok};font-weight:600'>"
                f"#{i + 1} {'✔' if x.valid else '✘'} {html.escape(badge)}</span><span style='font-size:12px;"
                f"color:#6b7280'> · {html.escape(s(lang, 'n_tokens', n=x.tokens))}{html.escape(cut)}</span>"
                f"<pre style='white-space:pre-wrap;word-break:break-word;margin:4px 0 0;font-size:13px;"
                f"max-height:160px;overflow-y:auto'>"
                f"{html.escape(x.text) or '∅'}</pre></div>")
        return (f"<div class='grammar-{side}' style='flex:1;min-width:260px;border:1px solid "
                f"var(--border-color-primary);border-radius:10px;"
                f"padding:8px 10px'><div style='font-weight:600'>{html.escape(title)} <span style='font-weight:400;"
                f"color:#6b7280'>· {fail:.0%} {html.escape(s(lang, 'invalid'))}</span></div>{''.join(items)}</div>")

    body = (f"<div style='display:flex;gap:12px;flex-wrap:wrap'>"
            f"{column('free', s(lang, 'free'), r.free, r.free_failure_rate)}"
            f"{column('constrained', s(lang, 'constrained'), r.constrained, r.constrained_failure_rate)}</div>")
    return summary, body


def healing_views(lang: str, d: Any) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    c1 = [s(lang, "col_token"), s(lang, "col_id"), s(lang, "col_p")]
    c2 = [s(lang, "col_token"), s(lang, "col_id"), s(lang, "col_p_heal"), s(lang, "col_p")]
    if d is None:
        return "", pd.DataFrame([], columns=c1), pd.DataFrame([], columns=c2)
    without = pd.DataFrame([[show_token(x["token"]), x["id"], round(x["p"], 4)] for x in d.without], columns=c1)
    with_h = pd.DataFrame([[show_token(x["token"]), x["id"], round(x["p"], 4), round(x["p_model"], 4)]
                           for x in d.with_healing], columns=c2)
    if not d.removed_text:
        return s(lang, "heal_nothing"), without, with_h
    summary = s(lang, "heal_summary", removed=show_token(d.removed_text), allowed=d.allowed, mass=d.consistent_mass,
                again=d.p_removed_token)
    return summary, without, with_h


# ----------------------------------------------------------------------------- layout
def build(lang: str = "en") -> SimpleNamespace:
    ui = SimpleNamespace()
    first = "json-person"
    ui.intro = gr.Markdown(s(lang, "intro"), elem_id="grammar-intro")
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            ui.kind = gr.Radio(kind_choices(lang), value="preset", label=s(lang, "kind"), elem_id="grammar-kind")
            ui.preset = gr.Dropdown(list(PRESETS), value=first, label=s(lang, "preset"), elem_id="grammar-preset")
            ui.text = gr.Textbox(preset_source(first), label=s(lang, "text"), info=s(lang, "text_info"), lines=6,
                                 max_lines=10, interactive=False, elem_id="grammar-text")
        with gr.Column(scale=1, min_width=320):
            ui.prompt = gr.Textbox(preset_prompt(first), label=s(lang, "prompt"), lines=3, elem_id="grammar-prompt")
            ui.chat = gr.Radio(chat_choices(lang), value="chat", label=s(lang, "chat"), elem_id="grammar-chat")
            with gr.Row():
                ui.temperature = gr.Slider(0.0, 2.0, value=0.7, step=0.05, label=s(lang, "temperature"),
                                           info=s(lang, "temperature_info"), elem_id="grammar-temperature")
                ui.seed = gr.Number(0, precision=0, label=s(lang, "seed"), elem_id="grammar-seed", min_width=90)
            ui.max_tokens = gr.Slider(8, 256, value=96, step=1, label=s(lang, "max_tokens"),
                                      info=s(lang, "max_tokens_info"), elem_id="grammar-max-tokens")

    ui.sec_step = gr.Markdown(s(lang, "sec_step"))
    with gr.Row(equal_height=True):
        ui.step = gr.Button(s(lang, "step"), variant="primary", elem_id="grammar-step-btn", min_width=90)
        ui.step_n = gr.Button(s(lang, "step_n"), elem_id="grammar-step-n-btn", min_width=90)
        ui.n_steps = gr.Slider(1, 64, value=10, step=1, label=s(lang, "n_steps"), elem_id="grammar-n-steps",
                               scale=2)
        ui.reset = gr.Button(s(lang, "reset"), elem_id="grammar-reset-btn", min_width=90)
    ui.status = gr.Markdown("", elem_id="grammar-status")
    ui.generated = gr.HTML(generated_html(lang, None), label=s(lang, "gen_label"), elem_id="grammar-generated")
    with gr.Row():
        with gr.Column(scale=3, min_width=360):
            ui.trace = gr.Plot(trace_figure(lang, None), show_label=False, elem_id="grammar-trace")
        with gr.Column(scale=2, min_width=280):
            ui.forbidden = gr.Dataframe(forbidden_table(lang, None), label=s(lang, "forbidden_label"),
                                        interactive=False, wrap=True, max_height=300, elem_id="grammar-forbidden")
            ui.timing = gr.Markdown("", elem_id="grammar-timing")

    ui.sec_compare = gr.Markdown(s(lang, "sec_compare"))
    ui.cmp_intro = gr.Markdown(s(lang, "cmp_intro"))
    with gr.Row(equal_height=True):
        ui.cmp_n = gr.Slider(1, 8, value=3, step=1, label=s(lang, "cmp_n"), elem_id="grammar-cmp-n")
        ui.cmp_tokens = gr.Slider(8, 192, value=80, step=1, label=s(lang, "cmp_tokens"), elem_id="grammar-cmp-tokens")
        ui.cmp_run = gr.Button(s(lang, "cmp_run"), variant="primary", elem_id="grammar-cmp-btn")
    ui.cmp_summary = gr.Markdown("", elem_id="grammar-compare-summary")
    ui.cmp_view = gr.HTML("", elem_id="grammar-compare")

    ui.sec_heal = gr.Markdown(s(lang, "sec_heal"))
    ui.heal_intro = gr.Markdown(s(lang, "heal_intro"))
    with gr.Row(equal_height=True):
        ui.heal_prefix = gr.Textbox(HEAL_PREFIX, label=s(lang, "heal_prefix"), elem_id="grammar-heal-prefix", scale=2)
        ui.heal_run = gr.Button(s(lang, "heal_run"), elem_id="grammar-heal-btn", scale=1)
    ui.heal_summary = gr.Markdown("", elem_id="grammar-heal-summary")
    _, w, h = healing_views(lang, None)
    with gr.Row():
        ui.heal_without = gr.Dataframe(w, label=s(lang, "heal_without"), interactive=False,
                                       elem_id="grammar-heal-without")
        ui.heal_with = gr.Dataframe(h, label=s(lang, "heal_with"), interactive=False, elem_id="grammar-heal-with")

    ui.session = session_state()  # the visitor's GrammarSession; these three expire when idle
    ui.cmp_last = session_state()
    ui.heal_last = session_state()
    # The build_demo protocol shared with the other tabs: states to pass to rerender, components it updates.
    ui.states = [ui.session, ui.cmp_last, ui.heal_last]
    ui.views = list(rerender(ui, lang, None, None, None))
    ui.rerender = functools.partial(rerender, ui)
    return ui


# ----------------------------------------------------------------------------- handlers
def _guard(fn: Callable) -> Callable:
    """The core's user errors -> a one-line ``gr.Error`` (the first argument is the language)."""

    @functools.wraps(fn)
    def wrapper(lang: str, *args: Any, **kw: Any) -> Any:
        from decoding_lab.errors import USER_ERRORS
        try:
            return fn(lang, *args, **kw)
        except USER_ERRORS as e:
            msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise gr.Error(s(lang, "bad_input", msg=msg), title=s(lang, "error"), print_exception=False) from None
    return wrapper


def wire(ui: SimpleNamespace, lang_state: Any, model_component: Any, hub_component: Any,
         jobs: SessionJobs | None = None) -> None:
    """Attach the tab's events. Every endpoint is named ``grammar_*``; ``jobs`` bounds the model
    jobs one tab runs at once (see ``sessions``)."""
    spec = [ui.kind, ui.preset, ui.text, ui.prompt, ui.chat, ui.temperature, ui.seed, ui.max_tokens]
    step_out = [ui.session, ui.status, ui.generated, ui.trace, ui.forbidden, ui.timing]

    def on_kind(lang, kind, preset):  # noqa: F811 (the API parameter is called "preset")
        if kind == "preset":
            name = preset or "json-person"
            return {ui.text: gr.update(value=preset_source(name), interactive=False),
                    ui.prompt: preset_prompt(name), ui.preset: gr.update(visible=True)}
        text, prompt = EXAMPLES.get(kind, ("", ""))
        return {ui.text: gr.update(value=text, interactive=True), ui.prompt: prompt,
                ui.preset: gr.update(visible=False)}

    ui.kind.input(on_kind, [lang_state, ui.kind, ui.preset], [ui.text, ui.prompt, ui.preset], api_name="grammar_kind")
    ui.preset.input(lambda lang, preset: on_kind(lang, "preset", preset), [lang_state, ui.preset],
                    [ui.text, ui.prompt, ui.preset], api_name="grammar_preset")

    def key_of(model, hub, kind, preset_name, text, prompt, chat):
        is_preset = kind == "preset"
        return (_model_name(model, hub), kind, preset_name if is_preset else "", "" if is_preset else text,
                prompt, chat)

    def prepared(lang, session, model, hub, kind, preset_name, text, prompt, chat, temperature, seed, max_tokens):
        """The visitor's session, started over when what it was built from changed; temperature
        and budget apply to a running session from the next step on."""
        key = key_of(model, hub, kind, preset_name, text, prompt, chat)
        if session is None or session.key != key:
            if session is not None:
                gr.Info(s(lang, "restarted"))
            return new_session(key, model, hub, kind, preset_name, text, prompt, chat, temperature, seed, max_tokens)
        from decoding_lab.stepper import max_new_tokens_limit
        session.stepper.set_settings(settings_of(temperature, seed))
        session.stepper.max_new_tokens = min(int(max_tokens or 64), max_new_tokens_limit())
        return session

    def advance(lang: str, session: GrammarSession, n: int) -> None:
        """Up to ``n`` steps; the end of the text or of the budget is a warning, not an error."""
        from decoding_lab.chain import DeadEndError
        st = session.stepper
        if not session.lock.acquire(blocking=False):
            raise SettingsError("this session is busy with another step; wait a moment")
        try:
            for _ in range(int(n)):
                if st.finished:
                    gr.Warning(s(lang, "finished"))
                    break
                if len(st.tokens) >= st.max_new_tokens:
                    if session.mask.status() == "incomplete":
                        gr.Warning(s(lang, "budget", n=st.max_new_tokens))
                    else:
                        gr.Warning(s(lang, "finished"))
                    break
                try:
                    st.step()
                except DeadEndError as e:  # the steps taken so far stay; say why it stopped
                    gr.Warning(str(e).splitlines()[0])
                    break
        finally:
            session.lock.release()

    @_guard
    @gpu
    def on_reset(lang, session, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed,
                 max_new_tokens):
        key = key_of(model, hub_id, kind, preset, constraint, prompt, chat)
        fresh = new_session(key, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed,
                            max_new_tokens)
        return {ui.session: fresh, **render_step(ui, lang, fresh)}

    @_guard
    @gpu
    def on_step(lang, session, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed,
                max_new_tokens):
        session = prepared(lang, session, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed,
                           max_new_tokens)
        advance(lang, session, 1)
        return {ui.session: session, **render_step(ui, lang, session)}

    @_guard
    @gpu
    def on_step_n(lang, session, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed,
                  max_new_tokens, n_steps):
        session = prepared(lang, session, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed,
                           max_new_tokens)
        advance(lang, session, max(1, int(n_steps or 1)))
        return {ui.session: session, **render_step(ui, lang, session)}

    on_reset, on_step, on_step_n = (gated(f, jobs) for f in (on_reset, on_step, on_step_n))
    base = [lang_state, ui.session, model_component, hub_component, *spec]
    ui.reset.click(on_reset, base, step_out, api_name="grammar_reset", concurrency_id="model")
    ui.step.click(on_step, base, step_out, api_name="grammar_step", concurrency_id="model")
    ui.step_n.click(on_step_n, base + [ui.n_steps], step_out, api_name="grammar_step_n", concurrency_id="model",
                    show_progress="minimal")

    @_guard
    @gpu
    def on_compare(lang, model, hub_id, kind, preset, constraint, prompt, chat, temperature, seed, n,
                   max_new_tokens):
        from decoding_lab.experiments.constrained_vs_free import constrained_vs_free
        c = make_constraint(kind, preset, constraint)
        settings = settings_of(temperature, seed)
        lm, chat_mode = _load(model, hub_id, chat)
        r = constrained_vs_free(lm, prompt or "", c, n=int(n or 1), settings=settings,
                                max_new_tokens=int(max_new_tokens or 64), chat=chat_mode)
        if r.unfinished:
            gr.Warning(s(lang, "cmp_unfinished", k=r.unfinished))
        summary, body = compare_html(lang, r)
        return {ui.cmp_last: r, ui.cmp_summary: summary, ui.cmp_view: body}

    on_compare = gated(on_compare, jobs)  # one model job per tab at a time
    ui.cmp_run.click(on_compare, [lang_state, model_component, hub_component, ui.kind, ui.preset, ui.text, ui.prompt,
                                  ui.chat, ui.temperature, ui.seed, ui.cmp_n, ui.cmp_tokens],
                     [ui.cmp_last, ui.cmp_summary, ui.cmp_view], api_name="grammar_compare", concurrency_id="model")

    @_guard
    @gpu
    def on_heal(lang, model, hub_id, prompt, chat, prefix):
        from decoding_lab.grammar import healing_demo
        from decoding_lab.experiments.constrained_vs_free import answer_prefix_ids
        lm, chat_mode = _load(model, hub_id, chat)
        d = healing_demo(lm, answer_prefix_ids(lm, prompt or "", prefix or "", chat_mode), top_n=HEAL_ROWS)
        summary, without, with_h = healing_views(lang, d)
        return {ui.heal_last: d, ui.heal_summary: summary, ui.heal_without: without, ui.heal_with: with_h}

    on_heal = gated(on_heal, jobs)
    ui.heal_run.click(on_heal, [lang_state, model_component, hub_component, ui.prompt, ui.chat, ui.heal_prefix],
                      [ui.heal_last, ui.heal_summary, ui.heal_without, ui.heal_with], api_name="grammar_heal",
                      concurrency_id="model")


def fill(ui: SimpleNamespace, preset_name: str | None = None, kind: str | None = None, text: str | None = None,
         prompt: str | None = None) -> dict:
    """Updates that load a constraint (and a prompt) into the tab, e.g. from a lesson:
    ``fill(ui, preset_name="integer")`` (the preset's own prompt unless ``prompt`` is given) or
    ``fill(ui, kind="regex", text="[0-9]+", prompt="...")``. A running session starts over at
    the next Step, because what it was built from changed."""
    if preset_name is not None:
        preset(preset_name)  # a bad name raises GrammarError here, not in the visitor's face
        return {ui.kind: "preset", ui.preset: gr.update(value=preset_name, visible=True),
                ui.text: gr.update(value=preset_source(preset_name), interactive=False),
                ui.prompt: prompt if prompt is not None else preset_prompt(preset_name)}
    if kind not in KINDS or kind == "preset":
        raise SettingsError(f"fill: give a preset name or a kind among {', '.join(KINDS[1:])}")
    out = {ui.kind: kind, ui.preset: gr.update(visible=False),
           ui.text: gr.update(value=text if text is not None else EXAMPLES[kind][0], interactive=True)}
    out[ui.prompt] = prompt if prompt is not None else EXAMPLES[kind][1]
    return out


def rerender(ui: SimpleNamespace, lang: str, session: GrammarSession | None = None, cmp_last: Any = None,
             heal_last: Any = None) -> dict:
    """Every string and view of the tab in ``lang`` (for the page's language switch)."""
    summary, body = compare_html(lang, cmp_last)
    h_summary, without, with_h = healing_views(lang, heal_last)
    out = {
        ui.intro: s(lang, "intro"),
        ui.kind: gr.update(label=s(lang, "kind"), choices=kind_choices(lang)),
        ui.preset: gr.update(label=s(lang, "preset")),
        ui.text: gr.update(label=s(lang, "text"), info=s(lang, "text_info")),
        ui.prompt: gr.update(label=s(lang, "prompt")),
        ui.chat: gr.update(label=s(lang, "chat"), choices=chat_choices(lang)),
        ui.temperature: gr.update(label=s(lang, "temperature"), info=s(lang, "temperature_info")),
        ui.seed: gr.update(label=s(lang, "seed")),
        ui.max_tokens: gr.update(label=s(lang, "max_tokens"), info=s(lang, "max_tokens_info")),
        ui.sec_step: s(lang, "sec_step"), ui.step: gr.update(value=s(lang, "step")),
        ui.step_n: gr.update(value=s(lang, "step_n")), ui.n_steps: gr.update(label=s(lang, "n_steps")),
        ui.reset: gr.update(value=s(lang, "reset")),
        **render_step(ui, lang, session),
        ui.forbidden: gr.update(value=forbidden_table(lang, session), label=s(lang, "forbidden_label")),
        ui.sec_compare: s(lang, "sec_compare"), ui.cmp_intro: s(lang, "cmp_intro"),
        ui.cmp_n: gr.update(label=s(lang, "cmp_n")), ui.cmp_tokens: gr.update(label=s(lang, "cmp_tokens")),
        ui.cmp_run: gr.update(value=s(lang, "cmp_run")), ui.cmp_summary: summary, ui.cmp_view: body,
        ui.sec_heal: s(lang, "sec_heal"), ui.heal_intro: s(lang, "heal_intro"),
        ui.heal_prefix: gr.update(label=s(lang, "heal_prefix")), ui.heal_run: gr.update(value=s(lang, "heal_run")),
        ui.heal_summary: h_summary,
        ui.heal_without: gr.update(value=without, label=s(lang, "heal_without")),
        ui.heal_with: gr.update(value=with_h, label=s(lang, "heal_with")),
    }
    return out
