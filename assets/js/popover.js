// The generated text's popover (ui/explorer/popover.py): a gradio js_on_load body, run with `element`
// bound to the component; the token spans carry data-head, data-hint and data-alts.
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
