"""The Grammar tab's strings (English, Simplified Chinese), registered as ``grammar.<key>``.

Read them with ``tr(lang, key)``; static labels are registered with ``ctx.labels`` under the
full key (``"grammar.kind"``) so the page's language switch relabels them. Errors use the
shared ``error`` / ``bad_input`` strings (``common.errors.guarded``)."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

KINDS = ("preset", "regex", "json_schema", "choices", "lark", "gbnf")

EN: dict[str, str] = {
    "intro": "A grammar turns *which texts are allowed* into *which tokens may come next*: at every step the "
             "engine (llguidance) masks every token that could not lead to a valid text, and the model ranks "
             "what is left. The format is then guaranteed; the content is still the model's, pushed onto "
             "tokens it liked less.",
    "kind": "Constraint", "preset": "Preset", "text": "Constraint text",
    "prompt_kept": "Your prompt was kept. This constraint's example prompt: “{example}”",
    "trace_hover": "step {step}: <b>{token}</b><br>{allowed:,} allowed<br>p removed {removed:.3f}",
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
    "cmp_n": "Samples per side", "cmp_tokens": "Max new tokens", "cmp_run": "Run both", "cmp_stop": "■ Stop",
    "cmp_progress": "Sampling {side}: step {step} of at most {total} ({sec:.0f} s)…",
    "cmp_side_free": "without the grammar (1 of 2)", "cmp_side_constrained": "with the grammar (2 of 2)",
    "cmp_stopped": "Stopped: the samples below end where the run was stopped; one marked \"cut by Stop\" is unfinished "
                   "and counts as invalid in these rates, so run to the end to compare the two sides.",
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
    "status_step": "Step {step} · chose {token} (model rank {rank}, raw p before the mask = {p:.3f}) · allowed here: {allowed:,} · "
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
    "salvage": "salvageable", "cut": "cut by the budget", "stopped": "cut by Stop", "r_not_json": "not JSON",
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
}

ZH: dict[str, str] = {
    "intro": "语法把“允许哪些文本”变成“下一个可以是哪些词元”：每一步，引擎（llguidance）屏蔽所有不可能通向合法文本的词元，"
             "模型在剩下的词元里排序。格式因此得到保证；内容仍然是模型的，只是被推到了它不那么喜欢的词元上。",
    "kind": "约束", "preset": "预设", "text": "约束文本",
    "prompt_kept": "保留了你写的提示词。这个约束的示例提示词是：“{example}”",
    "trace_hover": "第 {step} 步：<b>{token}</b><br>允许 {allowed:,} 个<br>被移除的 p {removed:.3f}",
    "text_info": "正则：Rust 语法 · JSON Schema · 选项：每行一个 · Lark：start: ... · GBNF：root ::= ...",
    "k_preset": "预设", "k_regex": "正则", "k_json_schema": "JSON Schema", "k_choices": "选项",
    "k_lark": "Lark", "k_gbnf": "GBNF",
    "prompt": "提示词", "chat": "提示词格式", "chat_choice": "对话模板", "raw_choice": "原始文本",
    "temperature": "温度", "temperature_info": "0 = 贪心", "seed": "随机种子",
    "max_tokens": "词元预算", "max_tokens_info": "在预算内没写完的受约束文本会被报告",
    "sec_step": "### 单步查看", "step": "单步", "step_n": "走 N 步", "n_steps": "N", "reset": "重置",
    "sec_compare": "### 受约束 vs 自由生成",
    "cmp_intro": "同样的提示词和设置，分别带语法和不带语法；所有输出用同一个校验器检查。*可挽救*：至少能从中切出一段"
                 "合法内容（代码块、第一个 JSON 值、第一行的开头）。",
    "cmp_n": "每边的样本数", "cmp_tokens": "最多新词元数", "cmp_run": "两边都运行", "cmp_stop": "■ 停止",
    "cmp_progress": "正在采样{side}：第 {step} 步，最多 {total} 步（{sec:.0f} 秒）…",
    "cmp_side_free": "不带语法的一边（1/2）", "cmp_side_constrained": "带语法的一边（2/2）",
    "cmp_stopped": "已停止：下面的样本停在按下停止的地方；标为“被停止截断”的样本没有写完，在这些比率里算作无效，要比较两边请完整跑一次。",
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
    "status_step": "第 {step} 步 · 选择 {token}（模型排名 {rank}，掩码之前的原始 p = {p:.3f}）· 允许 {allowed:,} 个词元 · 语法：{state}",
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
    "cut": "被预算截断", "stopped": "被停止截断", "r_not_json": "不是 JSON", "r_schema": "是 JSON，但不符合 schema", "r_no_match": "不属于该语言",
    "n_tokens": "{n} 个词元",
    "cmp_summary": "**格式失败率** — 自由生成：**{ff:.0%}**（无法挽救：{fs:.0%}）· 受约束：**{cf:.0%}**\n\n"
                   "耗时 — 语法编译 {compile:.1f} 毫秒 · 语法开销每词元 {gms:.3f} 毫秒 · 自由生成 {ft:.1f} 秒 · "
                   "受约束生成 {ct:.1f} 秒",
    "cmp_unfinished": "{k} 个受约束样本在语法满足前用完了词元：请提高“最多新词元数”。",
    "heal_without": "不修复（完整提示词之后）", "heal_with": "修复（删掉最后一个词元）",
    "heal_summary": "被删掉的提示词文本：`{removed}` · 与它一致的词元有 {allowed:,} 个，占模型概率的 {mass:.1%} · "
                    "模型原样重写被删词元的概率：{again:.1%}",
    "heal_nothing": "无需修复：提示词以特殊词元结尾。",
}

register("grammar", EN, ZH)
tr = Namespace("grammar")


def kind_choices(lang: str) -> list[tuple[str, str]]:
    return [(tr(lang, f"k_{k}"), k) for k in KINDS]


def chat_choices(lang: str) -> list[tuple[str, str]]:
    return [(tr(lang, "chat_choice"), "chat"), (tr(lang, "raw_choice"), "raw")]
