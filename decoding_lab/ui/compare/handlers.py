"""Compare tab, events: a ``CompareRequest`` built once from the named inputs; the greedy and
sampling columns as one batch (``strategies.columns.iter_columns``; one batch per column on a
backend that runs one sequence at a time; on a served model, a sampled column is the server's own
whole sample, ``strategies.engine_samples.iter_engine_sample``) and each beam column as its own
(``iter_beam``), interleaved one step each so all columns grow together (Stop cancels the
run); the export, "send to the Explorer", and a lesson's preset filled into the columns."""

from __future__ import annotations

import time
from typing import Any

import gradio as gr

from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.errors import guarded
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.state import values_from_settings
from decoding_lab.ui.common.tab import TabContext, inputs_of, named, preset_settings
from decoding_lab.ui.compare import send, views
from decoding_lab.ui.compare.parts import CompareParts
from decoding_lab.ui.compare.request import MAX_NEW_TOKENS, ColumnSpec, CompareRequest
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.common.controls import model_names
from decoding_lab.ui.common.validate import Check, choice_check, number_check, param_check, validator, watch
from decoding_lab.ui.compare.layout import COL_KEYS, MAX_COLS, SAMPLE_ONLY, SETTING_COL_KEYS


def _seeded(settings: Any) -> Any:
    """``settings`` with a seed: a column left unseeded draws a fresh one, as ``iter_sample`` does."""
    import secrets
    return settings if settings.seed is not None else settings.replace(seed=secrets.randbelow(1 << 20))


def render(p: CompareParts, lang: str, results: views.Results, ncols: int) -> dict[Any, Any]:
    """Every view of the tab for ``results``."""
    out: dict[Any, Any] = dict(zip(p.outs, views.outputs_html(results, ncols, len(p.outs), lang)))
    out[p.entropy] = views.entropy_figure(results, lang)
    out[p.table] = views.metrics_table(results, lang)
    return out


def relabel(p: CompareParts, lang: str, results: Any) -> dict[Any, Any]:
    return render(p, lang, results or [], len(results or []))


def column_values(spec: dict[str, Any]) -> dict[str, Any]:
    """A lesson's compare column (``{strategy, settings, num_beams, length_penalty}``) -> the
    values of a column's controls, keyed like ``COL_KEYS``."""
    s = preset_settings(spec)
    order = s.order if isinstance(s.order, str) and s.order in PRESET_ORDERS else "transformers"
    values = values_from_settings(s)
    return {"strategy": spec.get("strategy", "sample"), **{k: values[k] for k in PARAMS}, "order": order,
            "num_beams": spec.get("num_beams", 4), "length_penalty": spec.get("length_penalty", 1.0)}


def fill(p: CompareParts, preset: dict[str, Any], lang: str) -> dict[Any, Any]:
    """A lesson's preset in the tab: model, prompt, format, length and its columns."""
    columns = [column_values(c) for c in preset.get("compare", [])][:MAX_COLS]
    out: dict[Any, Any] = {p.model: preset.get("model") or p.model.value, p.prompt: preset.get("prompt", ""),
                           p.chat: "chat" if preset.get("chat", True) else "raw", p.ncols: max(2, len(columns)),
                           p.max_new: int(preset.get("max_new_tokens", 40))}
    for col, values in zip(p.cols, columns):
        out.update({col[k]: values[k] for k in col})
    return out


def fill_outputs(p: CompareParts) -> list[Any]:
    return [p.model, p.prompt, p.chat, p.max_new, p.ncols, *[c[k] for c in p.cols for k in c]]


def column_check(i: int, key: str) -> Check:
    """Column ``i``'s ``key`` as the request reads it: a knob the column's strategy hides is not
    read (``ColumnSpec.from_values``), so it is not checked either."""
    def check(value: Any, values: dict[str, Any]) -> Any:
        if key in SAMPLE_ONLY and values.get(f"c{i}_strategy") != "sample":
            return value
        return param_check(key)(value, values)
    return check


