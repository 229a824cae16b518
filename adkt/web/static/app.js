// The simulator's page: no build step, one module. The JSON API is documented in docs/simulator.md.
import { authFetch, h, pretty, readEvents, when } from "./dom.js";

const main = document.getElementById("main");
const LONG = 600;
// Served alone (`adkt sim`) the page is at /; beside the dev page (`adkt dev`, `adkt web`) at /sim.
const BASE = location.pathname.startsWith("/sim") ? "/sim" : "";
const SESSION_PATH = new RegExp(`^${BASE}/sessions/([^/]+)`);
if (BASE) {
  document.querySelector(".brand").setAttribute("href", `${BASE}/`);
  document.querySelector("header").append(Object.assign(document.createElement("a"), { href: "/", textContent: "dev chat →", className: "sub" }));
}

// replaceChildren with h()'s rules: arrays flattened, null/false skipped.
function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

async function api(path, options) {
  const response = await authFetch(path, options);
  const body = await response.json().catch(() => ({ error: "HttpError", message: response.statusText }));
  if (!response.ok) throw body;
  return body;
}

const short = (id) => (id || "").slice(0, 8);

// --- rendering of text: markdown (a small safe subset), raw, collapsible when long -----------------
function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function markdown(text) {
  const lines = escapeHtml(text).split("\n");
  let html = "", list = false, code = false;
  for (const line of lines) {
    if (line.startsWith("```")) { html += code ? "</pre>" : "<pre>"; code = !code; continue; }
    if (code) { html += line + "\n"; continue; }
    const item = line.match(/^\s*[-*] (.*)/);
    if (item && !list) { html += "<ul>"; list = true; }
    if (!item && list) { html += "</ul>"; list = false; }
    let inline = (item ? item[1] : line)
      .replace(/`([^`]+)`/g, "<code>$1</code>")
      .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/\*([^*]+)\*/g, "<em>$1</em>");
    const heading = inline.match(/^(#{1,4}) (.*)/);
    if (heading) html += `<h4>${heading[2]}</h4>`;
    else html += item ? `<li>${inline}</li>` : inline ? `<p>${inline}</p>` : "";
  }
  if (list) html += "</ul>";
  if (code) html += "</pre>";
  return html;
}
function textBlock(text, view) {
  const body = () => {
    if (view === "raw") return h("pre", {}, text);
    const div = h("div", { class: "md" });
    div.innerHTML = markdown(text);
    return div;
  };
  if (text.length <= LONG) return body();
  return h("details", {}, h("summary", {}, `${text.slice(0, 160)}… (${text.length} characters: show all)`), body());
}
function partView(part, view) {
  if (part.text !== undefined) return textBlock(part.text, view);
  if (part.function_call)
    return h("div", {}, h("span", { class: "fc mono" }, `call ${part.function_call.name}`), h("pre", {}, pretty(part.function_call.args || {})));
  if (part.function_response)
    return h("div", {}, h("span", { class: "fr mono" }, `result of ${part.function_response.name}`), h("pre", {}, pretty(part.function_response.response || {})));
  return h("pre", {}, pretty(part));
}
function contentView(content, view) {
  return h("div", { class: `msg ${content.role || ""}` }, h("div", { class: "role" }, content.role || "?"),
    (content.parts || []).map((p) => partView(p, view)));
}
function declarations(request) {
  return (request.tools || []).flatMap((t) => t.function_declarations || []);
}

function requestView(request) {
  const box = h("div", {});
  let view = "markdown";
  const tabs = h("div", { class: "tabs row", role: "tablist" });
  const body = h("div", {});
  const draw = () => {
    tabs.replaceChildren(...["markdown", "raw", "json"].map((v) =>
      h("button", { class: v === view ? "active" : "", "data-testid": `view-${v}`, onclick: () => { view = v; draw(); } },
        { markdown: "Markdown", raw: "Raw", json: "JSON" }[v])));
    if (view === "json") { body.replaceChildren(h("pre", { "data-testid": "request-json" }, pretty(request))); return; }
    const system = (request.system_instruction?.parts || []).map((p) => p.text || "").join("\n");
    const tools = declarations(request);
    fill(body,
      h("h3", {}, "System instruction"),
      system ? textBlock(system, view) : h("div", { class: "muted" }, "none"),
      h("h3", {}, `Conversation (${(request.contents || []).length} messages)`),
      request.history ? h("div", { class: "muted" }, "Older turns are in the session store (the request continues a long conversation).") : null,
      (request.contents || []).map((c) => contentView(c, view)),
      h("h3", {}, `Tools (${tools.length})`),
      tools.length ? tools.map((t) => h("details", { "data-testid": `tool-${t.name}` },
        h("summary", {}, h("span", { class: "mono" }, t.name), " — ", t.description || ""),
        h("pre", {}, pretty(t.parameters || {})))) : h("div", { class: "muted" }, "none"),
    );
  };
  draw();
  box.append(tabs, body);
  return box;
}

// --- the composer: a text, or function calls through forms generated from each tool's schema ------
function fieldFor(name, schema, required) {
  const id = `arg-${name}`;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  let input;
  if (schema.enum) input = h("select", { "data-testid": id, name }, h("option", { value: "" }, "—"), schema.enum.map((v) => h("option", { value: JSON.stringify(v) }, String(v))));
  else if (type === "boolean") input = h("input", { type: "checkbox", "data-testid": id, name });
  else if (type === "integer" || type === "number") input = h("input", { type: "number", step: type === "integer" ? "1" : "any", "data-testid": id, name });
  else if (type === "string") input = h("input", { type: "text", "data-testid": id, name });
  else input = h("textarea", { "data-testid": id, name, placeholder: type === "array" ? "[ ]" : "{ }" });
  const error = h("div", { class: "field-error" });
  input.addEventListener("input", () => { error.textContent = ""; });
  const read = () => {
    error.textContent = "";
    if (type === "boolean") return { ok: true, value: input.checked, present: true };
    const raw = input.value.trim();
    if (!raw) {
      if (required) { error.textContent = "required"; return { ok: false }; }
      return { ok: true, present: false };
    }
    if (schema.enum) return { ok: true, value: JSON.parse(raw), present: true };
    if (type === "integer" || type === "number") {
      const n = Number(raw);
      if (Number.isNaN(n) || (type === "integer" && !Number.isInteger(n))) { error.textContent = `must be ${type === "integer" ? "an integer" : "a number"}`; return { ok: false }; }
      if (schema.minimum !== undefined && n < schema.minimum) { error.textContent = `must be ≥ ${schema.minimum}`; return { ok: false }; }
      if (schema.maximum !== undefined && n > schema.maximum) { error.textContent = `must be ≤ ${schema.maximum}`; return { ok: false }; }
      return { ok: true, value: n, present: true };
    }
    if (type === "string") return { ok: true, value: input.value, present: true };
    try {
      const value = JSON.parse(raw);
      if (type === "array" && !Array.isArray(value)) throw new Error("must be a JSON array");
      if (type === "object" && (typeof value !== "object" || Array.isArray(value) || value === null)) throw new Error("must be a JSON object");
      return { ok: true, value, present: true };
    } catch (e) { error.textContent = e.message.startsWith("must") ? e.message : "must be valid JSON"; return { ok: false }; }
  };
  const label = h("label", {}, name, required ? h("span", { class: "req" }, " *") : "", " ",
    h("span", { class: "hint" }, [type || "any", schema.description ? ` — ${schema.description}` : ""].join("")));
  return { el: h("div", {}, label, input, error), read };
}

function callEditor(tools, onRemove) {
  const select = h("select", { "data-testid": "call-tool" }, tools.map((t) => h("option", { value: t.name }, t.name)));
  const fields = h("div", {});
  let readers = [];
  const build = () => {
    const tool = tools.find((t) => t.name === select.value);
    const schema = tool.parameters || {};
    const required = new Set(schema.required || []);
    // The declaration's order (property_ordering): the stored request's keys come back sorted.
    const properties = schema.properties || {};
    const names = (schema.property_ordering || []).filter((n) => n in properties);
    const order = [...names, ...Object.keys(properties).filter((n) => !names.includes(n))];
    const made = order.map((name) => [name, fieldFor(name, properties[name], required.has(name))]);
    readers = made.map(([name, f]) => [name, f.read]);
    fields.replaceChildren(...(made.length ? made.map(([, f]) => f.el) : [h("div", { class: "muted" }, "no arguments")]));
  };
  select.addEventListener("change", build);
  build();
  const el = h("div", { class: "call" }, h("div", { class: "row" }, h("strong", {}, "Function call"), select,
    h("button", { type: "button", onclick: () => onRemove(el) }, "Remove")), fields);
  const read = () => {
    const args = {};
    let ok = true;
    for (const [name, r] of readers) { const v = r(); if (!v.ok) ok = false; else if (v.present) args[name] = v.value; }
    return ok ? { name: select.value, args } : null;
  };
  return { el, read };
}

function composer(view, onSent) {
  const head = view.head;
  const tools = declarations(head.llm_request);
  let mode = "text";
  const error = h("div", { class: "error", "data-testid": "composer-error", hidden: true });
  const text = h("textarea", { "data-testid": "answer-text", placeholder: "Answer as the model…" });
  const calls = h("div", {});
  let editors = [];
  const addCall = () => {
    const editor = callEditor(tools, (el) => { editors = editors.filter((e) => e.el !== el); el.remove(); });
    editors.push(editor);
    calls.append(editor.el);
  };
  const textPane = h("div", {}, text);
  const callsPane = h("div", { hidden: true }, calls, h("button", { type: "button", "data-testid": "add-call", onclick: addCall }, "+ Add a function call"));
  const setMode = (m) => {
    mode = m;
    textPane.hidden = m !== "text";
    callsPane.hidden = m !== "calls";
    if (m === "calls" && !editors.length) addCall();
  };
  const radio = (m, label) => h("label", { class: "row", style: "font-weight:normal" },
    h("input", { type: "radio", name: "mode", "data-testid": `mode-${m}`, checked: m === "text", onchange: () => setMode(m) }), label);
  const submit = h("button", { class: "primary", "data-testid": "submit", type: "submit" }, "Send as the model");
  const form = h("form", { class: "card", "data-testid": "composer" },
    h("h2", { style: "margin-top:0" }, "Your answer"),
    h("div", { class: "row" }, radio("text", "Text"), tools.length ? radio("calls", `Function call(s) (${tools.length} tools)`) : null),
    textPane, callsPane, error, h("div", { class: "row" }, submit));
  form.addEventListener("input", () => { error.hidden = true; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    let decision;
    if (mode === "text") {
      if (!text.value.trim()) { error.textContent = "Write an answer, or switch to function calls."; error.hidden = false; return; }
      decision = { text: text.value };
    } else {
      const read = editors.map((e) => e.read());
      if (!read.length) { error.textContent = "Add at least one function call."; error.hidden = false; return; }
      if (read.some((r) => r === null)) { error.textContent = "Fix the highlighted arguments first."; error.hidden = false; return; }
      decision = { function_calls: read };
    }
    submit.disabled = true;
    try {
      await api(`/api/sessions/${view.session.id}/turns/${head.turn_id}/decision`, {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(decision),
      });
      onSent();
    } catch (e) {
      error.textContent = `${e.error || "Error"}: ${e.message || e}`;
      error.hidden = false;
      submit.disabled = false;
    }
  });
  return form;
}

// --- pages --------------------------------------------------------------------------------------------
function responseView(event) {
  // A request closed unanswered because the run that asked was gone (adk_core.simulator.abandoned_response).
  const abandoned = event.llm_response?.adk_abandoned;
  if (abandoned) return h("div", { class: "muted", "data-testid": "abandoned" }, `Closed unanswered: ${abandoned}`);
  const content = event.llm_response?.candidates?.[0]?.content || { parts: [] };
  return h("div", {}, (content.parts || []).map((p) => partView(p, "markdown")));
}
function lastAsk(request) {
  const last = (request.contents || []).at(-1);
  return last ? contentView(last, "markdown") : h("div", { class: "muted" }, "(no contents)");
}

// Renders start on every change the server pushes and may finish out of order: only the newest
// one started may touch the page, or a stale view could replace a newer one (and the composer the
// person is typing in).
let renders = 0;

async function renderList() {
  const mine = ++renders;
  const { sessions } = await api("/api/sessions");
  if (mine !== renders) return;
  document.title = "Agent simulator";
  main.replaceChildren(
    h("h1", {}, "Simulator sessions"),
    h("p", { class: "muted" }, "Agents wait here for a person to play their model. Newest first."),
    sessions.length ? h("table", { "data-testid": "sessions" },
      h("thead", {}, h("tr", {}, ["Session", "App / user / ADK session", "Status", "Pending", "Turns", "Created"].map((c) => h("th", {}, c)))),
      h("tbody", {}, sessions.map((s) => h("tr", { "data-testid": `session-${s.session.id}` },
        h("td", {}, h("a", { href: `${BASE}/sessions/${s.session.id}`, class: "mono" }, short(s.session.id))),
        h("td", {}, s.session.description || h("span", { class: "muted" }, "—")),
        h("td", {}, h("span", { class: `badge ${s.session.status}` }, s.session.status)),
        h("td", {}, s.pending_count ? h("span", { class: "badge pending", "data-testid": "pending-count" }, `${s.pending_count} waiting`) : h("span", { class: "muted" }, "0")),
        h("td", {}, s.turn_count),
        h("td", { class: "muted" }, when(s.session.created_at)))))) :
      h("div", { class: "card muted" }, "No sessions yet. Run an app with SimulatorPlugin and its requests appear here."),
  );
}

let shownHead = null;
async function renderSession(id, { keepComposer = false } = {}) {
  const mine = ++renders;
  let view;
  try { view = await api(`/api/sessions/${id}`); } catch (e) {
    if (mine !== renders) return;
    main.replaceChildren(h("div", { class: "error" }, `${e.error}: ${e.message}`), h("a", { href: `${BASE}/` }, "← all sessions"));
    return;
  }
  if (mine !== renders) return;
  const headId = view.head?.turn_id || null;
  const existing = document.querySelector("[data-testid=composer]");
  const keep = keepComposer && headId && headId === shownHead && existing;
  shownHead = headId;
  document.title = view.head ? `⏳ ${view.head.agent_name} waits · simulator` : "Simulator session";
  const s = view.session;
  const header = h("div", {}, h("a", { href: `${BASE}/` }, "← all sessions"),
    h("h1", {}, "Session ", h("span", { class: "mono" }, short(s.id)), " ", h("span", { class: `badge ${s.status}` }, s.status)),
    h("div", { class: "muted" }, s.description, " · created ", when(s.created_at), " · ", `${view.pending.length} pending`));
  let headSection;
  if (view.head) {
    const hd = view.head;
    headSection = h("div", { class: "grid" },
      h("div", { class: "card head", "data-testid": "head-request" },
        h("div", { class: "row" }, h("span", { class: "badge pending" }, "waiting for you"),
          h("strong", { "data-testid": "head-agent" }, hd.agent_name), h("span", { class: "muted mono" }, `turn ${short(hd.turn_id)}`),
          view.pending.length > 1 ? h("span", { class: "muted" }, `(${view.pending.length - 1} more queued behind it)`) : null),
        requestView(hd.llm_request)),
      h("div", {}, keep ? existing : composer(view, () => renderSession(id))));
  } else {
    headSection = h("div", { class: "card muted", "data-testid": "no-head" }, "Nothing is waiting. New requests appear here as agents make them.");
  }
  const timeline = h("div", { "data-testid": "timeline" }, view.timeline.slice().reverse().map((t) => h("div", { class: "card" },
    h("div", { class: "row" }, h("strong", {}, t.agent_name), h("span", { class: "muted mono" }, `turn ${short(t.turn_id)}`),
      h("span", { class: "muted" }, when(t.request.timestamp)),
      !t.response ? h("span", { class: "badge pending" }, "pending")
        : t.response.llm_response?.adk_abandoned ? h("span", { class: "badge completed", "data-testid": "closed-badge" }, "closed")
        : h("span", { class: "badge done" }, "answered")),
    h("div", { class: "grid" },
      h("div", {}, h("h3", {}, "Asked"), lastAsk(t.request.llm_request),
        h("details", {}, h("summary", {}, "full request (JSON)"), h("pre", {}, pretty(t.request.llm_request)))),
      h("div", {}, h("h3", {}, "Answered"), t.response ? responseView(t.response) : h("div", { class: "muted" }, "—"))))));
  main.replaceChildren(header, headSection, h("h2", {}, `Timeline (${view.timeline.length} turn${view.timeline.length === 1 ? "" : "s"}, newest first)`), timeline);
}

function route() {
  const match = location.pathname.match(SESSION_PATH);
  return match ? renderSession(match[1]) : renderList();
}

// Live updates: the server pushes the id of every session that changes (SSE, read with fetch so
// that it carries the sign-in token). A dropped stream is opened again after a pause.
async function listen() {
  const live = document.getElementById("live");
  for (;;) {
    try {
      const response = await authFetch("/api/events");
      if (response.status === 403) { live.textContent = "not allowed (operators only)"; return; }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      live.textContent = "live"; live.classList.add("on");
      for await (const { event, data } of readEvents(response)) {
        if (event !== "change") continue;
        const match = location.pathname.match(SESSION_PATH);
        if (!match) renderList();
        // "" says updates may have been lost (the server reconnected): whatever is shown is re-read.
        else if (match[1] === data.session_id || data.session_id === "") renderSession(match[1], { keepComposer: true });
      }
    } catch (e) {
      // reconnecting below
    }
    live.textContent = "reconnecting…"; live.classList.remove("on");
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
}

route();
listen();
