"""Alternatives in the text: hovering, focusing or tapping a generated token opens a popover with
the top alternatives at that step (rank, the model's p, and what decoding did with each: kept,
chosen, or cut by a named stage). Clicking an alternative forces it at that step: the steps
after it are saved as a branch (``Stepper.rewind``) and the run continues from the new token.

The server writes each token's alternatives into a ``data-alts`` attribute (JSON, escaped); one
script (``POPOVER_JS``, the generated-text component's ``js_on_load``) draws the popover with
``textContent`` only (a token's text can never become markup) and, on a click, writes
``"step:token_id"`` into a hidden box and presses a hidden button (``handlers.on_force_at``)."""

from __future__ import annotations

import html
import json
from typing import Any

from decoding_lab.ui.common.plots import show_token
from decoding_lab.ui.explorer.chart import fmt_p
from decoding_lab.ui.explorer.strings import tr

N_ALTERNATIVES = 6


def alternatives(trace: Any, lang: str) -> list[dict[str, Any]]:
    """The first ``N_ALTERNATIVES`` recorded rows of a step by raw rank, plus the chosen token."""
    rows = sorted(trace.top, key=lambda r: r.rank)[:N_ALTERNATIVES]
    if all(r.token_id != trace.chosen_token_id for r in rows):
        rows += [r for r in trace.top if r.token_id == trace.chosen_token_id]
    out = []
    for r in rows:
        if r.token_id == trace.chosen_token_id:
            fate, kind = tr(lang, "pop_chosen", p=fmt_p(r.p_final)), "chosen"
        elif r.cut_by:
            fate, kind = tr(lang, "pop_cut", stage=r.cut_by), "cut"
        else:
            fate, kind = tr(lang, "pop_kept", p=fmt_p(r.p_final)), "kept"
        out.append({"id": r.token_id, "t": show_token(r.token), "r": r.rank, "p": fmt_p(r.p_raw), "f": fate, "k": kind})
    return out


def token_attrs(trace: Any, lang: str) -> str:
    """The attributes of a generated token's span that the popover reads."""
    head = tr(lang, "pop_head", step=trace.step)
    hint = tr(lang, "pop_hint")
    alts = json.dumps(alternatives(trace, lang), ensure_ascii=False)
    return (f"tabindex='0' data-head='{html.escape(head, quote=True)}' data-hint='{html.escape(hint, quote=True)}' "
            f"data-alts='{html.escape(alts, quote=True)}'")


POPOVER_JS = """
(() => {
  if (element.__dlPopover) return;   // once per component, however often it re-renders
  element.__dlPopover = true;
  let pop = document.getElementById('gen-pop');
  const fresh = !pop;
  if (fresh) { pop = document.createElement('div'); pop.id = 'gen-pop'; pop.className = 'gen-pop';
               pop.setAttribute('role', 'dialog'); document.body.appendChild(pop); }
  let timer = null;
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls;
                                   if (text !== undefined) e.textContent = text; return e; };
  const hide = () => { pop.classList.remove('open'); };
  const later = () => { clearTimeout(timer); timer = setTimeout(hide, 300); };
  function show(tok) {
    clearTimeout(timer);
    if (pop.classList.contains('open') && pop.dataset.step === tok.dataset.step) return;
    const alts = JSON.parse(tok.dataset.alts || '[]');
    pop.replaceChildren(el('div', 'gen-pop-head', tok.dataset.head));
    for (const a of alts) {
      const b = el('button', 'gen-alt ' + a.k); b.type = 'button';
      b.dataset.step = tok.dataset.step; b.dataset.id = a.id; b.disabled = a.k === 'chosen';
      b.append(el('span', 'gen-alt-rank', '#' + a.r), el('span', 'gen-alt-tok', a.t),
               el('span', 'gen-alt-p', 'p ' + a.p), el('span', 'gen-alt-fate', a.f));
      pop.append(b);
    }
    pop.append(el('div', 'gen-pop-hint', tok.dataset.hint));
    pop.dataset.step = tok.dataset.step;
    pop.classList.add('open');
    const r = tok.getBoundingClientRect(), w = pop.offsetWidth, h = pop.offsetHeight;
    pop.style.left = Math.max(4, Math.min(r.left, innerWidth - w - 4)) + 'px';
    pop.style.top = (r.bottom + h + 6 < innerHeight ? r.bottom + 4 : Math.max(4, r.top - h - 4)) + 'px';
  }
  const tokOf = (e) => e.target.closest && e.target.closest('.gen-tok');
  element.addEventListener('mouseover', (e) => { const t = tokOf(e); if (t) show(t); });
  element.addEventListener('mouseout', (e) => { if (tokOf(e)) later(); });
  element.addEventListener('focusin', (e) => { const t = tokOf(e); if (t) show(t); });
  element.addEventListener('click', (e) => { const t = tokOf(e); if (t) show(t); });
  if (!fresh) return;
  pop.addEventListener('mouseenter', () => clearTimeout(timer));
  pop.addEventListener('mouseleave', later);
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') hide(); });
  window.addEventListener('scroll', hide, true);
  pop.addEventListener('click', (e) => {
    const b = e.target.closest('.gen-alt'); if (!b || b.disabled) return;
    const box = document.querySelector('#alt-pick-box textarea, #alt-pick-box input');
    const btn = document.querySelector('#alt-pick-btn');
    if (!box || !btn) return;
    box.value = b.dataset.step + ':' + b.dataset.id;
    box.dispatchEvent(new Event('input', {bubbles: true}));
    hide();
    setTimeout(() => btn.click(), 60);
  });
})();
"""
