"""English and Simplified Chinese strings for the app.

``gr.I18n`` only translates static front-end text, and it follows the browser's
locale rather than a switch on the page. So every label, plot title, table header and
message goes through ``t(lang, key)`` and the page re-renders labels with
``gr.update`` when the user flips the language radio (see ``Labels`` in ``state.py``).
A key missing from Chinese falls back to English, so a new control never shows a raw key.
"""

from __future__ import annotations

from decoding_lab.ui.common import i18n_errors, i18n_params

LANGS: dict[str, str] = {"en": "English", "zh": "简体中文"}

EN: dict[str, str] = {
    "title": "# Decoding Lab",
    "subtitle": "How a language model turns a next-token distribution into text — step by step, on a live model.",
    "language": "Language",
    "tab_explorer": "Explorer", "tab_compare": "Compare", "tab_beam": "Beam search", "tab_lessons": "Lessons",
    "tab_determinism": "Temperature 0", "tab_grammar": "Grammar", "tab_multisample": "Many samples", "tab_missing": "The {tab} tab is not available in this build.",
    # model and prompt
    "model": "Model", "hub_id": "…or a Hugging Face Hub id", "hub_id_info": "e.g. Qwen/Qwen2.5-0.5B-Instruct (overrides the list)",
    "prompt": "Prompt", "chat": "Prompt format", "chat_choice": "chat template", "raw_choice": "raw text",
    "model_box": "Model and prompt",
    # stages
    "stages_box": "Decoding stages",
    "llama_box": "More samplers (llama.cpp)",
    "order_preset": "Stage order", "order_preset_info": "the order real engines apply the stages in",
    "custom_order": "Custom order (comma-separated)", "custom_order_info": "editing this switches the order to custom",
    "top_n": "Tokens shown (top-N)",
    # actions
    "step": "Step", "step_n": "Step ×N", "n_steps": "N", "play": "▶ Play", "stop": "■ Stop", "undo": "↶ Undo",
    "reset": "Reset", "candidates": "Force another token at this step (starts a branch)", "force": "Force token",
    "branches": "Saved branches", "restore": "Restore branch", "no_branches": "(none yet)",
    "export_box": "Export and share", "export": "Export run", "export_files": "Downloads",
    "share": "Share link (query string, also written to the address bar)",
    "copy_link": "Copy link",
    # views
    "dist_title": "Step {step}: next-token distribution (top {n})",
    "raw_p": "p raw (T = 1)", "final_p": "p final (sampled from)", "token_axis": "token (rank)", "prob_axis": "probability",
    "chosen": "chosen", "cut_by": "cut by {stage}",
    "funnel_title": "Stage funnel at step {step}", "kept_axis": "tokens kept (log)", "removed_axis": "mass removed",
    "model_row": "model", "selector_row": "selector",
    "entropy_title": "Entropy H(T) of the logits entering temperature", "temperature_axis": "temperature T",
    "entropy_axis": "H (nats)", "current_T": "current T = {T:g}", "greedy_note": "T = 0: greedy",
    "generated": "Generated text", "generated_hint": "colour = probability of the chosen token; hover for rank and p",
    "history": "Step history", "numbers": "This step in numbers", "penalties_box": "Penalties and n-gram blocking",
    "generated_md": "**Generated text**", "numbers_md": "**This step in numbers**",
    "col_step": "step", "col_token": "token", "col_id": "id", "col_rank": "rank", "col_p_raw": "p raw",
    "col_p_final": "p final", "col_H": "H", "col_H_T": "H(T)", "col_kept": "kept", "col_forced": "forced",
    "col_ms": "ms",
    "n_H": "Entropy H (T = 1)", "n_H_T": "Entropy at current T", "n_H_final": "Entropy of final distribution",
    "n_dHdT": "dH/dT at current T", "n_margin": "Top-1 − top-2 logit margin", "n_tail": "Mass outside the top {n}",
    "n_below": "Mass in tokens with p < {th} ({count} tokens)", "n_kept": "Tokens the selector could pick",
    "n_quantity": "quantity", "n_value": "value", "n_chosen": "Chosen", "n_time_label": "Time", "n_time": "forward {fwd:.0f} ms, chain {chain:.1f} ms",
    "status_ready": "Model **{model}** ready · prompt {n} tokens · prefill {ms:.0f} ms",
    "status_step": "Step {step} · chose {token} (rank {rank}, p = {p:.3f}) · {ms:.0f} ms",
    "status_forced": "Step {step} · you forced {token} (rank {rank}, model's p = {p_raw:.3f}, not sampled) · {ms:.0f} ms",
    "status_finished": "Reached an end-of-sequence token. Undo, force another token or Reset.",
    "session_expired": "Your earlier steps expired after about {minutes} idle minutes; this is a new run from step 0.",
    "stale_prompt": "The model or prompt changed: press Reset to start over with them (steps continue the old prompt).",
    "settings_next": "Settings apply from the next step.",
    "loading": "Loading {model} (first time can take a minute)…",
    "busy": "This session is busy with another action; wait or press Stop.",
    "no_session": "Nothing to show yet: press Step or Reset first.",
    "busy_title": "Busy", "error": "Error", "warning": "Note", "info": "Info", "bad_input": "Invalid input: {msg}", "model_error": "Model error: {msg}",
    "custom": "custom",
    # compare
    "cmp_intro": "Run the same model and prompt with 2–4 decoding settings side by side. Greedy and sampling "
                 "columns run as one batch, as a serving engine would run them (one forward pass a step for all); "
                 "each beam column is a batch of its own.",
    "cmp_columns": "Columns", "cmp_strategy": "Strategy", "greedy": "greedy", "beam": "beam search",
    "sample": "sampling", "num_beams": "Beams", "length_penalty": "Length penalty α", "max_new_tokens": "Max new tokens",
    "cmp_run": "Run side by side", "cmp_more": "More settings", "cmp_send": "Send these settings to the Explorer", "cmp_output": "Output",
    "cmp_table": "Comparison", "col_setting": "setting", "col_len": "length", "col_mean_lp": "mean log p (after its stages)",
    "col_rep4": "4-gram repetition", "col_distinct": "distinct-{n}", "cmp_entropy": "Entropy per step (raw, before any stage)",
    "cmp_step_axis": "step", "cmp_waiting": "waiting…", "cmp_sent": "Settings of column {i} sent to the Explorer.",
    "cmp_missing": "The strategies module is not available yet.",
    # beam
    "beam_intro": "Watch beam search keep, prune and finish hypotheses; see how the length penalty α picks the winner.",
    "beam_run": "Run beam search", "beam_tree": "Beam tree", "beam_step_axis": "step", "beam_rank_axis": "beam slot",
    "kept": "kept", "live": "live beam", "pruned": "pruned", "finished": "finished", "rejected": "rejected", "beam_alphas": "α values to compare",
    "beam_ranking": "Finished hypotheses ranked under each α", "col_hyp": "hypothesis", "col_len_tok": "tokens",
    "col_sum_lp": "sum log p", "col_alpha": "score / rank at α = {a:g}", "beam_winner": "winner",
    "early_stopping": "Early stopping", "col_distinct1": "distinct-1", "col_distinct2": "distinct-2",
    "beam_note": "Ranking: score = (sum of log p) / length^α over every hypothesis that ended inside the top beams "
                 "(★ = winner). α > 0 favours longer answers, α < 0 shorter ones. A different α would also have "
                 "changed which beams the search kept, so this re-ranks only the hypotheses this run found.",
    "beam_status": "{steps} steps · {hyps} finished hypotheses · stopped by: {reason} · best: {text}",
    "reason_max_new_tokens": "max_new_tokens", "reason_early_stopping": "early stopping",
    "reason_no_improvement": "no live beam can beat the finished ones", "reason_stopped": "Stop",
}

