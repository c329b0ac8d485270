"""The numbers-table sentence that sets a server's kept tokens beside ours, on hand-built traces,
in both languages: same set, same to 4 decimals, different, a full list, greedy."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from decoding_lab.ui.explorer.views import kept_verdict, reported_rows


def trace(post_ids=(1, 2), agreement=None, **rep):
    rows = [SimpleNamespace(token_id=i, token=t, p_final=p) for i, t, p in ((1, " Paris", 0.7), (2, " Lyon", 0.3),
                                                                          (3, " Nice", 0.0))]
    reported = {"ids": [1, 2, 3], "n_vocab": 100, "tail_mass": 0.1, "chosen_id": 1, "exact": [], "post_ids": list(post_ids),
                "post_probs": [0.7, 0.3][:len(post_ids)], "agreement": agreement, **rep}
    return SimpleNamespace(top=rows, reported=reported, chosen_token_id=1)


def agreement(**kw):
    return {"engine_kept": 2, "engine_lists_all": True, "ours_kept": 2, "greedy": False, "only_engine": [],
            "only_ours": [], "max_dp": 0.0, "same_set": True, **kw}


@pytest.mark.parametrize("lang, same4, same, differ, partial, greedy", [
    ("en", "the same 2 as our chain kept, with the same probabilities to 4 decimals", "probabilities within 0.0123",
     "Only the engine kept: `␣Nice`", "at least the 20 it lists", "its top token only (T 0 keeps one)"),
    ("zh", "与我们的链保留的 2 个相同，概率精确到小数点后 4 位也相同", "概率相差不超过 0.0123",
     "只有引擎保留的：`␣Nice`", "至少是它列出的 20 个", "只有它的第一名（T 0 只保留一个）"),
])
def test_the_kept_sentence_says_what_the_comparison_found(lang, same4, same, differ, partial, greedy):
    t = trace()
    assert same4 in kept_verdict(t, agreement(), lang)
    assert same in kept_verdict(t, agreement(max_dp=0.0123), lang)
    assert differ in kept_verdict(t, agreement(same_set=False, only_engine=[3], only_ours=[2]), lang)
    assert partial in kept_verdict(t, agreement(engine_kept=20, engine_lists_all=False), lang)
    assert greedy in kept_verdict(t, agreement(greedy=True), lang)
    # greedy, different: names the engine's top token and ours (the argmax of our final p, not a forced pick)
    text = kept_verdict(trace(post_ids=(2,)), agreement(greedy=True, same_set=False), lang)
    assert "`␣Lyon`" in text and "`␣Paris`" in text


def test_the_rows_appear_only_with_a_report_and_name_approximate_stages():
    t = trace(agreement=agreement(), inexact=["repetition-penalty"])
    rows = "\n".join(reported_rows(t, "en"))
    assert "| What the engine's sampler kept |" in rows and "| Approximate on a server | repetition-penalty:" in rows
    assert reported_rows(SimpleNamespace(reported=None), "en") == []
    assert "引擎的采样器保留了什么" in "\n".join(reported_rows(t, "zh"))


def engine_result(done=True, after_chain=True, lps=(-0.5, float("nan"))):
    from decoding_lab.strategies.result import GeneratedSequence, GenerationResult
    seq = GeneratedSequence([5, 6], "Hi there", sum(x for x in lps if x == x), list(lps), False)
    info = {"sampler": "llama-server server's own (llama)", "endpoint": "llama", "api": "llama-server",
            "logprobs_after_chain": after_chain}
    return GenerationResult("sample", [seq], 3, info, 0.1, steps=2, done=done)


@pytest.mark.parametrize("lang, drawn, after, reported, waiting", [
    ("en", "Drawn by the server's own sampler (llama, llama-server)", "after the engine's chain",
     "as the server reports them", "Asking the server (llama) for the whole sample"),
    ("zh", "由服务器自己的采样器抽取（llama，llama-server）", "经过引擎采样链之后的值", "服务器报告的值", "正在向服务器（llama）请求整段样本"),
])
def test_a_compare_column_the_server_drew_says_so(lang, drawn, after, reported, waiting):
    from decoding_lab.ui.compare.views import engine_note, output_html
    note = output_html("2: T=0.9", engine_result(), lang)
    assert drawn in note and after in note and reported not in note
    assert reported in engine_note(engine_result(after_chain=False), lang)
    assert waiting in engine_note(engine_result(done=False), lang)
    # a column decoded here has no such note
    plain = engine_result()
    plain.settings = {"temperature": 0.9}
    assert engine_note(plain, lang) == "" and "cmp-note" not in output_html("2", plain, lang)


def test_a_column_without_entropies_draws_no_line_and_its_mean_skips_unreported_tokens():
    from decoding_lab.ui.compare.views import entropy_figure, metrics_row
    from decoding_lab.strategies.result import GeneratedSequence, GenerationResult
    ours = GenerationResult("greedy", [GeneratedSequence([1], "a", -1.0, [-1.0], False, [2.0])], 3, {}, 0.1)
    fig = entropy_figure([("1: greedy", ours), ("2: T=0.9", engine_result())], "en")
    assert [tr.name for tr in fig.data] == ["1: greedy"]
    assert metrics_row(engine_result().best)["mean_lp"] == -0.5   # the NaN (unreported) token is left out


@pytest.mark.parametrize("lang, local, raw_server, topn_server, final", [
    ("en", "the model's logits before any stage, computed in this process", "the raw logits of all 100 tokens",
     "the server's top-3 log-probabilities, before its sampler", "after temperature → top-p, our chain in this order"),
    ("zh", "模型在任何阶段之前的 logit，在本进程中计算", "全部 100 个词元的原始 logit", "前 3 名对数概率",
     "经过 temperature → top-p，由我们的链按此顺序计算"),
])
def test_every_step_names_the_source_of_its_numbers(lang, local, raw_server, topn_server, final):
    """Raw: this process, a server's raw logits, or a server's top-N with the rest filled in (then a
    bound); final: after which stages, in which order. In the table and in each bar's hover text."""
    from decoding_lab.ui.explorer.chart import hover_text
    from decoding_lab.ui.explorer.views import source_rows
    stages = [SimpleNamespace(name="temperature"), SimpleNamespace(name="top-p")]
    served = trace()
    served.stages = stages
    mine = SimpleNamespace(reported=None, stages=stages, chosen_token_id=1, forced=False, greedy=True)
    raw = trace(raw_logits=True)
    raw.stages = []
    assert local in source_rows(mine, lang)[0] and final in source_rows(mine, lang)[1]
    assert topn_server in source_rows(served, lang)[0] and ("upper bound" in source_rows(served, lang)[0]) == (lang == "en")
    none = {"en": "no stage changed the distribution", "zh": "没有阶段改变分布"}[lang]
    assert raw_server in source_rows(raw, lang)[0] and none in source_rows(raw, lang)[1]
    row = SimpleNamespace(token=" Paris", token_id=1, rank=0, logit=3.0, p_raw=0.7, p_final=0.9, cut_by=None, p_cut=None)
    assert {"en": "raw = model logits, before any stage", "zh": "原始 = 模型 logit"}[lang] in hover_text(row, mine, lang)
    assert {"en": "raw = the server's top-3 log-probability", "zh": "前 3 名对数概率"}[lang] in hover_text(
        row, SimpleNamespace(**vars(served), forced=False, greedy=True), lang)
    # a raw-logits server reported every token: no "top-N of V" or "spread evenly" rows
    assert not any("spread evenly" in r for r in reported_rows(raw, "en"))
