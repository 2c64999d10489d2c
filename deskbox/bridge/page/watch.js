// Installed in every page and frame by the CDP bridge (deskbox/bridge/browser.py):
// a counter that moves when the DOM, the scroll position, the viewport, focus or a form
// field changes, and the elements touched since the bridge last asked. __BINDING__ is
// the name of the binding the bridge adds to the top document.
(() => {
  const key = Symbol.for('deskbox.changes');
  if (window[key]) return;
  const MAX = 256;
  // doc: this document's identity (a navigation makes a new one).
  const state = {n: 0, doc: Math.random().toString(36).slice(2), subtree: new Set(), children: new Set(), node: new Set(),
                 overflow: false, notified: false};
  Object.defineProperty(window, key, {value: state, enumerable: false});
  // Tell the bridge once that something changed (it re-arms this when it reads the page),
  // through the binding it adds to the top document.
  const notify = () => {
    if (state.notified) return;
    state.notified = true;
    let call = null;
    try { call = window.top.__BINDING__; } catch (e) { /* a cross-origin parent */ }
    if (typeof call !== 'function') call = window.__BINDING__;
    if (typeof call === 'function') { try { call(''); } catch (e) { /* not ours to fail */ } }
  };
  const add = (set, node) => {
    notify();
    if (!node) return;
    if (set.size >= MAX) state.overflow = true; else set.add(node);
  };
  // <head> has no AX nodes; what changes there (the title) shows on the document's node.
  const inHead = node => node && document.head && document.head.contains(node);
  state.record = records => {
    if (records.length) state.n++;
    for (const r of records) {
      const target = r.type === 'characterData' ? r.target.parentNode : r.target;
      if (inHead(target)) add(state.node, document);
      else if (r.type === 'childList') {
        // The parent's own list of children, and whatever came in (what left is gone).
        add(state.children, target);
        for (const n of r.addedNodes) if (n.nodeType === 1 || n.nodeType === 3) add(state.subtree, n);
      } else add(state.subtree, target);
    }
  };
  const options = {subtree: true, childList: true, attributes: true, characterData: true};
  const observer = state.observer = new MutationObserver(state.record);
  observer.observe(document, options);
  // Shadow roots are not seen from the document: observe each one as it is made (and
  // the open ones already there when this runs late).
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    observer.observe(root, options);
    return root;
  };
  const walk = root => {
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { observer.observe(el.shadowRoot, options); walk(el.shadowRoot); }
  };
  walk(document);
  const bump = () => { state.n++; notify(); };
  for (const type of ['scroll', 'resize', 'load', 'transitionend', 'animationend']) {
    window.addEventListener(type, bump, {capture: true, passive: true});
  }
  const focus = e => {
    state.n++;
    add(state.node, e.target instanceof Node ? e.target : null);
    add(state.node, document);
    // Focus moving into or out of a frame changes the documents around it too.
    for (let w = window; w !== w.parent; w = w.parent) {
      let outer;
      try { outer = w.parent[key]; } catch (e) { break; }
      if (!outer) break;
      outer.n++;
      outer.notified = false;
      for (const node of [w.parent.document, w.frameElement]) {
        if (outer.node.size >= MAX) outer.overflow = true; else if (node) outer.node.add(node);
      }
    }
  };
  window.addEventListener('focusin', focus, {capture: true, passive: true});
  window.addEventListener('focusout', focus, {capture: true, passive: true});
  for (const type of ['focus', 'blur']) {
    window.addEventListener(type, e => { if (e.target === window) { state.n++; add(state.node, document); } });
  }
  const input = e => {
    state.n++;
    const t = e.target instanceof Node ? e.target : null;
    add(state.subtree, t);
    // Checking a radio button unchecks the others of its group without an event.
    if (t && t.type === 'radio' && t.name) for (const r of document.getElementsByName(t.name)) add(state.node, r);
  };
  window.addEventListener('input', input, {capture: true, passive: true});
  window.addEventListener('change', input, {capture: true, passive: true});
})();
