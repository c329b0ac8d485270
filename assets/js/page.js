// The page's own script, loaded once in the page head (ui/page.py). Its settings come from the
// server as JSON in window.DL_CONFIG: pageKeys (the keys the page writes beside the Explorer's run)
// and gradioZh (gradio's own interface words in Chinese).
// The address bar is the share link. The Explorer writes its run (model, prompt, settings,
// steps, forced tokens); the page adds the tab, the lesson and its screen. Each writer keeps
// the other's keys.
// Gradio's page carries <base href="./">. Where a page has a base, plotly writes each chart's
// clip paths and legend clips as url('<the address at the chart's first draw>#clip…'), and once
// the address bar changes (every step writes the run into it) those point at another document:
// the browser fetches that address (the whole page, rendered again by the server) to look for the
// clip, the clip is not found, and each chart draws unclipped. "./" names the folder a relative
// address already resolves against, so without it every path resolves the same and only
// "#…"-only references change: they now name this document, which is what plotly's url(#clip…)
// means. (It runs before any chart is drawn: the Explorer's first chart comes with the first step.)
(function () {
  const base = document.querySelector('base[href]');
  if (base && base.href === new URL('./', location.href).href) base.removeAttribute('href');
})();
(function () {
  const PAGE = window.DL_CONFIG.pageKeys;
  function write(params) {
    const q = params.toString();
    history.replaceState(null, '', q ? '?' + q : location.pathname);
  }
  window.dlSetRun = function (q) {
    const now = new URLSearchParams(location.search), next = new URLSearchParams(q);
    PAGE.forEach(function (k) { if (now.has(k)) next.set(k, now.get(k)); });
    write(next);
  };
  window.dlSetPage = function (pairs) {
    if (!window.dlLinkRead) return;   // the page has not read its link yet: leave it as opened
    const now = new URLSearchParams(location.search);
    Object.keys(pairs).forEach(function (k) {
      if (pairs[k] === null || pairs[k] === '') now.delete(k); else now.set(k, String(pairs[k]));
    });
    write(now);
  };
  // The language and teacher mode travel in the link too: a copied Chinese lesson opens in Chinese,
  // a teacher's link opens in large type. (A visitor's change only: the page's own restore from a
  // link changes them without a DOM event, and the link already says so.)
  document.addEventListener('change', function (e) {
    const box = e.target;
    if (!box || !box.closest) return;
    if (box.closest('#lang-radio')) window.dlSetPage({lang: box.value === 'zh' ? 'zh' : null});
    else if (box.closest('#teacher-mode')) window.dlSetPage({teacher: box.checked ? '1' : null});
  }, true);
  // "Copy link": the address bar as it is now, to the clipboard; the button says it worked.
  document.addEventListener('click', function (e) {
    const btn = e.target.closest && e.target.closest('#copy-link-btn');
    if (!btn) return;
    const url = location.href, zh = !!document.querySelector('#lang-radio input[value="zh"]:checked');
    // The confirmation is drawn by CSS over the label (assets/app.css, .link-copied): writing the
    // button's text here would detach the text node gradio relabels on a language switch.
    const done = function () {
      btn.dataset.copied = url;
      btn.dataset.copiedMsg = zh ? '✓ 链接已复制' : '✓ Link copied';
      btn.classList.add('link-copied');
      setTimeout(function () { btn.classList.remove('link-copied'); }, 2000);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(url).then(done, done);
    } else {   // plain http on a LAN: the old way
      const box = document.createElement('textarea');
      box.value = url; document.body.appendChild(box); box.select();
      try { document.execCommand('copy'); } finally { box.remove(); }
      done();
    }
  }, true);
})();
// A slider's number box clamps a typed value into its range when it loses focus: 1.5 typed for
// top-p would silently become 1 (off). The box keeps what was typed instead, and the value goes
// to the page's checks, which refuse it beside the control (``common.validate``).
document.addEventListener('blur', function (e) {
  const box = e.target;
  if (!box || !box.matches || !box.matches('input[type=number][data-testid=number-input]')) return;
  const v = parseFloat(box.value), lo = parseFloat(box.min), hi = parseFloat(box.max);
  if (isFinite(v) && ((isFinite(lo) && v < lo) || (isFinite(hi) && v > hi))) e.stopImmediatePropagation();
}, true);
// Clicking a bar of the distribution chart forces that token (a new branch).
(function () {
  function attach() {
    const el = document.querySelector('#dist-chart .js-plotly-plot');
    if (!el || el.__dlBound || !el.on) return;
    el.__dlBound = true;
    el.on('plotly_click', function (d) {
      if (!d || !d.points || !d.points.length) return;
      const box = document.querySelector('#force-token-box textarea, #force-token-box input');
      const btn = document.querySelector('#force-token-btn');
      if (!box || !btn) return;
      box.value = String(d.points[0].customdata);
      box.dispatchEvent(new Event('input', {bubbles: true}));
      setTimeout(function () { btn.click(); }, 60);
    });
  }
  new MutationObserver(attach).observe(document.documentElement, {childList: true, subtree: true});
})();
// Gradio's own words (the footer, icon buttons' tooltips, a toast's title, which gradio draws from
// the toast's kind and not from the title the app sends) follow the browser's locale, not the
// page's language switch. In Chinese, those shown here are written over (and restored in English).
(function () {
  const ZH = window.DL_CONFIG.gradioZh;
  function zh() { return !!document.querySelector('#lang-radio input[value="zh"]:checked'); }
  function swap() {
    const on = zh();
    document.querySelectorAll('footer *, .toast-title, .toast-title *').forEach(function (el) {
      el.childNodes.forEach(function (n) {
        if (n.nodeType !== 3) return;
        const t = n.textContent.trim(), en = n.__dlEn || t;
        if (!ZH[en]) return;
        n.__dlEn = en;
        const want = on ? ZH[en] : en;
        if (t !== want) n.textContent = n.textContent.replace(t, want);
      });
    });
    document.querySelectorAll('[aria-label], [title]').forEach(function (el) {
      ['aria-label', 'title'].forEach(function (a) {
        const v = el.getAttribute(a), key = '__dlEn_' + a;
        if (!v) return;
        const en = el[key] || v;
        if (!ZH[en]) return;
        el[key] = en;
        const want = on ? ZH[en] : en;
        if (v !== want) el.setAttribute(a, want);
      });
    });
  }
  let queued = false;
  function later() { if (!queued) { queued = true; requestAnimationFrame(function () { queued = false; swap(); }); } }
  new MutationObserver(later).observe(document.documentElement,
    {childList: true, subtree: true, attributes: true, attributeFilter: ['aria-label', 'title', 'checked']});
  document.addEventListener('change', later, true);
})();
// A tab was chosen: it goes into the address bar; the Lessons tab also puts its lesson and screen
// back. Plots drawn while their tab was hidden have no width; a resize makes plotly redo the layout.
window.dlOnTab = function (name) {
  window.dlSetPage({tab: name});
  if (name === 'lessons') {
    // The box is empty until the lesson's restore has drawn it (a link that opens the Lessons tab
    // shows the tab first): the address bar keeps the link's lesson and screen until then.
    const b = document.querySelector('#lesson-link textarea, #lesson-link input');
    if (b && b.value) {
      const p = new URLSearchParams(b.value);
      window.dlSetPage({lesson: p.get('lesson'), screen: p.get('screen')});
    }
  }
  setTimeout(function () { window.dispatchEvent(new Event('resize')); }, 80);
};
