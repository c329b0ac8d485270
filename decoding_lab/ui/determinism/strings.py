"""The Temperature-0 tab's strings (English, Simplified Chinese), registered as ``determinism.<key>``.

Read them with ``tr(lang, key)``; static labels go through ``ctx.labels`` under the full key
(``"determinism.prompt"``)."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    "intro": "Greedy decoding (temperature 0) of one prompt along different numerical paths. Where two "
             "tokens are nearly tied (a small margin), a tiny numerical difference can flip the argmax; "
             "from then on the texts differ.",
    "prompt": "Prompt", "tokens": "New tokens", "variants": "Numerical paths", "run": "Run greedy on every path",
    "same": "identical to the reference for all {n} tokens",
    "diverge": "first differs at step {step}: reference {ref!r}, this path {var!r} (reference margin {m:.4f})",
    "margins": "Margin between the two best logits along the reference path", "step": "step",
    "margin": "top-1 − top-2 logit", "flip": "divergence", "reference": "reference",
    "parted": "from here on this text differs from another path's",
    "running": "Path {i} of {n} running: {name} … ({done} done)",
    "stop": "■ Stop", "stopped": "Stopped after {done} of {n} paths.",
    "stopping": "Stopping: the path that is running finishes first, then the finished paths are compared.",
    "too_few": "Comparing needs at least two finished paths.",
    "float32, cached": "float32, cached", "float32, full recompute": "float32, full recompute",
    "bfloat16, cached": "bfloat16, cached", "batched with a longer prompt": "batched with a longer prompt",
    "llama.cpp kernels, same GGUF": "llama.cpp kernels, same GGUF",
    "on the server, alone": "on the server, alone", "on the server, alone again": "on the server, alone again",
    "on the server, beside other requests": "on the server, beside other requests",
    "gap_zero": "its five best logits are the reference's to the last bit at every step compared",
    "gap": "its five best logits differ from the reference's by up to {g:.3g} at the steps compared",
    "others": "at least {k} other requests were in flight on the server whenever this path asked for a token",
    "kind_all": "{model} is a served model: every path on the server was run.",
    "kind_skipped": "{model} runs on {where}: the paths {paths} are for another kind of model and were left out.",
}

ZH: dict[str, str] = {
    "intro": "同一个提示词沿不同的数值路径做贪心解码（温度 0）。两个词元几乎打平（前两名的 logit 差距很小）时，"
             "微小的数值差异就能翻转 argmax；此后文字就分开了。",
    "prompt": "提示词", "tokens": "生成词元数", "variants": "数值路径", "run": "在每条路径上运行贪心",
    "same": "{n} 个词元全部与参照一致",
    "diverge": "第 {step} 步开始不同：参照 {ref!r}，本路径 {var!r}（参照路径上前两名的 logit 差距 {m:.4f}）",
    "margins": "参照路径上前两名 logit 的差距", "step": "步", "margin": "第一名 − 第二名 logit",
    "flip": "分叉处", "reference": "参照",
    "parted": "从这里开始，这段文字与另一条路径的不同",
    "running": "第 {i} / {n} 条路径运行中：{name} …（已完成 {done} 条）",
    "stop": "■ 停止", "stopped": "已在完成 {done} / {n} 条路径后停止。",
    "stopping": "正在停止：先跑完正在运行的这条路径，再比较已完成的路径。", "too_few": "比较至少需要两条已完成的路径。",
    "float32, cached": "float32，使用 KV 缓存", "float32, full recompute": "float32，每步整段重算",
    "bfloat16, cached": "bfloat16，使用 KV 缓存", "batched with a longer prompt": "与更长的提示词同批处理",
    "llama.cpp kernels, same GGUF": "llama.cpp 内核，同一个 GGUF 文件",
    "on the server, alone": "在服务器上，单独请求", "on the server, alone again": "在服务器上，再单独请求一次",
    "on the server, beside other requests": "在服务器上，与其他请求同时进行",
    "gap_zero": "比较过的每一步，它的前五名 logit 都与参照逐位相同",
    "gap": "比较过的各步中，它的前五名 logit 与参照最多相差 {g:.3g}",
    "others": "这条路径每次请求一个词元时，服务器上至少还有 {k} 个其他请求在处理",
    "kind_all": "{model} 是服务器上的模型：已运行服务器上的全部路径。",
    "kind_skipped": "{model} 运行在 {where}：路径 {paths} 属于另一类模型，已略去。",
}

register("determinism", EN, ZH)
tr = Namespace("determinism")
