"""Explorer tab, "this step under each engine order": the step on screen redone under every preset
order (transformers, vLLM, llama.cpp, llama-cpp-python) with the same settings and the same random state, side by
side: how many tokens each stage left, what the selector could pick, and the token it picked.

Engines apply the same stages in different orders, and the order changes what is cut (min-p before
or after temperature, temperature before or after top-p). Without this view one compares them by
hand: Undo, change the order, Step, for each preset. The stepper does the work, on a copy of the
visitor's run, which stays as it was."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from decoding_lab.errors import UserError
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.common.errors import localised
from decoding_lab.ui.common.markdown import code_span
from decoding_lab.ui.common.plots import show_token
from decoding_lab.ui.explorer import strings


def under_each_order(stepper: Any, settings: Any) -> list[tuple[str, Any]]:
    """(preset name, the last step redone under that order, or the ``UserError`` that refused it),
    for each preset, with ``settings`` (the ones the step ran with) in that order."""
    at = len(stepper.tokens) - 1
    out: list[tuple[str, Any]] = []
    for name in PRESET_ORDERS:
        try:
            redo = dataclasses.replace(settings, order=name)   # checked: an engine-only stage is refused
            other = copy.deepcopy(stepper)                       # the model stays shared
            try:
                other.rewind(at)
                other.set_settings(redo)
                out.append((name, other.step()))
            finally:
                other.park()     # its cache goes now, not when it is collected (``memory_budget``)
        except UserError as e:
            out.append((name, e))
    return out


def orders_md(session: Any, lang: str) -> str:
    """The table of ``under_each_order`` for the step on screen, in ``lang``."""
    st = session.stepper
    tr = lambda key, **kw: strings.tr(lang, key, **kw)  # noqa: E731
    if not st.traces:
        return tr("orders_none")
    used = getattr(session, "step_settings", [])
    at = len(st.traces) - 1
    settings = used[at] if at < len(used) and used[at] is not None else st.settings
    lines = [tr("orders_intro", step=st.traces[-1].step), "",
             f"| {tr('orders_col_order')} | {tr('orders_col_chain')} | {tr('orders_col_kept')} | "
             f"{tr('orders_col_pick')} |", "|---|---|---|---|"]
    for name, result in under_each_order(st, settings):
        mark = " ◀" if name == settings.preset else ""
        if isinstance(result, UserError):
            lines.append(f"| {name}{mark} | {tr('orders_refused', why=localised(result, lang))} | — | — |")
            continue
        chain = " → ".join(f"{s.name} {s.kept:,}" for s in result.stages) or tr("orders_no_stage")
        pick = f"{code_span(show_token(result.chosen_token))} (p {result.chosen_p_final:.3f})"
        lines.append(f"| {name}{mark} | {chain} | {result.kept_final:,} | {pick} |")
    return "\n".join(lines)
