// Charts sized for where they are read, redone each time gradio draws a figure.
//
// * Teacher mode (the Lessons tab's box; a link's teacher=1 ticks it; body.dl-teacher): every chart outside the
//   Lessons tab gets projection-size type: tick labels, axis and chart titles, legend,
//   annotations and the hover box. (Lesson plots draw their own large type on the server.)
// * A phone (a window under 720 px): the Explorer's distribution chart labels every token, turned
//   upright, instead of plotly's every other one.
//
// The server's figure is left as it was sent; what is changed here is remembered per figure and
// put back when teacher mode goes off.
(function () {
  const TEACHER = {text: 24, title: 28, axisTitle: 26, hover: 24, height: 1.4};
  const PHONE_PX = 720;

  // The box lives in the Lessons tab, which gradio draws only once it is opened; until then the
  // address bar says (the page writes teacher=1 there as the box changes, and a link carries it).
  function teacherOn() {
    const box = document.querySelector('#teacher-mode input[type=checkbox]');
    if (box) return box.checked;
    return new URLSearchParams(location.search).get('teacher') === '1';
  }
  function get(obj, path) {
    return path.split('.').reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }
  // The layout changes for one figure in one mode, as plotly.relayout's {path: value}.
  function wanted(gd, teacher, phone) {
    const lay = gd.layout, out = {};
    if (teacher) {
      out['font.size'] = TEACHER.text;
      out['title.font.size'] = TEACHER.title;
      out['legend.font.size'] = TEACHER.text;
      out['hoverlabel.font.size'] = TEACHER.hover;
      Object.keys(lay).forEach(function (k) {
        if (!/^[xy]axis\d*$/.test(k)) return;
        out[k + '.tickfont.size'] = TEACHER.text;
        out[k + '.title.font.size'] = TEACHER.axisTitle;
      });
      (lay.annotations || []).forEach(function (a, i) {
        out['annotations[' + i + '].font.size'] = Math.max(TEACHER.text, Math.round(((a.font && a.font.size) || 12) * 1.7));
      });
      if (lay.height) out.height = Math.round(lay.height * TEACHER.height);
      const m = lay.margin || {};
      out['margin.t'] = Math.max(m.t || 0, 2 * TEACHER.title + 16);
      out['margin.l'] = Math.max(m.l || 0, 3 * TEACHER.text);
    }
    if (phone && gd.closest('#dist-chart')) {   // every token's label, upright
      out['xaxis.tickmode'] = 'linear';
      out['xaxis.dtick'] = 1;
      out['xaxis.tickangle'] = -90;
      out['xaxis.tickfont.size'] = teacher ? TEACHER.text : 11;
    }
    return out;
  }
  function wantedTraces(gd, teacher) {
    if (!teacher) return {};
    const out = {'hoverlabel.font.size': gd.data.map(function () { return TEACHER.hover; })};
    if (gd.data.some(function (d) { return d.text; })) {
      out['textfont.size'] = gd.data.map(function (d) { return d.text ? TEACHER.text : get(d, 'textfont.size'); });
    }
    return out;
  }
  function fit(gd) {
    if (!gd || !gd.layout || !gd.data || !window.Plotly || gd.closest('#lesson-main')) return;
    const teacher = teacherOn(), phone = window.innerWidth < PHONE_PX;
    const mode = (teacher ? 'T' : '') + (phone ? 'P' : '');
    if (gd.__dlLayout !== gd.layout) {          // a new figure from the server: as sent, nothing changed yet
      gd.__dlLayout = gd.layout;
      gd.__dlSaved = null;
      gd.__dlMode = '';
    }
    if (gd.__dlMode === mode) return;
    // back to the figure as sent, then this mode's changes
    const undo = {}, undoTraces = {};
    if (gd.__dlSaved) {
      Object.keys(gd.__dlSaved.layout).forEach(function (k) {
        const v = gd.__dlSaved.layout[k];
        undo[k] = v === undefined ? null : v;
      });
      Object.keys(gd.__dlSaved.traces).forEach(function (k) {
        undoTraces[k] = gd.__dlSaved.traces[k].map(function (v) { return v === undefined ? null : v; });
      });
    }
    const lay = wanted(gd, teacher, phone), tr = wantedTraces(gd, teacher);
    const saved = {layout: {}, traces: {}};
    Object.keys(lay).forEach(function (k) {
      const before = gd.__dlSaved && k in gd.__dlSaved.layout ? gd.__dlSaved.layout[k] : get(gd.layout, k.replace(/\[(\d+)\]/g, '.$1'));
      saved.layout[k] = before;
    });
    Object.keys(tr).forEach(function (k) {
      saved.traces[k] = gd.__dlSaved && gd.__dlSaved.traces[k] ? gd.__dlSaved.traces[k]
        : gd.data.map(function (d) { return get(d, k); });
      tr[k] = tr[k].map(function (v) { return v === undefined ? null : v; });
    });
    // what an earlier mode changed and this one does not stays as sent
    if (gd.__dlSaved) {
      Object.keys(gd.__dlSaved.layout).forEach(function (k) { if (!(k in saved.layout)) delete saved.layout[k]; });
    }
    gd.__dlMode = mode;
    gd.__dlSaved = saved;
    const layoutUpdate = Object.assign({}, undo, lay), traceUpdate = Object.assign({}, undoTraces, tr);
    if (Object.keys(traceUpdate).length) window.Plotly.restyle(gd, traceUpdate);
    if (Object.keys(layoutUpdate).length) window.Plotly.relayout(gd, layoutUpdate);
    gd.__dlLayout = gd.layout;
  }
  function fitAll() { document.querySelectorAll('.js-plotly-plot').forEach(fit); }
  function bind() {
    document.querySelectorAll('.js-plotly-plot').forEach(function (gd) {
      if (gd.__dlFitBound || !gd.on) return;
      gd.__dlFitBound = true;
      gd.on('plotly_afterplot', function () { fit(gd); });
      fit(gd);
    });
  }
  window.dlFitPlots = fitAll;
  new MutationObserver(bind).observe(document.documentElement, {childList: true, subtree: true});
  document.addEventListener('change', function (e) {
    if (e.target && e.target.closest && e.target.closest('#teacher-mode')) setTimeout(follow, 0);
  }, true);
  // A link's teacher=1 ticks the box from the server, which sends no DOM event: look twice a second.
  // The body carries the mode as a class too, for the Explorer's large-type CSS (assets/app.css).
  let was = null;
  function follow() {
    const now = teacherOn();
    if (now === was) return;
    was = now;
    document.body.classList.toggle('dl-teacher', now);
    fitAll();
  }
  setInterval(follow, 500);
  let wide = window.innerWidth >= PHONE_PX;
  window.addEventListener('resize', function () {
    const now = window.innerWidth >= PHONE_PX;
    if (now !== wide) { wide = now; fitAll(); }
  });
})();
