// A refusal beside a control (ui/common/validate.py) that appears outside the window is scrolled into
// view: on a phone the settings come after the Step button, and at 1366 x 768 the lower controls are
// below the fold, so a refused Step would otherwise seem to do nothing. A refusal of the control being
// typed in is beside it already, in view, and moves nothing. The first new one of a batch is shown.
(function () {
  const seen = new WeakSet();
  function check() {
    let shown = false;
    document.querySelectorAll('.validation-error').forEach(function (el) {
      if (seen.has(el)) return;
      seen.add(el);
      const b = el.getBoundingClientRect();
      if (shown || (b.width === 0 && b.height === 0)) return;   // hidden (another tab, a folded box)
      if (b.top >= 0 && b.bottom <= window.innerHeight) return;
      shown = true;
      el.scrollIntoView({block: 'center', behavior: 'instant'});
    });
  }
  let queued = false;
  new MutationObserver(function () {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () { queued = false; check(); });
  }).observe(document.documentElement, {childList: true, subtree: true});
})();
