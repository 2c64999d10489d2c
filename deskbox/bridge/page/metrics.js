// Evaluated by the CDP bridge before each read: the page's window metrics and a key
// that changes when this document or a same-origin frame in it changed (watch.js).
(() => {
  const key = Symbol.for('deskbox.changes');
  const s = window[key];
  const counts = [];
  const visit = win => {
    let t;
    try { t = win[key]; win.document; } catch (e) { return; }
    counts.push(t ? `${t.doc}:${t.n}` : '?');
    if (t) t.notified = false;
    for (let i = 0; i < win.frames.length; i++) visit(win.frames[i]);
  };
  visit(window);
  return JSON.stringify({
    changes: counts.join(' '), doc: s ? s.doc : null, url: location.href, outerWidth, outerHeight, innerWidth, innerHeight,
    devicePixelRatio, scrollX, scrollY, screenX, screenY,
    visibility: document.visibilityState, title: document.title,
  });
})()
