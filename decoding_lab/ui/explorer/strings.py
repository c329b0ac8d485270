"""The Explorer's own strings (English, Simplified Chinese), registered as ``explorer.<key>``.

Read them with ``tr(lang, key)``; the shared words (``dist_title``, ``raw_p`` …) stay in
``common.i18n``. Stage names (``top-p``, ``min-p`` …) are names and stay as they are."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    # the distribution chart: one colour per fate
    "final_sampled": "p final (sampled from)",
    "final_greedy": "p final (greedy takes the highest)",
    "chosen_sampled": "chosen (drawn at random from p final)",
    "chosen_greedy": "chosen = argmax (greedy)",
    "chosen_forced": "chosen (forced by you)",
    "cut_legend": "✂ cut by {stage} (p when cut)",
    "hover_rank": "rank {rank} · logit {logit:.2f}",
    "hover_p": "p raw {raw} · p final {final}",
    "hover_cut": "✂ cut by {stage}: it had p = {p} when {stage} removed it",
    "hover_kept": "kept: the selector could pick it",
    "log_view": "Log scale (shows tiny and cut probabilities)",
    "log_axis": "probability (log scale)",
    "whitespace_note": "␣ = space · ↵ = newline",
    "tok_label": "step {step} · id {id} · rank {rank} · p raw {raw:.4f} · p final {final:.4f}",
    "tok_forced": " · forced",
    "cand_p": "p raw {raw:.3f} · final {final:.3f}",
    "chosen_row": "{token} (id {id}, rank {rank}, p raw {raw:.4f}, p final {final:.4f})",
    "r_reported": "Reported by the server",
    "settings_changed": "⚠ The settings changed during this run (step {step} ran with others): its link opens "
                        "these settings at step 0, since a replay would run every step with them and write "
                        "another text. The JSON export keeps each step's stages and their values.",
    "src_label": "Where these numbers come from",
    "src_local": "p raw, H and the margin: the model's logits before any stage, computed in this process (like "
                 "transformers' output_logits; its output_scores come after its processors)",
    "src_raw_server": "p raw, H and the margin: the raw logits of all {v:,} tokens, as the server reported them (vLLM "
                      "--logprobs-mode raw_logits)",
    "src_topn_server": "p raw: the server's top-{n} log-probabilities, before its sampler (vLLM's default raw_logprobs, "
                       "llama-server's n_probs), exact; the other {rest:,} tokens filled in evenly, so H is an upper "
                       "bound",
    "src_final": "p final and H final: after {stages}, our chain in this order",
    "src_final_none": "p final and H final: no stage changed the distribution (p final = p raw)",
    "hover_src_local": "raw = model logits, before any stage",
    "hover_src_raw_server": "raw = the server's raw logits",
    "hover_src_topn_server": "raw = the server's top-{n} log-probability (exact)",
    "r_reported_v": "top-{n} of {v:,} tokens: their probabilities are exact",
    "r_tail": "Mass the server did not report",
    "r_tail_v": "{tail:.4f}, spread evenly over the other {rest:,} tokens: H is an upper bound; top-k (k ≤ {n}), "
                "min-p and a top-p nucleus inside the top-{n} are exact",
    "r_engine": "The engine's own pick (these settings)",
    "r_engine_none": "not reported",
    "r_text": "the context was sent as text and tokenised again by the server",
    "r_inexact": "Approximate on a server",
    "r_inexact_v": "{stages}: a top-N report cannot redo these exactly (they need the raw logits, the whole "
                   "distribution or the engine's own random draws), so what they cut here may differ from what the "
                   "engine cuts",
    "r_kept": "What the engine's sampler kept",
    "engine_legend": "kept by the server's own sampler (its p)",
    "engine_hover": "the server's sampler kept it: p = {p} after its chain",
    "r_kept_same": "{n} tokens, the same {n} as our chain kept; probabilities within {dp}",
    "r_kept_same4": "{n} tokens, the same {n} as our chain kept, with the same probabilities to 4 decimals",
    "r_kept_greedy": "its top token only (T 0 keeps one), the token our chain picks",
    "r_kept_greedy_diff": "its top token {e}; our chain picks {o}",
    "r_kept_diff": "{n} tokens; our chain kept {m}. Only the engine kept: {a}. Only ours kept: {b}. "
                   "(The engine runs llama.cpp's order: pick the llama.cpp preset to compare like with like.)",
    "r_kept_partial": "at least the {n} it lists (it lists no more); our chain's {n} most likely kept tokens are {verdict}",
    "r_same": "the same", "r_different": "different", "r_none": "none",
    "branch_label": "{i}: from step {step}, +{n} tokens “{text}”",
    # the first minute
    "onboard_md": "**How to read this screen**  \n"
                  "1. **Step** asks the model for the probability of every possible next token, then decoding picks one.  \n"
                  "2. On the chart, light bars are what the model said; blue is what decoding kept, orange the pick, "
                  "and each hatched colour a token cut by a named stage (hover a bar for its numbers).  \n"
                  "3. Change a stage in the settings (temperature, top-k, top-p …) and step again to see what it cuts.  \n"
                  "**New here?** The **Lessons** tab explains all of this one idea at a time, starting with Lesson 1.",
    "onboard_show": "Show me a cut", "onboard_hide": "Got it, hide this",
    "onboard_lessons": "Start with the lessons →",
    "template_summary": "chat template around your prompt ({n} lines; click to show)",
    # no silent surprises
    "new_run": "New prompt or model: this is a new run from step 0",
    "charts_follow": "running: the charts follow about once a second",
    "cut_loaded": "Loaded the prompt “Tell me a story.” with T 1, top-k 10, top-p 0.7 and seed 1 (see the controls). "
                  "The hatched bars below are the cut; the Lessons tab explains why, one stage at a time",
    # a long shared link: the first steps replay by themselves, the rest on request
    "link_paused": "This link names {total:,} steps; the first {done:,} were replayed when it opened (a link never "
                   "starts a long run by itself). The button below replays the other {left:,}.",
    "replay_rest": "▶ Replay the other {n:,} steps of the link",
    # what only some stages know (also in the JSON export)
    "dyn_T": "Temperature used (dynamic)",
    "dyn_T_v": "{used:.3f}: chosen from this step's entropy, between {lo:g} (sure) and {hi:g} (unsure) around T {T:g}",
    "dyn_T_best": "0: the range reached 0 here, so only the best token was kept",
    "dyn_T_one": "none: a single token reached temperature, so there was nothing to scale",
    "xtc_row": "XTC at this step",
    "xtc_yes": "fired: removed {n} top choices, every token with p ≥ {th:g} but the least likely of them "
               "(mass {mass:.4f})",
    "xtc_no": "did not fire (it fires on {p:.0%} of the steps, and only when two or more tokens have p ≥ {th:g})",
    "H_T_one": "(only one token reaches temperature, after the cuts: H(T) is 0 for every T)",
    "st_dyn_T": "dynamic T = {used:.2f}", "st_xtc_yes": "XTC fired", "st_xtc_no": "XTC did not fire",
    "rebuilt": "While this tab was idle its model cache was set aside to make room for other visitors; this "
               "step rebuilt it ({n:,} tokens in {s:.2f} s). Nothing you saw changed.",
    # the step on screen under each engine order (orders.py)
    "orders_btn": "This step under each engine order",
    "orders_intro": "Step {step} redone under each preset order, with the same settings and the same random "
                    "draw; only the order of the stages changes (◀ = the order it ran with). Your run is unchanged.",
    "orders_col_order": "order", "orders_col_chain": "tokens left after each stage, in the engine's order",
    "orders_col_kept": "the selector could pick", "orders_col_pick": "picked (p final)",
    "orders_refused": "not possible: {why}", "orders_no_stage": "no stage changes anything",
    "orders_none": "Step first: this compares the orders on the step shown.",
    # alternatives in the text
    "gen_hint": "colour = probability of the chosen token; hover or tap a token for its alternatives",
    "pop_head": "Step {step}: the top alternatives",
    "pop_hint": "Click one to force it at this step (the rest is saved as a branch).",
    "pop_chosen": "★ chosen · final {p}", "pop_kept": "kept · final {p}", "pop_cut": "✂ cut by {stage}",
}

ZH: dict[str, str] = {
    "final_sampled": "最终概率（从中采样）",
    "final_greedy": "最终概率（贪心取最高者）",
    "chosen_sampled": "被选中（按最终概率随机抽取）",
    "chosen_greedy": "被选中 = 最大值（贪心）",
    "chosen_forced": "被选中（由你强制）",
    "cut_legend": "✂ 被 {stage} 截断（截断时的概率）",
    "hover_rank": "排名 {rank} · logit {logit:.2f}",
    "hover_p": "原始概率 {raw} · 最终概率 {final}",
    "hover_cut": "✂ 被 {stage} 截断：{stage} 移除它时，它的概率为 {p}",
    "hover_kept": "保留：选择器可以选它",
    "log_view": "对数刻度（显示极小和被截断的概率）",
    "log_axis": "概率（对数刻度）",
    "whitespace_note": "␣ = 空格 · ↵ = 换行",
    "tok_label": "第 {step} 步 · 编号 {id} · 排名 {rank} · 原始 p {raw:.4f} · 最终 p {final:.4f}",
    "tok_forced": " · 强制",
    "cand_p": "原始 p {raw:.3f} · 最终 p {final:.3f}",
    "chosen_row": "{token}（编号 {id}，排名 {rank}，原始 p {raw:.4f}，最终 p {final:.4f}）",
    "r_reported": "服务器报告的",
    "settings_changed": "⚠ 这次运行中途改过设置（第 {step} 步用的是别的设置）：它的链接只在第 0 步打开这些设置，"
                        "因为重放会让每一步都用这些设置，写出另一段文字。JSON 导出记录了每一步的阶段及其取值。",
    "src_label": "这些数的来源",
    "src_local": "原始 p、H 和前两名之差：模型在任何阶段之前的 logit，在本进程中计算（相当于 transformers 的 "
                 "output_logits；它的 output_scores 是经过其处理器之后的）",
    "src_raw_server": "原始 p、H 和前两名之差：服务器报告的全部 {v:,} 个词元的原始 logit（vLLM "
                      "--logprobs-mode raw_logits）",
    "src_topn_server": "原始 p：服务器在采样之前报告的前 {n} 名对数概率（vLLM 默认的 raw_logprobs、"
                       "llama-server 的 n_probs），是精确的；其余 {rest:,} 个词元按剩余质量平均填入，所以 H 是上界",
    "src_final": "最终 p 和最终 H：经过 {stages}，由我们的链按此顺序计算",
    "src_final_none": "最终 p 和最终 H：没有阶段改变分布（最终 p = 原始 p）",
    "hover_src_local": "原始 = 模型 logit，在任何阶段之前",
    "hover_src_raw_server": "原始 = 服务器报告的原始 logit",
    "hover_src_topn_server": "原始 = 服务器报告的前 {n} 名对数概率（精确）",
    "r_reported_v": "{v:,} 个词元中的前 {n} 个：它们的概率是精确的",
    "r_tail": "服务器没有报告的概率质量",
    "r_tail_v": "{tail:.4f}，平均分给其余 {rest:,} 个词元：H 是上界；top-k（k ≤ {n}）、min-p 以及落在前 {n} 个之内的 "
                "top-p 核是精确的",
    "r_engine": "引擎自己选的词元（按这些设置）",
    "r_engine_none": "未报告",
    "r_text": "上下文以文本发送，由服务器重新切分为词元",
    "r_inexact": "在服务器上只是近似",
    "r_inexact_v": "{stages}：前 N 个的报告无法精确重现它们（它们需要原始 logits、整个分布或引擎自己的随机抽取），"
                   "所以这里它们截掉的可能与引擎截掉的不同",
    "r_kept": "引擎的采样器保留了什么",
    "engine_legend": "服务器自己的采样器保留的（它的 p）",
    "engine_hover": "服务器的采样器保留了它：经过它的链后 p = {p}",
    "r_kept_same": "{n} 个词元，与我们的链保留的 {n} 个相同；概率相差不超过 {dp}",
    "r_kept_same4": "{n} 个词元，与我们的链保留的 {n} 个相同，概率精确到小数点后 4 位也相同",
    "r_kept_greedy": "只有它的第一名（T 0 只保留一个），也就是我们的链选的词元",
    "r_kept_greedy_diff": "它的第一名是 {e}；我们的链选的是 {o}",
    "r_kept_diff": "{n} 个词元；我们的链保留了 {m} 个。只有引擎保留的：{a}。只有我们保留的：{b}。"
                   "（引擎按 llama.cpp 的顺序运行：选 llama.cpp 预设才是同等比较。）",
    "r_kept_partial": "至少是它列出的 {n} 个（它最多列出这么多）；我们的链保留的概率最高的 {n} 个与之{verdict}",
    "r_same": "相同", "r_different": "不同", "r_none": "无",
    "branch_label": "{i}：从第 {step} 步起，+{n} 个词元 “{text}”",
    "onboard_md": "**如何阅读这个页面**  \n"
                  "1. **单步**：模型给出每个可能的下一个词元的概率，解码再从中选出一个。  \n"
                  "2. 图中浅色柱是模型给出的概率；蓝色是解码保留的，橙色是选中的，"
                  "每种带斜纹的颜色表示被某个阶段截断的词元（悬停在柱上查看数值）。  \n"
                  "3. 在设置中修改一个阶段（温度、top-k、top-p …），再走一步，看它截断了什么。  \n"
                  "**第一次来？**「课程」标签页从第 1 课开始，一次讲一个概念，把这些逐一讲清楚。",
    "onboard_show": "给我看一次截断", "onboard_hide": "知道了，隐藏",
    "onboard_lessons": "从课程开始 →",
    "template_summary": "包在你的提示词外的对话模板（{n} 行；点击展开）",
    "gen_hint": "颜色 = 被选词元的概率；悬停或点按词元查看其他候选",
    "new_run": "提示词或模型已更改：这是从第 0 步开始的新一轮",
    "charts_follow": "运行中：图表大约每秒更新一次",
    "cut_loaded": "已载入提示词 “Tell me a story.”，T 1、top-k 10、top-p 0.7、种子 1（见各项设置）。"
                  "下方带斜纹的柱就是被截断的词元；「课程」标签页会逐个阶段讲解原因",
    "link_paused": "这个链接共有 {total:,} 步；打开时只重放了前 {done:,} 步（链接不会自己启动一次很长的运行）。"
                   "按下面的按钮重放其余 {left:,} 步。",
    "replay_rest": "▶ 重放链接的其余 {n:,} 步",
    "dyn_T": "实际使用的温度（动态温度）",
    "dyn_T_v": "{used:.3f}：按这一步的熵选出，在 T {T:g} 附近的 {lo:g}（确定）到 {hi:g}（不确定）之间",
    "dyn_T_best": "0：这一步的范围到达 0，所以只保留了最好的词元",
    "dyn_T_one": "无：只有一个词元到达温度阶段，没有什么可缩放的",
    "xtc_row": "这一步的 XTC",
    "xtc_yes": "触发了：移除了 {n} 个首选，即所有 p ≥ {th:g} 的词元中除概率最低者以外的全部（概率质量 {mass:.4f}）",
    "xtc_no": "没有触发（它只在 {p:.0%} 的步数上触发，而且要有两个以上词元的 p ≥ {th:g}）",
    "H_T_one": "（经过截断后只有一个词元到达温度阶段：任何 T 下 H(T) 都是 0）",
    "st_dyn_T": "动态 T = {used:.2f}", "st_xtc_yes": "XTC 触发了", "st_xtc_no": "XTC 没有触发",
    "rebuilt": "这个标签页闲置时，它的模型缓存被暂时移出，为其他访问者腾出内存；这一步重建了缓存"
               "（{n:,} 个词元，用时 {s:.2f} 秒）。你看到的内容没有变化。",
    "orders_btn": "这一步在各引擎顺序下",
    "orders_intro": "第 {step} 步按每个预设顺序重做一次，设置相同、随机抽取也相同；只有阶段的顺序不同（◀ = 它实际用的顺序）。"
                    "你的运行不受影响。",
    "orders_col_order": "顺序", "orders_col_chain": "按引擎的顺序，每个阶段之后剩下的词元数",
    "orders_col_kept": "选择器可选的词元数", "orders_col_pick": "选中的词元（最终 p）",
    "orders_refused": "不可行：{why}", "orders_no_stage": "没有阶段改变分布",
    "orders_none": "请先走一步：这里比较的是所显示这一步在各顺序下的结果。",
    "pop_head": "第 {step} 步：排名靠前的候选",
    "pop_hint": "点击一个候选，在这一步强制选择它（其后的内容保存为分支）。",
    "pop_chosen": "★ 被选中 · 最终 {p}", "pop_kept": "保留 · 最终 {p}", "pop_cut": "✂ 被 {stage} 截断",
}

register("explorer", EN, ZH)
tr = Namespace("explorer")
