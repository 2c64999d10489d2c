// Called by the CDP bridge (deskbox/bridge/browser.py, _take): what changed since its
// last call. __MAX_TRACKED__ and __MAX_MOVED__ are the bridge's limits.
function (reset, watch) {
  const key = Symbol.for('deskbox.changes');
  const GEO = Symbol.for('deskbox.boxes');
  const MAX_TRACKED = __MAX_TRACKED__, MAX_MOVED = __MAX_MOVED__;
  const measure = (reset, roots, lists) => {
    const sx = window.scrollX, sy = window.scrollY;
    const out = ['G', sx, sy];
    let many = false;
    const put = (n, r) => {
      if (out.length >= 3 + MAX_MOVED * 5) many = true;
      else out.push(n, r.x + sx, r.y + sy, r.width, r.height);
    };
    const elementsUnder = root => {  // the root and the elements in it, through open shadow roots
      const found = [];
      const walk = top => {
        const w = document.createTreeWalker(top, NodeFilter.SHOW_ELEMENT);
        for (let n = top.nodeType === 1 ? top : w.nextNode(); n; n = w.nextNode()) {
          found.push(n);
          if (n.shadowRoot) walk(n.shadowRoot);
        }
      };
      if (root.nodeType === 1 || root.nodeType === 9 || root.nodeType === 11) walk(root);
      return found;
    };
    const g = window[GEO];
    if (g === 'too many' && !reset) return null;  // measured again only after the next full read
    if (reset || !g) {
      const els = elementsUnder(document);
      const rects = [];
      if (els.length > MAX_TRACKED) { window[GEO] = 'too many'; return null; }
      for (const e of els) {
        const r = e.getBoundingClientRect();
        rects.push(r.x + sx, r.y + sy, r.width, r.height, e.scrollLeft, e.scrollTop);
      }
      window[GEO] = {els, rects, known: new WeakSet(els)};
      return null;
    }
    const {els, rects, known} = g;
    const nextEls = [], nextRects = [];
    const texts = new Set();
    const textOf = n => {
      if (!n) return;
      for (const c of n.childNodes) if (c.nodeType === 3) texts.add(c);
      if (n.shadowRoot) textOf(n.shadowRoot);
    };
    const track = (e, r) => {
      nextEls.push(e); nextRects.push(r.x + sx, r.y + sy, r.width, r.height, e.scrollLeft, e.scrollTop);
    };
    // What an input, a text area or a list box scrolls lives in its user-agent shadow
    // tree, where no script reaches.
    const OPAQUE = new Set(['INPUT', 'TEXTAREA', 'SELECT']);
    for (let i = 0; i < els.length; i++) {
      const e = els[i];
      if (!e.isConnected) { known.delete(e); continue; }
      const r = e.getBoundingClientRect(), j = i * 6;
      if (r.x + sx !== rects[j] || r.y + sy !== rects[j + 1] || r.width !== rects[j + 2] || r.height !== rects[j + 3]) {
        // Its text moved with it, and its siblings' text flows around it.
        put(e, r); textOf(e); textOf(e.parentNode);
      }
      if (e.scrollLeft !== rects[j + 4] || e.scrollTop !== rects[j + 5]) {
        // It scrolled its content: the elements in it moved (and are found so), the
        // text right in it too.
        if (OPAQUE.has(e.tagName)) many = true;
        textOf(e);
      }
      track(e, r);
    }
    for (const root of roots) {
      if (root.nodeType === 3) texts.add(root);
      for (const e of elementsUnder(root)) {
        textOf(e);
        if (known.has(e)) continue;
        known.add(e);
        const r = e.getBoundingClientRect();
        put(e, r); track(e, r);
      }
      textOf(root.parentNode);
    }
    for (const p of lists) textOf(p);
    const range = document.createRange();
    for (const t of texts) {
      if (!t.isConnected) continue;
      range.selectNodeContents(t);
      const r = range.getBoundingClientRect();
      if (r.width || r.height || t.data.trim()) put(t, r);
    }
    g.els = nextEls; g.rects = nextRects;
    if (nextEls.length > MAX_TRACKED) window[GEO] = 'too many';
    return many || nextEls.length > MAX_TRACKED ? null : out;
  };
  const REFS = ['aria-labelledby', 'aria-describedby', 'aria-controls', 'aria-owns', 'aria-activedescendant',
                'aria-details', 'aria-errormessage', 'aria-flowto'];
  const subtree = [], parents = [], single = [], docs = [];
  let overflow = false, full = false;
  const visit = win => {
    let s, doc;
    try { doc = win.document; s = win[key]; } catch (e) { return; }
    if (!doc) return;
    if (!s) {
      // A frame that loaded before the bridge attached: watch it from now on; what
      // changed before is unknown.
      try { win.Function(watch)(); s = win[key]; } catch (e) { /* a sandboxed frame without scripts */ }
      overflow = true;
    }
    docs.push(s ? s.doc : '?');
    if (s) {
      s.record(s.observer.takeRecords());
      overflow = overflow || s.overflow;
      const mine = [...s.subtree].filter(n => n.isConnected);
      const lists = [...s.children].filter(n => n.isConnected);
      const alone = [...s.node].filter(n => n.isConnected);
      s.subtree.clear(); s.children.clear(); s.node.clear(); s.overflow = false;
      if (!reset) {
        if (mine.some(n => n === doc || n === doc.documentElement || n === doc.body)) full = true;
        const touched = [...mine, ...lists];
        const refs = touched.length ? doc.querySelectorAll(REFS.map(a => `[${a}]`).join(',')) : [];
        for (const n of touched) {
          const inside = mine.some(m => m !== n && m.contains(n));
          if (inside) continue;
          (mine.includes(n) ? subtree : parents).push(n);
          const el = n.nodeType === 1 ? n : n.parentElement;
          if (!el) continue;
          const label = el.closest && el.closest('label');
          if (label && label.control) single.push(label.control);
          for (const l of el.querySelectorAll ? el.querySelectorAll('label') : []) if (l.control) single.push(l.control);
          for (const r of refs) {
            for (const a of REFS) {
              for (const id of (r.getAttribute(a) || '').split(/\s+/)) {
                const t = id && doc.getElementById(id);
                if (t && (t.contains(n) || n.contains(t))) single.push(r);
              }
            }
          }
        }
        single.push(...alone);
      }
    }
    for (let i = 0; i < win.frames.length; i++) visit(win.frames[i]);
  };
  visit(window);
  const windows = docs.join(' ');
  // With one document (no same-process frames) the page keeps every element's box as
  // last measured, so that the bridge learns what moved from the page instead of a new
  // DOMSnapshot of everything: ['G', scrollX, scrollY, (node, x, y, width, height)...]
  // for the elements whose box changed, the new ones, and the text nodes around them;
  // 'X' when it cannot tell (first measure, too much moved, frames).
  const moved = docs.length === 1 ? measure(reset, subtree, parents) : (window[GEO] = null);
  if (reset) return windows;
  if (full) return 'full';
  return [windows, overflow, 'S', ...subtree, 'C', ...parents, 'N', ...new Set(single), ...(moved || ['X'])];
}
