// What both pages (the dev chat page, dev.js; the simulator's page, app.js) build their DOM with.

// An element: attributes (on* become listeners; null/false skipped; true is a bare attribute) and
// children (arrays flattened, null/false skipped, anything else as text).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export const pretty = (v) => JSON.stringify(v, null, 2);
export const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "");
