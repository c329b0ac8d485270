"""The Many-samples tab's strings, in three namespaces: ``multisample`` (the sweep), ``tilt`` (the live
verifier-tilted run) and ``ctd`` (the calibrated temperature). Read them with the ``Namespace`` objects
below (``tr``, ``tr_tilt``, ``tr_ctd``); a static label is registered as ``"<namespace>.<key>"``.

The sweep intro names the command line that made the shipped file; it is filled in here, once, so the
page's language switch can show it as a static text."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

SWEEP_CLI = ("python -m decoding_lab sweep --model smollm2-135m-instruct --task addition --problems 50 --n 16 "
             "--temperatures 0,0.3,0.7,1.0,1.3 --truncations none,top-p,min-p,top-k --max-new-tokens 40 "
             "--threads 1 --out my_sweep.json")

EN: dict[str, str] = {
    "intro": "**Many samples per problem.** Each cell of a precomputed sweep drew *n* samples for every problem "
             "of a task with a verifier. pass@k is the chance that at least one of k samples is right "
             "(unbiased estimate, error bars = standard error across problems). Look for the lesson: the "
             "temperature that is best for pass@1 is low, the best one for pass@k rises with k, because "
             "low-temperature samples are near-copies.\n\n"
             "The sweep was computed beforehand. To make your own sweep file, run on the command line "
             "(it takes hours on a small CPU; a stopped run is resumed by running the same command again):\n\n"
             "```\n{cli}\n```",
    "file": "Sweep result file", "trunc": "Truncation (pass@k curve)", "k": "k (heatmap and table)",
    "metric": "Heatmap metric",
    "status": "**{model}** on *{task}* — {done} of {total} cells{partial}; n = {n} samples × {problems} problems, "
              "up to {tokens} new tokens.",
    "partial": " (**partial sweep**: missing cells are blank)",
    "pool": "(a pool of {pool} problems; this sweep used {used})",
    "passk_title": "pass@k versus temperature (truncation: {trunc})", "temperature": "temperature",
    "none_value": "none",
    "passk_axis": "pass@k", "best_title": "Best temperature for each k", "best_axis": "best temperature",
    "any": "any truncation",
    "rises": "Best temperature for pass@1: **T = {t1:g}**; for pass@{kmax}: **T = {tk:g}** — it **rises with k**.",
    "flat": "Best temperature for pass@1: **T = {t1:g}**; for pass@{kmax}: **T = {tk:g}** — it does not rise "
            "with k in this file.",
    "heat_title": "{metric} by temperature × truncation — {done} of {total} cells",
    "truncation": "truncation", "missing": "not run",
    "table": "All cells", "command": "Command that produced this file",
    "csv": "Table as CSV", "json": "Sweep JSON file",
    "m_pass_at_k": "pass@k", "m_self_consistency": "self-consistency", "m_mean_length": "mean length (tokens)",
    "m_repetition_4gram": "4-gram repetition", "m_distinct2": "distinct-2", "m_no_answer": "no answer",
    "c_T": "T", "c_trunc": "truncation", "c_pen": "penalty", "c_pass1": "pass@1", "c_passk": "pass@{k}",
    "c_passk_se": "pass@{k} s.e.", "c_sc": "self-consistency", "c_len": "mean length", "c_rep": "4-gram repetition",
    "no_files": "No sweep files shipped in assets/sweeps.",
    "bad_file": "no shipped sweep file named {name!r}; choose one of: {names}",
}

ZH: dict[str, str] = {
    "intro": "**每个问题多次采样。** 预先计算的扫描里，每个格子都对一个可自动判分任务的每个问题采样了 *n* 次。"
             "pass@k 是 k 个样本中至少有一个正确的概率（无偏估计，误差棒 = 跨问题的标准误）。要看的结论："
             "对 pass@1 最好的温度较低，而对 pass@k 最好的温度随 k 升高，因为低温下的样本几乎是彼此的副本。\n\n"
             "这份扫描是预先算好的。要生成自己的扫描文件，请在命令行运行（在小 CPU 上需要数小时；"
             "中途停止后再运行同一命令即可续跑）：\n\n```\n{cli}\n```",
    "file": "扫描结果文件", "trunc": "截断方式（pass@k 曲线）", "k": "k（热力图与表格）", "metric": "热力图指标",
    "status": "**{model}** 在 *{task}* 上 — {total} 个格子中完成 {done} 个{partial}；n = {n} 个样本 × {problems} 个问题，"
              "最多 {tokens} 个新词元。",
    "partial": "（**部分扫描**：缺失的格子留空）",
    "passk_title": "pass@k 随温度的变化（截断：{trunc}）", "temperature": "温度", "passk_axis": "pass@k",
    "none_value": "无",
    "best_title": "每个 k 的最佳温度", "best_axis": "最佳温度", "any": "任意截断",
    "rises": "pass@1 的最佳温度：**T = {t1:g}**；pass@{kmax} 的最佳温度：**T = {tk:g}** — **随 k 升高**。",
    "flat": "pass@1 的最佳温度：**T = {t1:g}**；pass@{kmax} 的最佳温度：**T = {tk:g}** — 在此文件中没有随 k 升高。",
    "heat_title": "{metric}：温度 × 截断 — {total} 个格子中完成 {done} 个",
    "truncation": "截断", "missing": "未运行",
    "table": "全部格子", "command": "生成此文件的命令", "csv": "表格（CSV）", "json": "扫描 JSON 文件",
    "m_pass_at_k": "pass@k", "m_self_consistency": "自洽性（多数投票）", "m_mean_length": "平均长度（token）",
    "m_repetition_4gram": "4-gram 重复率", "m_distinct2": "distinct-2", "m_no_answer": "无答案比例",
    "c_T": "T", "c_trunc": "截断", "c_pen": "惩罚", "c_pass1": "pass@1", "c_passk": "pass@{k}",
    "c_passk_se": "pass@{k} 标准误", "c_sc": "自洽性", "c_len": "平均长度", "c_rep": "4-gram 重复率",
    "no_files": "assets/sweeps 中没有扫描文件。",
    "pool": "（题库共 {pool} 道题；这次扫描用了其中 {used} 道）",
    "bad_file": "没有名为 {name!r} 的扫描文件；可选：{names}",
}

#: The shipped sweeps' task lines (``tasks.sets``, as the result files record them) in Chinese.
TASK_ZH: dict[str, str] = {
    "single-digit addition, 'What is 3 + 4?' (81 problems)": "一位数加法，例如“What is 3 + 4?”（81 道题）",
    "capital of a country, 'What is the capital of France?' (48 problems)":
        "国家的首都，例如“What is the capital of France?”（48 道题）",
    "capital of a country as multiple choice A-D (48 problems)": "国家的首都，A–D 四选一（48 道题）",
    "HumanEval (164 Python problems, unit tests in a sandbox)": "HumanEval（164 道 Python 题，在沙箱里跑单元测试）",
}


TILT_EN: dict[str, str] = {
    "head": "### Verifier-tilted sampling (live)\n"
            "The pass@k-optimal sampler tilts the model towards text that will pass: logits' = (z + η·V) / T. "
            "Here V of a candidate token is 1 when a short greedy rollout from (text so far + candidate) "
            "gives the right sum, else 0; only the top-m candidates by z are scored. One click runs the plain "
            "chain (η = 0) and the tilted one with the same seed on the default model. Each tilted step costs "
            "one batched rollout: a teaching device, not a fast sampler. **η = 0** must give the plain tokens "
            "exactly; **small T with large η** gives verifier-greedy (the best-V candidate, ties by z).",
    "problem": "Addition problem", "eta": "η (tilt strength)", "temperature": "T (0 = greedy)",
    "top_m": "top-m candidates scored", "rollout_tokens": "rollout tokens", "seed": "seed",
    "max_new_tokens": "max new tokens", "run": "Run plain and tilted", "stop": "Stop",
    "try_eta0": "Try η = 0 (T = 0.7)", "try_vg": "Try T = 0.05, η = 20",
    "plain": "Plain (η = 0)", "tilted": "Tilted (η = {eta:g})", "settings": "T = {t}, seed {seed}",
    "greedy": "0 (greedy)", "answer": "answer {ans} — {verdict} (reference {ref})",
    "no_answer": "no answer found — {verdict} (reference {ref})", "right": "<b class='tilt-ok'>✓ right</b>",
    "wrong": "<b class='tilt-bad'>✗ wrong</b>", "waiting": "waiting…",
    "running": "Running the tilted chain: step {n}, {sec:.1f} s, {r} rollouts so far…",
    "running_plain": "Running the plain chain…",
    "same": "**Same tokens**: both runs picked the same {n} tokens.",
    "eta0": "**η = 0**: the tilt stage is a no-op, and with the same seed the two runs picked the same {n} "
            "tokens: plain temperature sampling, bit for bit.",
    "differ": "The runs part at **step {step}**: plain {a!r}, tilted {b!r}.",
    "prefix": "Both runs picked the same first {n} tokens; then one of them ended.",
    "vg": "Verifier-greedy: the tilted pick was the best-V candidate (ties by z) at **{k} of {n}** steps.",
    "cost": "Plain {p:.1f} s; tilted {t:.1f} s with {r} rollouts of up to {rt} tokens.",
    "why_stop": "The tilted run stopped early ({why}); its verdict is on the text so far.",
    "stopped": "Stop was pressed", "time limit": "it reached the time limit of {sec:g} s",
    "chart": "Candidates per step: z (open) and z + η·V (filled; green V = 1, red V = 0); ★ = picked",
    "step": "step", "logit": "logit (before ÷T)", "z": "z (model)", "zV": "z + η·V", "picked": "picked",
    "table": "Tilted run, per step", "c_step": "step", "c_token": "token", "c_z": "z", "c_V": "V",
    "c_zV": "z + ηV", "c_logit": "(z + ηV)/T", "c_p": "p", "c_pick": "picked", "c_roll": "rollout judged",
    "empty": "Click “Run plain and tilted” to see each step's candidates here",
}

TILT_ZH: dict[str, str] = {
    "head": "### 验证器倾斜采样（实时）\n"
            "pass@k 最优的采样器会把模型往“能通过”的文本倾斜：logits' = (z + η·V) / T。这里候选词元的 V："
            "从（已生成文本 + 该候选）出发做一段短的贪心试推，若得到正确的和则为 1，否则为 0；"
            "只对按 z 排名前 m 的候选打分。点一次会在默认模型上用同一个种子先跑普通链（η = 0），再跑倾斜链。"
            "每个倾斜步都要做一次批量试推：这是教学演示，不是快速采样器。**η = 0** 必须与普通采样逐词元相同；"
            "**小 T 加大 η** 就是验证器贪心（取 V 最高的候选，V 相同时按 z）。",
    "problem": "加法题", "eta": "η（倾斜强度）", "temperature": "T（0 = 贪心）", "top_m": "打分的候选数 m",
    "rollout_tokens": "试推词元数", "seed": "种子", "max_new_tokens": "最多生成词元数",
    "run": "运行普通与倾斜", "stop": "停止", "try_eta0": "试试 η = 0（T = 0.7）", "try_vg": "试试 T = 0.05，η = 20",
    "plain": "普通（η = 0）", "tilted": "倾斜（η = {eta:g}）", "settings": "T = {t}，种子 {seed}",
    "greedy": "0（贪心）", "answer": "答案 {ans} — {verdict}（参考 {ref}）",
    "no_answer": "没有找到答案 — {verdict}（参考 {ref}）", "right": "<b class='tilt-ok'>✓ 正确</b>",
    "wrong": "<b class='tilt-bad'>✗ 错误</b>",
    "waiting": "等待中…",
    "running": "正在运行倾斜链：第 {n} 步，{sec:.1f} 秒，已做 {r} 次试推…", "running_plain": "正在运行普通链…",
    "same": "**相同的词元**：两次运行选出了同样的 {n} 个词元。",
    "eta0": "**η = 0**：倾斜阶段什么也不做；同一个种子下两次运行选出了同样的 {n} 个词元：逐位就是普通温度采样。",
    "differ": "两次运行在**第 {step} 步**分开：普通 {a!r}，倾斜 {b!r}。",
    "prefix": "两次运行前 {n} 个词元相同；之后其中一个结束了。",
    "vg": "验证器贪心：倾斜链选中的正是 V 最高的候选（V 相同按 z）的步数为 **{k} / {n}**。",
    "cost": "普通 {p:.1f} 秒；倾斜 {t:.1f} 秒，做了 {r} 次最多 {rt} 个词元的试推。",
    "why_stop": "倾斜运行提前停止（{why}）；判定基于目前的文本。",
    "stopped": "点击了“停止”", "time limit": "达到了 {sec:g} 秒的时间上限",
    "chart": "每步的候选：z（空心）与 z + η·V（实心；绿 V = 1，红 V = 0）；★ = 选中",
    "step": "步", "logit": "logit（÷T 之前）", "z": "z（模型）", "zV": "z + η·V", "picked": "选中",
    "table": "倾斜运行，逐步", "c_step": "步", "c_token": "词元", "c_z": "z", "c_V": "V", "c_zV": "z + ηV",
    "c_logit": "(z + ηV)/T", "c_p": "p", "c_pick": "选中", "c_roll": "被判定的试推",
    "empty": "点击“运行普通与倾斜”后，这里显示每一步的候选",
}

CTD_EN: dict[str, str] = {
    "head": "### Calibrated temperature (CTD)\n"
            "If the verifier potential were an affine function of the sequence log-probability, "
            "V ≈ c + a·log p(y), the tilted sampler (p·e^V)^(1/T) would collapse to a plain temperature, "
            "**T_ctd = 1 / (1 + a)**. The fit below estimates a from samples drawn at T = 1 (logistic "
            "regression of pass on log p), then compares T_ctd with the grid on problems it never saw.",
    "fit": "Fitted on **{samples} samples** (problems {c0}–{c1} at T = 1, pass rate {rate:.3f}): "
           "P(pass | ℓ) = σ({alpha:.3f} + {beta:.4f}·ℓ), affine slope a = {slope:.4f} → **T_ctd = {t:g}**.",
    "held": "Held-out problems {h0}–{h1}: pass@1 **{ctd1:.3f}** with CTD (T = {t:g}) against **{grid1:.3f}** "
            "with the grid's T = {gt1:g} (chosen on the calibration half; the held-out oracle is T = {ot1:g}, "
            "{or1:.3f}); difference {d1:+.3f} ± {s1:.3f}. At k = {kn}: {ctdn:.3f} against {gridn:.3f} "
            "(T = {gtn:g}); oracle {orn:.3f} (T = {otn:g}).",
    "worse": "**What it means:** on this model CTD did worse than simply choosing the temperature on the "
             "calibration half. Log-probability is poorly calibrated for correctness here: the pass rate "
             "does rise with log p (see the binned dots), but so slowly per nat that the affine fit asks "
             "for little sharpening (T_ctd = {t:g}), while the grid's T = {gt1:g}, which pushes each sample "
             "towards the model's preferred path, reaches pass@1 {grid1:.2f} instead of {ctd1:.2f}.",
    "better": "**What it means:** here CTD matched or beat the grid temperature chosen on the calibration "
              "half: log-probability tracks correctness well enough for one fitted scalar to pay off.",
    "none": "*No calibrated-temperature result is shipped for this sweep file.*",
    "fit_title": "Sequence log-prob vs pass (calibration samples, T = 1)", "logprob": "sequence log-prob ℓ",
    "pass": "pass (1) / fail (0)", "samples": "samples", "binned": "pass rate (equal-count bins)",
    "curve": "fit σ(α + βℓ)",
    "cmp_title": "Held-out pass@k: CTD vs the grid", "k": "k", "passk": "pass@k",
    "ctd": "CTD (T = {t:g})", "grid": "grid T chosen on calibration half", "oracle": "held-out oracle",
    "table": "CTD against the grid, held-out problems",
    "c_k": "k", "c_ctd": "CTD", "c_gridT": "grid T", "c_grid": "grid", "c_oracleT": "oracle T",
    "c_oracle": "oracle", "c_diff": "CTD − grid", "c_se": "± s.e.",
}

CTD_ZH: dict[str, str] = {
    "head": "### 校准温度（CTD）\n"
            "如果验证器势能是序列对数概率的仿射函数 V ≈ c + a·log p(y)，倾斜采样 (p·e^V)^(1/T) 就退化为普通温度："
            "**T_ctd = 1 / (1 + a)**。下面用 T = 1 的样本拟合 a（对 log p 做“是否通过”的逻辑回归），"
            "再在它没见过的题目上把 T_ctd 与网格温度比较。",
    "fit": "在 **{samples} 个样本**上拟合（第 {c0}–{c1} 题，T = 1，通过率 {rate:.3f}）："
           "P(通过 | ℓ) = σ({alpha:.3f} + {beta:.4f}·ℓ)，仿射斜率 a = {slope:.4f} → **T_ctd = {t:g}**。",
    "held": "留出题目 {h0}–{h1}：CTD（T = {t:g}）的 pass@1 为 **{ctd1:.3f}**，网格的 T = {gt1:g}"
            "（在校准半边选出；留出集上的最优是 T = {ot1:g}，{or1:.3f}）为 **{grid1:.3f}**；"
            "差 {d1:+.3f} ± {s1:.3f}。k = {kn} 时：{ctdn:.3f} 对 {gridn:.3f}（T = {gtn:g}）；最优 {orn:.3f}（T = {otn:g}）。",
    "worse": "**这说明什么**：在这个模型上，CTD 不如直接在校准半边挑温度。这里对数概率对“是否正确”校准得很差："
             "通过率确实随 log p 上升（见分箱的点），但每个奈特上升得太慢，仿射拟合只要求很少的锐化（T_ctd = {t:g}）；"
             "而网格的 T = {gt1:g} 把每个样本推向模型偏好的路径，pass@1 达到 {grid1:.2f}，而不是 {ctd1:.2f}。",
    "better": "**这说明什么**：这里 CTD 追平或超过了在校准半边选出的网格温度：对数概率与正确性足够相关，"
              "一个拟合出的标量就能带来收益。",
    "none": "*这个扫描文件没有随附的校准温度结果。*",
    "fit_title": "序列对数概率与是否通过（校准样本，T = 1）", "logprob": "序列对数概率 ℓ",
    "pass": "通过 (1) / 未通过 (0)", "samples": "样本", "binned": "通过率（等数量分箱）", "curve": "拟合 σ(α + βℓ)",
    "cmp_title": "留出集 pass@k：CTD 与网格温度", "k": "k", "passk": "pass@k",
    "ctd": "CTD（T = {t:g}）", "grid": "校准半边选出的网格 T", "oracle": "留出集最优",
    "table": "CTD 与网格温度对比（留出题目）",
    "c_k": "k", "c_ctd": "CTD", "c_gridT": "网格 T", "c_grid": "网格", "c_oracleT": "最优 T",
    "c_oracle": "最优", "c_diff": "CTD − 网格", "c_se": "± 标准误",
}

for _table in (EN, ZH):
    _table["intro"] = _table["intro"].format(cli=SWEEP_CLI)

register("multisample", EN, ZH)
register("tilt", TILT_EN, TILT_ZH)
register("ctd", CTD_EN, CTD_ZH)

tr = Namespace("multisample")
tr_tilt = Namespace("tilt")
tr_ctd = Namespace("ctd")
