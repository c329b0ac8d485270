() => {
  if (window.__beamAncestry) return;
  window.__beamAncestry = setInterval(() => {
    const gd = document.querySelector('#beam-chart .js-plotly-plot');
    if (!gd || gd.__ancestry || !window.Plotly || !gd.on) return;
    gd.__ancestry = true;
    const at = () => (gd.data || []).findIndex(d => d.meta === 'ancestry');
    gd.on('plotly_hover', ev => {
      const i = at(), cd = ev.points && ev.points[0] && ev.points[0].customdata;
      if (i < 0 || typeof cd !== 'string') return;
      const [xs, ys] = cd.split('|').map(part => part.split(',').map(Number));
      window.Plotly.restyle(gd, {x: [xs], y: [ys]}, [i]);
    });
    gd.on('plotly_unhover', () => { const i = at(); if (i >= 0) window.Plotly.restyle(gd, {x: [[]], y: [[]]}, [i]); });
  }, 400);
}
