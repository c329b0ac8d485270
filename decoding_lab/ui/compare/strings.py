"""The Compare tab's own strings (English, Simplified Chinese), registered as ``compare.<key>``.

Read them with ``tr(lang, key)``; static labels go through ``ctx.labels`` under the full key
(``"compare.not_sampling"``) so the page's language switch relabels them. The tab's older
strings (``cmp_*``) live in the shared table."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    # shown under the strategy of a greedy or beam column, in place of the hidden controls
    "not_sampling": "*Nothing is drawn here, so temperature, truncation (top-k, top-p, min-p, …) and the seed "
                    "are left out, as `generate(do_sample=False)` does; penalties and n-gram blocking still apply.*",
    # "send to the Explorer": one message per strategy, shown once the Explorer tab is open
    "sent": "Column {i} sent to the Explorer: model {model}, the prompt and its settings. Press Step to run it.",
    "sent_greedy": "Column {i} sent to the Explorer: model {model}, the prompt and its settings, with T = 0 "
                   "(greedy). Press Step to run it.",
    "sent_beam": "Column {i} sent to the Explorer: model {model}, the prompt and its penalties, with T = 0. "
                 "The Explorer follows one path, so it runs greedy: beam search stays on this tab.",
    # under a sampled column of a served model (strategies.engine_samples): who drew it, and what its numbers are
    "engine_drawn": "Drawn by the server's own sampler ({endpoint}, {api}): the whole sample in one request, "
                    "with these settings sent to it. Its log-probabilities are {logprobs}. No entropy line: "
                    "a whole sample reports only the tokens picked.",
    "engine_waiting": "Asking the server ({endpoint}) for the whole sample…",
    "lp_after_chain": "after the engine's chain",
    "lp_as_reported": "as the server reports them (vLLM: the raw model's)",
}

ZH: dict[str, str] = {
    "not_sampling": "*这里不抽样，所以不显示温度、截断（top-k、top-p、min-p 等）和随机种子，与 "
                    "`generate(do_sample=False)` 一致；惩罚项和 n-gram 屏蔽仍然生效。*",
    "sent": "第 {i} 列已发送到“探索”：模型 {model}、提示词和这组设置。按“单步”即可运行。",
    "sent_greedy": "第 {i} 列已发送到“探索”：模型 {model}、提示词和这组设置，温度 T = 0（贪心）。按“单步”即可运行。",
    "sent_beam": "第 {i} 列已发送到“探索”：模型 {model}、提示词和惩罚设置，温度 T = 0。“探索”只走一条路径，"
                 "所以按贪心运行；束搜索留在本页。",
    "engine_drawn": "由服务器自己的采样器抽取（{endpoint}，{api}）：整段样本一次请求完成，上面的设置随请求发送。"
                    "对数概率为{logprobs}。没有熵曲线：整段请求只报告被选中的词元。",
    "engine_waiting": "正在向服务器（{endpoint}）请求整段样本…",
    "lp_after_chain": "经过引擎采样链之后的值",
    "lp_as_reported": "服务器报告的值（vLLM 默认为原始模型的值）",
}

register("compare", EN, ZH)
tr = Namespace("compare")
