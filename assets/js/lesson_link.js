(q) => { const main = document.querySelector('#lesson-main');
  if (q && main && main.offsetParent !== null) {
    const p = new URLSearchParams(q); window.dlSetPage({lesson: p.get('lesson'), screen: p.get('screen')}); }
  return []; }
