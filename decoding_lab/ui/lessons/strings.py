"""The Lessons tab's strings (namespace ``lessons``), read with ``tr = Namespace("lessons")``. The tab
names (``explorer`` … ``determinism``) say in the "Loaded" note which tab a lesson set up."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    "pick": "Lessons", "teacher": "Teacher mode (large type, one idea per screen)", "prev": "◀ Previous",
    "next": "Next ▶", "load": "Load this experiment", "look": "What to look at", "quiz": "Question",
    "check": "Check my answer", "right": "✅ Right. ", "wrong": "❌ Not quite. ", "choose": "Pick an answer first.",
    "progress": "Progress: {done} of {total} lessons answered", "screen": "Screen {i} of {n}",
    "loaded": "Loaded: **{title}**. The {tab} tab now holds its model, prompt and settings.",
    "explorer": "Explorer", "compare": "Compare", "beam": "Beam search", "grammar": "Grammar",
    "multisample": "Many samples", "determinism": "Temperature 0",
    "unavailable": "Lessons unavailable: {error}", "no_lesson": "no lesson numbered {number!r}",
}

ZH: dict[str, str] = {
    "pick": "课程", "teacher": "教师模式（大字号，每屏一个要点）", "prev": "◀ 上一屏", "next": "下一屏 ▶",
    "load": "载入本课实验", "look": "看哪里", "quiz": "问题", "check": "检查答案", "right": "✅ 正确。",
    "wrong": "❌ 不太对。", "choose": "请先选一个答案。", "progress": "进度：已完成 {done} / {total} 课",
    "screen": "第 {i} / {n} 屏", "loaded": "已载入：**{title}**。{tab}页已设好它的模型、提示和参数。",
    "explorer": "探索", "compare": "对比", "beam": "束搜索", "grammar": "语法约束", "multisample": "多次采样",
    "determinism": "温度 0",
    "unavailable": "课程不可用：{error}", "no_lesson": "没有编号为 {number!r} 的课程",
}

register("lessons", EN, ZH)
tr = Namespace("lessons")