ZH: dict[str, str] = {
    "title": "# 解码实验室", "subtitle": "一步一步看语言模型如何把下一个词元的概率分布变成文字（实时模型）。",
    "language": "语言", "tab_explorer": "探索", "tab_compare": "对比", "tab_beam": "束搜索",
    "tab_lessons": "课程", "tab_determinism": "温度 0", "tab_grammar": "语法约束", "tab_multisample": "多次采样", "tab_missing": "此版本没有“{tab}”页。",
    "model": "模型", "hub_id": "…或 Hugging Face Hub 模型 id", "hub_id_info": "例如 Qwen/Qwen2.5-0.5B-Instruct（优先于列表）",
    "prompt": "提示词", "chat": "提示词格式", "chat_choice": "对话模板", "raw_choice": "原始文本", "model_box": "模型与提示词",
    "stages_box": "解码阶段", "llama_box": "更多采样器（llama.cpp）",
    "order_preset": "阶段顺序", "order_preset_info": "真实推理引擎应用各阶段的顺序",
    "custom_order": "自定义顺序（逗号分隔）", "custom_order_info": "编辑后顺序切换为自定义",
    "top_n": "显示的词元数（前 N 个）",
    "step": "单步", "step_n": "走 N 步", "n_steps": "N", "play": "▶ 播放", "stop": "■ 停止", "undo": "↶ 撤销",
    "reset": "重置", "candidates": "在这一步强制选择另一个词元（开启分支）", "force": "强制选择",
    "branches": "已保存的分支", "restore": "恢复分支", "no_branches": "（暂无）",
    "export_box": "导出与分享", "export": "导出本次运行", "export_files": "下载",
    "share": "分享链接（查询字符串，同时写入地址栏）",
    "copy_link": "复制链接",
    "dist_title": "第 {step} 步：下一个词元的分布（前 {n} 个）",
    "raw_p": "原始概率（T = 1）", "final_p": "最终概率（从中采样）", "token_axis": "词元（排名）", "prob_axis": "概率",
    "chosen": "被选中", "cut_by": "被 {stage} 截断",
    "funnel_title": "第 {step} 步的阶段漏斗", "kept_axis": "保留的词元数（对数）", "removed_axis": "被移除的概率质量",
    "model_row": "模型", "selector_row": "选择器",
    "entropy_title": "进入温度阶段的 logits 的熵 H(T)", "temperature_axis": "温度 T", "entropy_axis": "H（奈特）",
    "current_T": "当前 T = {T:g}", "greedy_note": "T = 0：贪心",
    "generated": "生成的文本", "generated_hint": "颜色 = 被选词元的概率；悬停查看排名和概率",
    "history": "步骤历史", "numbers": "本步数据", "penalties_box": "惩罚与 n-gram 屏蔽",
    "generated_md": "**生成的文本**", "numbers_md": "**本步数据**",
    "col_step": "步", "col_token": "词元", "col_id": "id", "col_rank": "排名", "col_p_raw": "原始 p",
    "col_p_final": "最终 p", "col_H": "H", "col_H_T": "H(T)", "col_kept": "保留", "col_forced": "强制", "col_ms": "毫秒",
    "n_H": "熵 H（T = 1）", "n_H_T": "当前温度下的熵", "n_H_final": "最终分布的熵", "n_dHdT": "当前温度下的 dH/dT",
    "n_margin": "第一与第二 logit 之差", "n_tail": "前 {n} 个之外的概率质量",
    "n_below": "p < {th} 的词元的概率质量（{count} 个）", "n_kept": "选择器可选的词元数", "n_chosen": "被选中", "n_quantity": "量", "n_value": "值",
    "n_time_label": "耗时", "n_time": "前向 {fwd:.0f} 毫秒，阶段链 {chain:.1f} 毫秒",
    "status_ready": "模型 **{model}** 已就绪 · 提示词 {n} 个词元 · 预填充 {ms:.0f} 毫秒",
    "status_step": "第 {step} 步 · 选择 {token}（排名 {rank}，p = {p:.3f}）· {ms:.0f} 毫秒",
    "status_forced": "第 {step} 步 · 你强制选了 {token}（排名 {rank}，模型给的 p = {p_raw:.3f}，不是采样得到）· {ms:.0f} 毫秒",
    "status_finished": "已生成结束符。可撤销、强制其他词元或重置。",
    "session_expired": "之前的步骤在空闲约 {minutes} 分钟后已过期；这是从第 0 步开始的新一轮。",
    "stale_prompt": "模型或提示词已更改：请点击“重置”以使用新设置（继续单步仍沿用旧提示词）。",
    "settings_next": "设置从下一步开始生效。", "loading": "正在加载 {model}（首次可能需要一分钟）…",
    "busy": "此会话正在执行另一个操作；请稍候或点击“停止”。", "no_session": "暂无内容：请先点击“单步”或“重置”。",
    "busy_title": "忙碌中", "error": "错误", "warning": "注意", "info": "信息", "bad_input": "输入无效：{msg}", "model_error": "模型错误：{msg}", "custom": "自定义",
    "cmp_intro": "用同一模型和提示词，并排运行 2–4 组解码设置。贪心列和采样列像推理服务那样合成一个批次运行"
                 "（每一步所有列共用一次前向计算）；每个束搜索列自成一个批次。", "cmp_columns": "列数", "cmp_strategy": "策略",
    "greedy": "贪心", "beam": "束搜索", "sample": "采样", "num_beams": "束宽", "length_penalty": "长度惩罚 α",
    "max_new_tokens": "最多新词元数", "cmp_run": "并排运行", "cmp_more": "更多设置", "cmp_send": "把这组设置发送到“探索”",
    "cmp_output": "输出", "cmp_table": "对比", "col_setting": "设置", "col_len": "长度", "col_mean_lp": "平均 log p（经过其各阶段）",
    "col_rep4": "4-gram 重复率", "col_distinct": "distinct-{n}", "cmp_entropy": "每步的熵（原始，任何阶段之前）", "cmp_step_axis": "步",
    "cmp_waiting": "等待中…", "cmp_sent": "第 {i} 列的设置已发送到“探索”。", "cmp_missing": "策略模块尚不可用。",
    "beam_intro": "观察束搜索如何保留、剪枝和完成假设；看长度惩罚 α 如何决定最终结果。",
    "beam_run": "运行束搜索", "beam_tree": "束搜索树", "beam_step_axis": "步", "beam_rank_axis": "束位置",
    "kept": "保留", "live": "存活的束", "pruned": "剪枝", "finished": "完成", "rejected": "被拒绝", "beam_alphas": "要比较的 α 值",
    "beam_ranking": "各 α 下已完成假设的排名", "col_hyp": "假设", "col_len_tok": "词元数", "col_sum_lp": "log p 之和",
    "col_alpha": "α = {a:g} 时的得分 / 排名", "beam_winner": "胜出",
    "early_stopping": "提前停止", "col_distinct1": "distinct-1", "col_distinct2": "distinct-2",
    "beam_note": "排名：得分 =（log p 之和）/ 长度^α，范围是在前几束内结束的所有假设（★ = 胜出）。α > 0 偏向更长的回答，"
                 "α < 0 偏向更短的回答。不同的 α 也会改变搜索保留哪些束，所以这里只对本次找到的假设重新排名。",
    "beam_status": "{steps} 步 · {hyps} 个完成的假设 · 停止原因：{reason} · 最佳：{text}",
    "reason_max_new_tokens": "达到最多新词元数", "reason_early_stopping": "提前停止",
    "reason_no_improvement": "存活的束已无法超过完成的假设", "reason_stopped": "手动停止",
}

