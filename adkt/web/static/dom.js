// What both pages (the dev chat page, dev.js; the simulator's page, app.js) build their DOM with, and
// fetch their data with (authFetch, readEvents: signed in when the server requires it).
import { askForToken, showSignedIn, storedToken } from "./signin.js";

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

// --- requests: fetch with the signed-in token (signin.js) ------------------------------------------
showSignedIn();

// fetch(), with "Authorization: Bearer <token>" once signed in. A 401 asks for a key or token and
// sends the request again with it; a refused one is asked for again, with the server's reason.
export async function authFetch(url, options = {}) {
  for (;;) {
    const token = storedToken();
    const headers = new Headers(options.headers || {});
    if (token) headers.set("authorization", `Bearer ${token}`);
    const response = await fetch(url, { ...options, headers });
    if (response.status !== 401) return response;
    const now = storedToken();
    if (now && now !== token) continue; // another request signed in meanwhile: use its token
    const body = await response.json().catch(() => ({}));
    await askForToken(token ? `Refused: ${body.message || "HTTP 401"}` : null);
  }
}

// Server-sent events from a fetch() response, as { event, data } (data parsed as JSON). EventSource
// cannot send the Authorization header, so every page reads its streams this way.
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message", data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith(":")) continue; // a comment: keep-alive
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = val;
        else if (field === "data") data += (data ? "\n" : "") + val;
      }
      if (data) yield { event, data: JSON.parse(data) };
    }
  }
}
