"""Explorer tab, "this step in numbers": the table under the charts (entropies, dH/dT, margin,
tail mass, kept count, timing), what only some stages know (the temperature dynamic temperature
used, whether XTC fired), where each number comes from, and what a server reported. Drawn from
one ``StepTrace``; nothing is computed here."""

from __future__ import annotations

from typing import Any

from decoding_lab.ui.common.i18n import t
from decoding_lab.ui.common.markdown import code_span
from decoding_lab.ui.common.plots import show_token
from decoding_lab.ui.explorer import strings
from decoding_lab.ui.explorer.chart import raw_source


def numbers_md(trace: Any, lang: str) -> str:
    """'This step in numbers': entropies, dH/dT, margin, tail mass, kept count, timing."""
    if trace is None:
        return t(lang, "no_session")
    fmt = lambda x: "—" if x is None else f"{0.0 if abs(x) < 5e-5 else x:.4f}"  # noqa: E731
    lines = [f"| {t(lang, 'n_quantity')} | {t(lang, 'n_value')} |", "|---|---|",
             f"| {t(lang, 'n_chosen')} | " + strings.tr(lang, "chosen_row", token=code_span(show_token(trace.chosen_token)),
                                                        id=trace.chosen_token_id, rank=trace.chosen_rank,
                                                        raw=trace.chosen_p_raw, final=trace.chosen_p_final) + " |",
             f"| {t(lang, 'n_H')} | {fmt(trace.entropy)} |",
             f"| {t(lang, 'n_H_T')} | {fmt(trace.entropy_T)}{one_token_note(trace, lang)} |",
             f"| {t(lang, 'n_dHdT')} | {fmt(trace.dH_dT)} |",
             f"| {t(lang, 'n_H_final')} | {fmt(trace.entropy_final)} |",
             f"| {t(lang, 'n_margin')} | {fmt(trace.margin)} |",
             f"| {t(lang, 'n_tail', n=trace.tail.get('top_n'))} | {fmt(trace.tail.get('outside_top_n'))} |"]
    for th, mass in trace.tail.get("below", {}).items():
        count = trace.tail.get("count_below", {}).get(th, 0)
        lines.append(f"| {t(lang, 'n_below', th=th, count=f'{count:,}')} | {fmt(mass)} |")
    lines.append(f"| {t(lang, 'n_kept')} | {trace.kept_final:,} |")
    lines += extra_rows(trace, lang)
    lines += source_rows(trace, lang)
    lines += reported_rows(trace, lang)
    tm = trace.timings
    lines.append(f"| {t(lang, 'n_time_label')} | {t(lang, 'n_time', fwd=1000 * tm.get('forward', 0), chain=1000 * tm.get('chain', 0))} |")
    return "\n".join(lines)


def stage_record(trace: Any, name: str) -> tuple[int, Any] | tuple[None, None]:
    """(index, record) of the stage ``name`` in this step's chain, or (None, None)."""
    for i, rec in enumerate(trace.stages):
        if rec.name == name:
            return i, rec
    return None, None


def dynamic_T(trace: Any) -> tuple[float, dict] | None:
    """(the temperature dynamic temperature divided by at this step, the stage's parameters), or
    None when the step ran no dynamic temperature (``TemperatureExtra.T_used``)."""
    _, rec = stage_record(trace, "temperature")
    used = getattr(getattr(rec, "extra", None), "T_used", None)
    return None if used is None else (float(used), dict(rec.params))


def xtc_fired(trace: Any) -> tuple[bool, Any] | None:
    """(whether XTC removed the top choices at this step, its record), or None when XTC did not
    run (``XTCExtra.fired``)."""
    _, rec = stage_record(trace, "xtc")
    fired = getattr(getattr(rec, "extra", None), "fired", None)
    return None if fired is None else (bool(fired), rec)


def extra_rows(trace: Any, lang: str) -> list[str]:
    """What only some stages know, shown where the step's numbers are: the temperature dynamic
    temperature actually used, and whether XTC fired (both also in the JSON export)."""
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    rows = []
    dyn = dynamic_T(trace)
    if dyn is not None:
        used, params = dyn
        T, delta = float(params.get("T", 1.0)), float(params.get("delta", 0.0))
        if one_token_in(trace):
            value = tr("dyn_T_one")
        elif used == 0:
            value = tr("dyn_T_best")
        else:
            value = tr("dyn_T_v", used=used, T=T, lo=max(0.0, T - delta), hi=T + delta)
        rows.append(f"| {tr('dyn_T')} | {value} |")
    xtc = xtc_fired(trace)
    if xtc is not None:
        fired, rec = xtc
        value = (tr("xtc_yes", n=rec.removed_count, mass=rec.removed_mass,
                                   th=float(rec.params.get("threshold", 0))) if fired
                 else tr("xtc_no", p=float(rec.params.get("probability", 0)), th=float(rec.params.get("threshold", 0))))
        rows.append(f"| {tr('xtc_row')} | {value} |")
    return rows


