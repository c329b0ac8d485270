"""Labels and one-line hints for every row of the core's parameter table, in both languages.

The key of a label is the parameter's key (``top_p``), its hint is ``<key>_info``; a test
walks ``decoding_lab.params.PARAMS`` and fails on a row without both, in both languages.
``i18n`` merges these into its tables."""

from __future__ import annotations

EN: dict[str, str] = {
    "temperature": "Temperature", "temperature_info": "0 = greedy (argmax)",
    "dynatemp_range": "Dynamic temperature range", "dynatemp_range_info": "0 = off; T moves within T ± range with the entropy",
    "dynatemp_exponent": "Dynamic temperature exponent", "dynatemp_exponent_info": "how entropy maps to T (1 = linear)",
    "top_k": "Top-k", "top_k_info": "0 = off",
    "top_p": "Top-p (nucleus)", "top_p_info": "1 = off",
    "min_p": "Min-p", "min_p_info": "0 = off",
    "typical_p": "Typical-p", "typical_p_info": "1 = off",
    "top_n_sigma": "Top-nσ", "top_n_sigma_info": "0 = off; keep logits within n standard deviations of the best",
    "xtc_probability": "XTC probability", "xtc_probability_info": "0 = off; chance per step of excluding the top choices",
    "xtc_threshold": "XTC threshold", "xtc_threshold_info": "tokens with p ≥ this are 'top choices' (> 0.5 = off)",
    "repetition_penalty": "Repetition penalty", "repetition_penalty_info": "1 = off",
    "presence_penalty": "Presence penalty", "presence_penalty_info": "0 = off",
    "frequency_penalty": "Frequency penalty", "frequency_penalty_info": "0 = off",
    "penalty_include_prompt": "Presence/frequency count the prompt", "penalty_include_prompt_info": "off = generated tokens only (OpenAI)",
    "repetition_window": "Repetition window", "repetition_window_info": "last N tokens (0 = all; -1 = the preset's rule)",
    "no_repeat_ngram_size": "No-repeat n-gram size", "no_repeat_ngram_size_info": "0 = off",
    "dry_multiplier": "DRY multiplier", "dry_multiplier_info": "0 = off; penalise tokens that extend a repeat",
    "dry_base": "DRY base", "dry_base_info": "the penalty grows as base^(length − allowed)",
    "dry_allowed_length": "DRY allowed length", "dry_allowed_length_info": "repeats this long are free",
    "dry_penalty_last_n": "DRY window", "dry_penalty_last_n_info": "-1 = whole text, 0 = off",
    "logit_bias": "Logit bias", "logit_bias_info": "token id:bias, … (−100 bans a token)",
    "seed": "Seed", "seed_info": "same seed + same settings = same tokens",
}

ZH: dict[str, str] = {
    "temperature": "温度", "temperature_info": "0 = 贪心（取最大值）",
    "dynatemp_range": "动态温度范围", "dynatemp_range_info": "0 = 关闭；温度随熵在 T ± 范围内变化",
    "dynatemp_exponent": "动态温度指数", "dynatemp_exponent_info": "熵如何映射到温度（1 = 线性）",
    "top_k": "Top-k", "top_k_info": "0 = 关闭",
    "top_p": "Top-p（核采样）", "top_p_info": "1 = 关闭",
    "min_p": "Min-p", "min_p_info": "0 = 关闭",
    "typical_p": "Typical-p", "typical_p_info": "1 = 关闭",
    "top_n_sigma": "Top-nσ", "top_n_sigma_info": "0 = 关闭；只保留与最大 logit 相差不超过 n 个标准差的词元",
    "xtc_probability": "XTC 概率", "xtc_probability_info": "0 = 关闭；每一步排除头部候选的概率",
    "xtc_threshold": "XTC 阈值", "xtc_threshold_info": "p ≥ 该值的词元算作头部候选（> 0.5 = 关闭）",
    "repetition_penalty": "重复惩罚", "repetition_penalty_info": "1 = 关闭",
    "presence_penalty": "存在惩罚", "presence_penalty_info": "0 = 关闭",
    "frequency_penalty": "频率惩罚", "frequency_penalty_info": "0 = 关闭",
    "penalty_include_prompt": "存在/频率惩罚也统计提示词", "penalty_include_prompt_info": "关闭 = 只统计生成的词元（OpenAI 定义）",
    "repetition_window": "重复惩罚窗口", "repetition_window_info": "最近 N 个词元（0 = 全部；-1 = 按预设）",
    "no_repeat_ngram_size": "禁止重复 n-gram 长度", "no_repeat_ngram_size_info": "0 = 关闭",
    "dry_multiplier": "DRY 强度", "dry_multiplier_info": "0 = 关闭；惩罚会延续重复片段的词元",
    "dry_base": "DRY 底数", "dry_base_info": "惩罚按 底数^(长度 − 允许长度) 增长",
    "dry_allowed_length": "DRY 允许长度", "dry_allowed_length_info": "不超过该长度的重复不受惩罚",
    "dry_penalty_last_n": "DRY 窗口", "dry_penalty_last_n_info": "-1 = 全文，0 = 关闭",
    "logit_bias": "Logit 偏置", "logit_bias_info": "词元 id:偏置, …（−100 即禁用该词元）",
    "seed": "随机种子", "seed_info": "相同的种子和设置 = 相同的词元",
}
