"""The Lessons tab's strings (namespace ``lessons``), read with ``tr = Namespace("lessons")``. The tab
names (``explorer`` … ``determinism``) say in the "Loaded" note which tab a lesson set up."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    "pick": "Lessons", "teacher": "Teacher mode: large type, one idea per screen (← → or PageUp / PageDown to page)",
    "prev": "◀ Previous", "next": "Next ▶", "load": "Open this lesson's setup in its tab", "look": "What to look at",
    "look_wait_here": "Pointers appear here once you have made your prediction and run the experiment.",
    "look_wait": "Screen {s}'s pointers appear once you have run its experiment.",
    "checks": "Check your understanding", "check": "Check", "check_n": "Question {i} of {n}",
    "transfer": "(a new situation: the text does not say this in so many words)",
    "right": "✔ Right. ", "wrong": "✘ Not this one. ", "choose": "Pick an answer first.",
    "progress": "Checks passed: {done} of {total}", "screen": "Screen {i} of {n}",
    "loaded": "Loaded: **{title}**. The {tab} tab now holds its model, prompt and settings.",
    "explorer": "Explorer", "compare": "Compare", "beam": "Beam search", "grammar": "Grammar",
    "multisample": "Many samples", "determinism": "Temperature 0",
    "unavailable": "Lessons unavailable: {error}", "no_lesson": "no lesson numbered {number!r}",
    "no_screen": "lesson {number} has no screen {screen}; showing its last, screen {last}",
    # predict, then see
    "predict": "**Predict first.** {question}", "your_guess": "Your prediction", "run": "Run it on the live model",
    "run_file": "Read the shipped results", "pick_right_file": "✔ Your prediction matches the shipped result.",
    "pick_wrong_file": "✘ The shipped result disagrees: {live}.", "result_head_file": "**Your prediction:** {guess} · **shipped result:** {live}",
    "guess_first": "Make your prediction first (pick or type it), then run.",
    "result_head": "**Your prediction:** {guess} · **live result:** {live}",
    "pick_right": "✔ Your prediction matches the live run.", "pick_wrong": "✘ The live run disagrees: {live}.",
    "number_diff": "You guessed {guess}; the model gave {live}.",
    "number_diff_file": "You guessed {guess}; the shipped result is {live}.",
    "fallback": "(The live run failed, so these are the values measured when the lesson was tested: {error})",
    "took": "ran in {s:.1f} s on {model}",
    "plot_guess": "your prediction", "plot_raw": "p raw (T = 1)", "plot_final": "p after the stages",
    "plot_value": "live value", "plot_value_file": "shipped value", "plot_pick": "your pick",
    "axis_kept": "tokens kept", "axis_margin": "top-1 − top-2 logit", "axis_tail": "probability mass",
    "axis_entropy_T": "entropy (nats)", "axis_top2_ratio": "ratio of the two best", "axis_removed": "mass removed",
    "axis_p_raw": "probability", "axis_p_final": "probability", "axis_logprob": "log-probability",
    "axis_repetition": "share of 4-grams repeated", "axis_pass": "pass@k / accuracy", "axis_vote": "accuracy",
    "axis_mixed": "share of problems", "axis_per_softmax": "× one softmax", "axis_extract": "accuracy",
    "ratio_title": "log ratio to the leader vs 1/T: lines from T = 1, dots measured",
    "ratio_x": "1 / T", "ratio_y": "log ratio to the leader", "ratio_line": "{token}: line", "ratio_dots": "measured",
    "passk_pick": "your pick (pass@1)", "texts": "The texts the run wrote",
    "curve_rule": "where top-p 0.9 cut", "curve_minp": "where min-p 0.1 would cut",
    "curve_topk": "dashed: top-k {k}", "curve_x": "rank (largest first)", "curve_y": "probability",
    "glossary": "Glossary (English ↔ 中文)",
}

ZH: dict[str, str] = {
    "pick": "课程", "teacher": "教师模式：大字号，每屏一个要点（← → 或 PageUp / PageDown 翻页）",
    "prev": "◀ 上一屏", "next": "下一屏 ▶", "load": "在对应页面打开本课的设置", "look": "看哪里",
    "look_wait_here": "做出预测并运行实验之后，这里会列出该看哪里。",
    "look_wait": "第 {s} 屏该看哪里，要等运行了那一屏的实验才列出。",
    "checks": "检验一下", "check": "检查", "check_n": "第 {i} / {n} 题",
    "transfer": "（新情境：正文没有直接写出答案）",
    "right": "✔ 正确。", "wrong": "✘ 不是这个。", "choose": "请先选一个答案。",
    "progress": "已通过的检验：{done} / {total}", "screen": "第 {i} / {n} 屏",
    "loaded": "已载入：**{title}**。{tab}页已设好它的模型、提示词和参数。",
    "explorer": "探索", "compare": "对比", "beam": "束搜索", "grammar": "语法约束", "multisample": "多次采样",
    "determinism": "温度 0",
    "unavailable": "课程不可用：{error}", "no_lesson": "没有编号为 {number!r} 的课程",
    "no_screen": "第 {number} 课没有第 {screen} 屏；显示的是它的最后一屏（第 {last} 屏）",
    "predict": "**先预测。** {question}", "your_guess": "你的预测", "run": "在实时模型上运行",
    "run_file": "读取随附的结果", "pick_right_file": "✔ 你的预测与随附结果一致。", "pick_wrong_file": "✘ 随附结果不同：{live}。", "result_head_file": "**你的预测：** {guess} · **随附结果：** {live}",
    "guess_first": "请先做出预测（选择或填写），再运行。",
    "result_head": "**你的预测：** {guess} · **实际结果：** {live}",
    "pick_right": "✔ 你的预测与实际运行一致。", "pick_wrong": "✘ 实际运行的结果不同：{live}。",
    "number_diff": "你猜的是 {guess}；模型给出的是 {live}。",
    "number_diff_file": "你猜的是 {guess}；随附的结果是 {live}。",
    "fallback": "（实时运行失败，以下是测试本课时测得的数值：{error}）",
    "took": "在 {model} 上运行，用时 {s:.1f} 秒",
    "plot_guess": "你的预测", "plot_raw": "原始 p（T = 1）", "plot_final": "各阶段之后的 p",
    "plot_value": "实际值", "plot_value_file": "随附值", "plot_pick": "你选的",
    "axis_kept": "保留的词元数", "axis_margin": "第一与第二 logit 之差", "axis_tail": "概率质量",
    "axis_entropy_T": "熵（奈特）", "axis_top2_ratio": "前两名之比", "axis_removed": "去掉的概率",
    "axis_p_raw": "概率", "axis_p_final": "概率", "axis_logprob": "对数概率",
    "axis_repetition": "重复的 4-gram 比例", "axis_pass": "pass@k / 准确率", "axis_vote": "准确率",
    "axis_mixed": "题目比例", "axis_per_softmax": "× 一次 softmax", "axis_extract": "准确率",
    "ratio_title": "与第一名之比的对数随 1/T：直线由 T = 1 算出，圆点为实测",
    "ratio_x": "1 / T", "ratio_y": "与第一名之比的对数", "ratio_line": "{token}：直线", "ratio_dots": "实测",
    "passk_pick": "你选的（pass@1）", "texts": "这次运行写出的文字",
    "curve_rule": "top-p 0.9 截断处", "curve_minp": "min-p 0.1 会截断处",
    "curve_topk": "虚线：top-k {k}", "curve_x": "排名（从大到小）", "curve_y": "概率",
    "glossary": "术语表（English ↔ 中文）",
}

register("lessons", EN, ZH)
tr = Namespace("lessons")
#: The keys both languages define (a picture asks before it labels an axis with one).
STRING_KEYS = frozenset(EN) & frozenset(ZH)