def one_token_in(trace: Any) -> bool:
    """Did a single token reach the temperature stage (temperature late in the order, after a cut to one)?"""
    i, rec = stage_record(trace, "temperature")
    return rec is not None and i > 0 and trace.stages[i - 1].kept == 1


def one_token_note(trace: Any, lang: str) -> str:
    """When a single token reaches temperature, H(T) is 0 for every T: say so beside the number
    instead of leaving a bare 0."""
    if trace.entropy_T is None or not one_token_in(trace):
        return ""
    return " " + strings.tr(lang, "H_T_one")


def extras_status(trace: Any, lang: str) -> str:
    """The status line's short form of ``extra_rows`` (empty when neither stage ran)."""
    parts = []
    dyn = dynamic_T(trace)
    if dyn is not None and not one_token_in(trace):
        parts.append(strings.tr(lang, "st_dyn_T", used=dyn[0]))
    xtc = xtc_fired(trace)
    if xtc is not None:
        parts.append(strings.tr(lang, "st_xtc_yes" if xtc[0] else "st_xtc_no"))
    return "".join(f" · {p}" for p in parts)


def source_rows(trace: Any, lang: str) -> list[str]:
    """Two rows that name the source of every number above: raw (before any stage: this process's
    logits, a server's raw logits, or a server's top-N with the rest filled in, then a bound) and
    final (after which stages, in which order)."""
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    rep = getattr(trace, "reported", None) or {}
    n, v = len(rep.get("ids", ())), int(rep.get("n_vocab", 0) or 0)
    raw = tr("src_" + raw_source(trace), n=n, v=v, rest=max(0, v - n))
    stages = [s.name for s in trace.stages]
    final = tr("src_final", stages=" → ".join(stages)) if stages else tr("src_final_none")
    return [f"| {tr('src_label')} | {raw} |", f"| | {final} |"]


def reported_rows(trace: Any, lang: str) -> list[str]:
    """For a model on a server: what it reported (top-N of V), the mass it left out, and which
    token the engine itself picked, so no figure above reads as more exact than it is."""
    rep = getattr(trace, "reported", None)
    if not rep:
        return []
    n, v = len(rep["ids"]), int(rep["n_vocab"])
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    chosen = rep.get("chosen_id")
    pick = (code_span(show_token(trace_token_text(trace, chosen))) + f" (id {chosen})" if chosen is not None
            else tr("r_engine_none"))
    rows = [] if rep.get("raw_logits") else [     # a raw-logits server reported every token: nothing is filled in
        f"| {tr('r_reported')} | {tr('r_reported_v', n=n, v=v)} |",
        f"| {tr('r_tail')} | {tr('r_tail_v', tail=rep['tail_mass'], rest=v - n, n=n)} |"]
    rows.append(f"| {tr('r_engine')} | {pick} |")
    if any("as text" in note for note in rep.get("exact", ())):
        rows.append(f"| {tr('r_reported')} | {tr('r_text')} |")
    if rep.get("inexact"):
        rows.append(f"| {tr('r_inexact')} | {tr('r_inexact_v', stages=', '.join(rep['inexact']))} |")
    if rep.get("agreement"):
        rows.append(f"| {tr('r_kept')} | {kept_verdict(trace, rep['agreement'], lang)} |")
    return rows


def kept_verdict(trace: Any, a: dict[str, Any], lang: str) -> str:
    """The engine's post-sampling kept set beside ours, in one sentence (``remote.agreement``)."""
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    name = lambda i: code_span(show_token(trace_token_text(trace, i)))  # noqa: E731
    listed = lambda ids: ", ".join(name(i) for i in ids) or tr("r_none")  # noqa: E731
    if a["greedy"]:
        if a["same_set"]:
            return tr("r_kept_greedy")
        engine = (trace.reported or {}).get("post_ids") or [None]
        ours = max(trace.top, key=lambda r: r.p_final).token_id if trace.top else trace.chosen_token_id
        return tr("r_kept_greedy_diff", e=name(engine[0]) if engine[0] is not None else "—", o=name(ours))
    if not a["engine_lists_all"]:
        return tr("r_kept_partial", n=a["engine_kept"], verdict=tr("r_same" if a["same_set"] else "r_different"))
    if a["same_set"]:
        dp = a["max_dp"] or 0.0
        if dp < 5e-5:  # rounds to 0.0000
            return tr("r_kept_same4", n=a["engine_kept"])
        return tr("r_kept_same", n=a["engine_kept"], dp=f"{dp:.4f}")
    return tr("r_kept_diff", n=a["engine_kept"], m=a["ours_kept"], a=listed(a["only_engine"]), b=listed(a["only_ours"]))


def trace_token_text(trace: Any, token_id: int) -> str:
    """A token's text from the trace's own rows (the view has no tokenizer at hand)."""
    row = next((r for r in trace.top if r.token_id == token_id), None)
    return row.token if row is not None else f"#{token_id}"