EN.update(i18n_params.EN)
ZH.update(i18n_params.ZH)
EN.update(i18n_errors.EN)
ZH.update(i18n_errors.ZH)
STRINGS: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}


def norm_lang(lang: str | None) -> str:
    """Accept 'en', 'zh', 'zh-CN', '简体中文', 'English'; default English."""
    text = (lang or "").strip().lower()
    if text.startswith("zh") or text == LANGS["zh"]:
        return "zh"
    return "en"


def t(lang: str | None, key: str, **kw: object) -> str:
    """The string ``key`` in ``lang``; a key missing from Chinese falls back to English, and a key
    missing from both comes back as itself (a test checks that every key in use exists)."""
    table = STRINGS[norm_lang(lang)]
    text = table.get(key, EN.get(key, key))
    return text.format(**kw) if kw else text


def register(namespace: str, en: dict[str, str], zh: dict[str, str]) -> None:
    """Add a tab's own strings as ``<namespace>.<key>`` (each tab keeps its strings beside it)."""
    EN.update({f"{namespace}.{k}": v for k, v in en.items()})
    ZH.update({f"{namespace}.{k}": v for k, v in zh.items()})


class Namespace:
    """``tr = Namespace("grammar")``; ``tr(lang, "kind")`` reads ``grammar.kind``, else the shared
    ``kind`` (so a tab can use the common words without copying them)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, lang: str | None, key: str, **kw: object) -> str:
        full = f"{self.name}.{key}"
        return t(lang, full if full in EN else key, **kw)