def run_checks() -> dict[str, Check]:
    """What Run checks beside each control before it starts (``common.validate``); the request
    checks the same again, and the beam knobs, for API callers."""
    return {"model": choice_check("model", model_names), "chat": choice_check("prompt format", lambda: ("chat", "raw")),
            "ncols": number_check("columns", 2, MAX_COLS, integer=True),
            "max_new_tokens": number_check("max new tokens", 1, MAX_NEW_TOKENS, integer=True),
            **{f"c{i}_strategy": choice_check("strategy", lambda: ("greedy", "beam", "sample")) for i in range(MAX_COLS)},
            **{f"c{i}_order": choice_check("stage order", lambda: tuple(PRESET_ORDERS)) for i in range(MAX_COLS)},
            **{f"c{i}_{k}": column_check(i, k) for i in range(MAX_COLS) for k in SETTING_COL_KEYS}}


def wire(ctx: TabContext, p: CompareParts) -> dict[str, Any]:
    """Wire the tab's events; returns the ones the page may chain or cancel."""

    def on_run(v: dict[str, Any]):
        from decoding_lab.models import get_model
        from decoding_lab.strategies import ITER_STRATEGIES
        from decoding_lab.strategies.columns import ROW_STRATEGIES, iter_columns
        lang, req = v["lang"], CompareRequest.from_inputs(v)
        lm = get_model(req.model)
        ids = lm.encode_prompt(req.prompt, req.chat)
        # Greedy and sampling columns run as one batch (one prefill, one forward a step for all
        # of them); each beam column is a batch of its own. Each source is stepped in turn.
        batched = [i for i, c in enumerate(req.columns) if c.strategy in ROW_STRATEGIES]
        sources: list[tuple[list[int], Any]] = []
        from decoding_lab.strategies.engine_samples import iter_engine_sample
        if lm.caps.whole_samples:
            # A served model's sampled column is the engine's own sample, drawn whole in one request
            # (what a deployment gets); its greedy column stays ours, one token per request over the
            # server's top-N (the argmax is exact there, and it keeps each step's entropy).
            drawn = [i for i in batched if req.columns[i].strategy == "sample"]
            batched = [i for i in batched if i not in drawn]
            sources += [([i], iter_engine_sample(lm, ids, _seeded(req.columns[i].settings), req.max_new_tokens))
                        for i in drawn]
        # A backend that runs one sequence per cache (llama.cpp's, a server's) gets one batch per column.
        for group in ([[i] for i in batched] if not lm.caps.batch else [batched] if batched else []):
            sources.append((group, iter_columns(lm, ids, [(req.columns[i].strategy, req.columns[i].settings)
                                                          for i in group], req.max_new_tokens)))
        sources += [([i], ITER_STRATEGIES[c.strategy](lm, ids, c.settings, max_new_tokens=req.max_new_tokens,
                                                       **c.kwargs))
                    for i, c in enumerate(req.columns) if c.strategy not in ROW_STRATEGIES]
        labels = [c.label(i, lang) for i, c in enumerate(req.columns)]
        current: list = [(label, None) for label in labels]
        running: list[Any] = [gen for _, gen in sources]
        last_full = 0.0
        while any(g is not None for g in running):
            for k, (cols, _) in enumerate(sources):   # one step of every running source, in turn
                if running[k] is None:
                    continue
                try:
                    step = next(running[k])
                except StopIteration:
                    running[k] = None
                    continue
                results = step if isinstance(step, list) else [step]
                for i, res in zip(cols, results):
                    current[i] = (labels[i], res)
                if all(r.done for r in results):
                    running[k] = None
            # texts after every round; the plot and table at most once a second (and at the end)
            now = time.perf_counter()
            if all(g is None for g in running) or now - last_full >= 1.0:
                last_full = now
                yield {**render(p, lang, current, len(req.columns)), p.results: list(current), p.request: req}
            else:
                yield {**{p.outs[i]: views.output_html(label, res, lang) for i, (label, res) in enumerate(current)},
                       p.results: list(current), p.request: req}

    for i, (c, note) in enumerate(zip(p.cols, p.notes)):
        def on_strategy(v: dict[str, Any], c: dict[str, Any] = c, note: Any = note) -> dict[Any, Any]:
            # show only the knobs the chosen strategy uses, and say why the others are gone
            sampling, beam = v["strategy"] == "sample", v["strategy"] == "beam"
            return {**{c[k]: gr.update(visible=sampling) for k in SAMPLE_ONLY}, note: gr.update(visible=not sampling),
                    c["num_beams"]: gr.update(visible=beam), c["length_penalty"]: gr.update(visible=beam)}
        c["strategy"].change(named(on_strategy, ["strategy"]), [c["strategy"]],
                             [*(c[k] for k in SAMPLE_ONLY), note, c["num_beams"], c["length_penalty"]],
                             api_name=f"compare_strategy_{i}", api_visibility="private")

    run_in = {"lang": ctx.lang_state, "results": p.results, "model": p.model, "prompt": p.prompt, "chat": p.chat,
              "ncols": p.ncols, "max_new_tokens": p.max_new,
              **{f"c{i}_{k}": c[k] for i, c in enumerate(p.cols) for k in COL_KEYS}}
    inputs, names = inputs_of(run_in)
    run_ev = p.run.click(model_event(on_run, names, ctx.jobs),  # one model job per tab at a time
                         inputs, [*p.outs, p.entropy, p.table, p.results, p.request], api_name="compare_run",
                         concurrency_id="model", show_progress="minimal", validator=validator(names, run_checks()))
    p.stop.click(None, None, None, cancels=[run_ev], api_visibility="private")
    # each column's settings, checked beside their controls as they are typed (``common.validate``)
    watch(ctx.lang_state, {"ncols": p.ncols, "max_new_tokens": p.max_new,
                           **{f"c{i}_{k}": c[k] for i, c in enumerate(p.cols) for k in ("strategy", *SETTING_COL_KEYS)}},
          run_checks())

    def on_ncols(v: dict[str, Any]) -> dict[Any, Any]:
        return {g: gr.update(visible=i < int(v["n"])) for i, g in enumerate(p.groups)}

    p.ncols.change(named(on_ncols, ["n"]), [p.ncols], p.groups, api_name="compare_columns")

    @guarded
    def on_export(v: dict[str, Any]) -> dict[Any, Any]:
        from decoding_lab.ui.common.export import write_files
        results, req = v["results"], v["request"]
        if not results or req is None:
            raise SettingsError("nothing to export yet: run a comparison first")
        # the request first (model, prompt text, format, length, every column's settings), so the
        # file alone runs again; then what each column produced ("column" indexes "columns")
        seeds = [r.settings.get("seed_used") if r is not None else None for _, r in results]
        payload = {**req.to_json(seeds),
                   "runs": [{"label": label, "column": i, **r.to_json()}
                            for i, (label, r) in enumerate(results) if r is not None]}
        table = views.metrics_table(results, "en")
        # the CSV names what was run on every row too (a spreadsheet row read alone says it)
        ran = [req.model, req.prompt, "chat" if req.chat else "raw"]
        files = write_files("compare", payload, [*table.columns, "model", "prompt", "format"],
                            [[*row, *ran] for row in table.values.tolist()])
        return {p.files: gr.update(value=files, visible=True)}

    inputs, names = inputs_of({"lang": ctx.lang_state, "results": p.results, "request": p.request})
    export_ev = p.export.click(named(on_export, names), inputs, [p.files], api_name="compare_export")

    send.wire(ctx, p, ColumnSpec.from_values)
    return {"run": run_ev, "export": export_ev}

