() => {
  if (window.__dlTeacherKeys) return;
  window.__dlTeacherKeys = true;
  document.addEventListener('keydown', (e) => {
    const box = document.querySelector('#teacher-mode input[type=checkbox]');
    const main = document.querySelector('#lesson-main');
    if (!box || !box.checked || !main || main.offsetParent === null) return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    if (t && (/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && t.type !== 'checkbox' || t.isContentEditable)) return;
    const id = {ArrowRight: '#teacher-next', PageDown: '#teacher-next',
                ArrowLeft: '#teacher-prev', PageUp: '#teacher-prev'}[e.key];
    const btn = id && document.querySelector(id);
    if (!btn) return;
    e.preventDefault();
    btn.click();
  });
}
