"""The Beam tab's own strings (English, Simplified Chinese), registered as ``beam.<key>``.

Read them with ``tr(lang, key)``; static labels go through ``ctx.labels`` under the full key
(``"beam.layout"``) so the page's language switch relabels them. The tab's older strings
(``beam_*``) live in the shared table."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    "layout": "Tree layout", "by_hypothesis": "by hypothesis", "by_slot": "by beam slot",
    "early_false": "False (heuristic: stop when better is unlikely)", "early_true": "True (stop at k finished)",
    "early_never": "never (stop only when better is impossible)",
    "layout_info": "by hypothesis: a path keeps its row and edges never cross (pruned candidates hidden); "
                   "by beam slot: y = rank at that step. Hover a node to light up its path from the prompt.",
    "rows_axis": "hypothesis", "ancestry": "path of the node under the cursor",
    "eos": "EOS", "prompt": "prompt",
    "title_hypothesis": "Beam tree, by hypothesis (pruned candidates hidden)",
    "hover_node": "step {step} · from beam {parent}<br>log p of this step {lp:.3f} (the logits' log-softmax, then the beam's stages)<br>cumulative {score:.3f}",
    "hover_norm": "length-normalised {norm:.3f} (α = {alpha:g})",
}

ZH: dict[str, str] = {
    "layout": "树的布局", "by_hypothesis": "按假设", "by_slot": "按束位置",
    "early_false": "启发式：不太可能更好时停（early_stopping=False）",
    "early_true": "凑满 k 条完成就停（early_stopping=True）",
    "early_never": "确定不可能更好时才停（early_stopping=\"never\"）",
    "layout_info": "按假设：一条路径保持在同一行，连线不交叉（隐藏被剪枝的候选）；按束位置：纵轴为该步的排名。"
                   "把鼠标移到节点上，会高亮它从提示词开始的路径。",
    "rows_axis": "假设", "ancestry": "光标所指节点的路径",
    "eos": "结束", "prompt": "提示词",
    "title_hypothesis": "束搜索树（按假设，隐藏被剪枝的候选）",
    "hover_node": "第 {step} 步 · 来自第 {parent} 束<br>这一步的 log p {lp:.3f}（logits 的 log-softmax，再经过束搜索的各阶段）<br>累计 {score:.3f}",
    "hover_norm": "按长度归一化 {norm:.3f}（α = {alpha:g}）",
}

register("beam", EN, ZH)
tr = Namespace("beam")
