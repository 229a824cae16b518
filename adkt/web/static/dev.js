// The dev chat page: no build step, one module. It uses only the HTTP API (/api/v1, docs/web.md).
import { authFetch, h, pretty, readEvents, when } from "./dom.js";
import { renderEvalRoute, saveSessionAsCase } from "./evals.js";
import { createTimeline } from "./timeline.js";

const main = document.getElementById("main");
const API = "/api/v1";
let config = { apps: [], temporal_ui: null, simulator_page: null };
let busy = false; // a turn streams or a reply is on its way: one at a time

const enc = encodeURIComponent;
const short = (v, n = 90) => { const s = typeof v === "string" ? v : JSON.stringify(v); return s.length > n ? s.slice(0, n - 1) + "…" : s; };

class ApiError extends Error {
  constructor(status, body) { super(body.message || `HTTP ${status}`); this.status = status; this.kind = body.error || "Error"; }
}

async function api(path, { method = "GET", body } = {}) {
  const response = await authFetch(API + path, {
    method, headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({ error: "HttpError", message: `HTTP ${response.status}` }));
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

const sessionPath = (app, user, session) => `/apps/${enc(app)}/users/${enc(user)}/sessions/${enc(session)}`;

// --- server-sent events over a POST (EventSource only does GET, and sends no Authorization) -------
// Frames parsed by dom.js's readEvents; unknown event names are ignored, so the server can add
// kinds (e.g. token-level "partial").
async function* sse(path, body) {
  const response = await authFetch(API + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => ({})));
  yield* readEvents(response);
}

// --- events --------------------------------------------------------------------------------------
function partView(part, event) {
  if (part.text && !part.thought) return h("div", { class: "text" }, part.text);
  if (part.thought && part.text) return h("details", {}, h("summary", {}, "thought"), h("div", { class: "text muted" }, part.text));
  if (part.function_call) {
    const call = part.function_call;
    if (call.name === "adk_request_confirmation") {
      const original = call.args?.originalFunctionCall || {};
      return h("details", { "data-testid": "confirmation-request" },
        h("summary", {}, h("span", { class: "fc" }, `? confirm ${original.name || "a tool"}(${short(original.args || {}, 60)})`)),
        h("pre", {}, pretty(call.args)));
    }
    return h("details", { "data-testid": `call-${call.name}` },
      h("summary", {}, h("span", { class: "fc" }, `→ ${call.name}(${short(call.args || {}, 70)})`),
        (event.long_running_tool_ids || []).includes(call.id) ? h("span", { class: "badge pending" }, "long-running") : null),
      h("pre", {}, pretty(call.args || {})));
  }
  if (part.function_response) {
    const r = part.function_response;
    return h("details", { "data-testid": `response-${r.name}` },
      h("summary", {}, h("span", { class: "fr" }, `← ${r.name}: ${short(r.response || {}, 70)}`)),
      h("pre", {}, pretty(r.response || {})));
  }
  if (part.inline_data) return h("div", { class: "muted" }, `[${part.inline_data.mime_type} data]`);
  if (part.file_data) return h("div", { class: "muted" }, `[file ${part.file_data.file_uri}]`);
  return null;
}

function eventView(event) {
  const role = event.error_code || event.error_message ? "err" : event.author === "user" ? "user" : "model";
  const parts = (event.content?.parts || []).map((p) => partView(p, event));
  const delta = event.actions?.state_delta || {};
  const compaction = event.actions?.compaction;
  const summaryText = (compaction?.compacted_content?.parts || []).map((p) => p.text || "").join("");
  return h("div", { class: `ev ${role}`, "data-testid": "event" },
    h("div", { class: "meta" }, event.author, " · ", new Date(event.timestamp * 1000).toLocaleTimeString()),
    parts,
    compaction ? h("details", { "data-testid": "compaction" }, h("summary", {}, "summary of earlier events (compaction)"), h("pre", {}, summaryText)) : null,
    event.error_message || event.error_code ? h("div", {}, h("b", {}, event.error_code || "error"), ": ", event.error_message || "") : null,
    Object.keys(delta).length ? h("details", {}, h("summary", {}, `state: ${Object.keys(delta).join(", ")}`), h("pre", {}, pretty(delta))) : null);
}

// --- pending requests ----------------------------------------------------------------------------
function pendingView(request, ctx) {
  const error = h("div", { class: "error", hidden: true, "data-testid": "reply-error" });
  const answer = async (response, buttons) => {
    if (busy) return;
    busy = true;
    buttons.forEach((b) => (b.disabled = true));
    error.hidden = true;
    const running = h("div", { class: "running" }, "the conversation continues…");
    ctx.log.append(running);
    try {
      const turn = await api(`${sessionPath(ctx.app, ctx.user, ctx.session)}/pending/${enc(request.call_id)}`, { method: "POST", body: { response } });
      running.remove();
      turn.events.forEach((e) => ctx.log.append(eventView(e)));
      renderPending(ctx, turn.pending);
      refreshSide(ctx);
      ctx.timeline.refresh();
    } catch (e) {
      running.remove();
      error.textContent = `${e.kind}: ${e.message}`;
      error.hidden = false;
      buttons.forEach((b) => (b.disabled = false));
    } finally {
      busy = false;
    }
  };
  const head = h("div", {}, h("b", {}, request.agent || ctx.app), request.kind === "tool_confirmation" ? " wants to run " : " waits for the result of ",
    h("span", { class: "args" }, `${request.name}(${short(request.args, 200)})`));
  if (request.kind === "tool_confirmation") {
    const yes = h("button", { class: "ok-btn", "data-testid": "approve" }, "Approve");
    const no = h("button", { class: "no-btn", "data-testid": "reject" }, "Reject");
    yes.onclick = () => answer({ confirmed: true }, [yes, no]);
    no.onclick = () => answer({ confirmed: false }, [yes, no]);
    return h("div", { class: "card ask", "data-testid": "pending" }, head, request.hint ? h("div", { class: "hint" }, request.hint) : null,
      h("div", { class: "row", style: "margin-top:8px" }, yes, no), error);
  }
  const input = h("textarea", { "data-testid": "tool-result", placeholder: '{"status": "done"}' });
  input.oninput = () => { error.hidden = true; };
  const send = h("button", { class: "primary", "data-testid": "send-result" }, "Send result");
  send.onclick = () => {
    let value;
    try { value = JSON.parse(input.value || "{}"); } catch (e) {
      error.textContent = `not JSON (${e.message}); type the tool's result as a JSON object`; error.hidden = false; return;
    }
    answer(value && typeof value === "object" && !Array.isArray(value) ? value : { result: value }, [send]);
  };
  return h("div", { class: "card ask", "data-testid": "pending" }, head, request.hint ? h("div", { class: "hint" }, request.hint) : null,
    h("label", {}, "Result (JSON)"), input, h("div", { class: "row", style: "margin-top:8px" }, send), error);
}

function renderPending(ctx, pending) {
  ctx.pending.replaceChildren(...pending.map((p) => pendingView(p, ctx)));
}

// --- chat ----------------------------------------------------------------------------------------
function newSessionId() { return `s-${crypto.randomUUID().slice(0, 8)}`; }

async function refreshSide(ctx) {
  let sessions = [];
  try { ({ sessions } = await api(`/apps/${enc(ctx.app)}/sessions?user_id=${enc(ctx.user)}`)); } catch (e) {
    ctx.list.replaceChildren(h("li", { class: "error" }, `${e.kind}: ${e.message}`)); return;
  }
  ctx.list.replaceChildren(...sessions.map((s) => h("li", {},
    h("a", { href: `#/chat/${enc(s.app_name)}/${enc(s.user_id)}/${enc(s.session_id)}`, class: s.session_id === ctx.session ? "current" : "" },
      h("span", { class: "mono" }, s.session_id), h("span", { class: "when" }, when(s.last_update_time))))));
  if (!sessions.length) ctx.list.replaceChildren(h("li", { class: "muted" }, "no sessions yet"));
  const current = sessions.find((s) => s.session_id === ctx.session);
  if (current) ctx.state.replaceChildren(pretty(current.state));
}

async function renderChat(app, user, session) {
  if (!config.apps.length) {
    main.replaceChildren(h("div", { class: "error" }, "This server lists no apps: start it with --app module:attr (adkt web --app examples.w1:app)."));
    return;
  }
  app = app || config.apps[0].name;
  user = user || localStorage.getItem("adk-user") || "user";
  if (!session) { location.replace(`#/chat/${enc(app)}/${enc(user)}/${enc(newSessionId())}`); return; }
  localStorage.setItem("adk-user", user);

  const appSelect = h("select", { "data-testid": "app" }, config.apps.map((a) => h("option", { value: a.name, selected: a.name === app }, a.name)));
  const userInput = h("input", { type: "text", value: user, "data-testid": "user" });
  const go = (s) => { location.hash = `#/chat/${enc(appSelect.value)}/${enc(userInput.value.trim() || "user")}/${enc(s)}`; };
  appSelect.onchange = () => go(newSessionId());
  userInput.onchange = () => go(newSessionId());
  const info = config.apps.find((a) => a.name === app);
  const ctx = { app, user, session, list: h("ul", { class: "sessions", "data-testid": "sessions" }), log: h("div", { class: "log", "data-testid": "log" }),
    pending: h("div", { "data-testid": "pending-list" }), state: h("pre", { "data-testid": "state" }, "{}") };

  const text = h("textarea", { placeholder: "Message… (Enter sends, Shift+Enter for a new line)", "data-testid": "message" });
  const send = h("button", { class: "primary", "data-testid": "send" }, "Send");
  ctx.tokens = h("input", { type: "checkbox", "data-testid": "tokens", checked: localStorage.getItem("adk-tokens") !== "off" });
  ctx.tokens.onchange = () => localStorage.setItem("adk-tokens", ctx.tokens.checked ? "on" : "off");
  const status = h("div", { "data-testid": "status" });
  const submit = () => { const value = text.value.trim(); if (value && !busy) { text.value = ""; streamTurn(ctx, value, status, send); } };
  send.onclick = submit;
  text.onkeydown = (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } };

  const workflow = h("span", { "data-testid": "workflow" });
  ctx.timeline = createTimeline(() => api(`${sessionPath(app, user, session)}/timeline`));
  const side = h("div", { class: "side" },
    h("div", { class: "card" },
      h("label", {}, "App"), appSelect, info?.description ? h("div", { class: "hint" }, info.description) : null,
      h("label", {}, "User"), userInput,
      h("div", { class: "row", style: "margin-top:10px" }, h("button", { onclick: () => go(newSessionId()), "data-testid": "new-session" }, "New session"))),
    h("div", { class: "card" }, h("b", {}, "Sessions"), ctx.list));
  const convo = h("div", {},
    h("div", { class: "convo-head" }, h("h1", {}, app), h("span", { class: "muted mono" }, `${user} · ${session}`), workflow,
      h("button", { class: "save-case", "data-testid": "save-case", title: "download this conversation as an eval case (docs/eval.md)",
        onclick: () => saveSessionAsCase(api, sessionPath(app, user, session), session, status) }, "Save as eval case"),
      ctx.timeline.totals),
    ctx.timeline.view,
    h("details", { class: "card" }, h("summary", {}, "session state"), ctx.state),
    ctx.log, ctx.pending, status, h("div", { class: "composer" }, text, send),
    h("label", { class: "hint inline" }, ctx.tokens, " stream tokens (partial events, for models that stream)"));
  main.replaceChildren(h("div", { class: "chat" }, side, convo));

  try {
    // Whether the session is stored yet, asked of the list: fetching a new one would be a 404,
    // which the browser logs as an error.
    const { sessions } = await api(`/apps/${enc(app)}/sessions?user_id=${enc(user)}`);
    if (sessions.some((s) => s.session_id === session)) {
      const stored = await api(sessionPath(app, user, session));
      stored.events.forEach((e) => ctx.log.append(eventView(e)));
      ctx.state.textContent = pretty(stored.state);
      setWorkflow(workflow, stored.workflow_url, stored.workflow_id, stored.worker_version);
      renderPending(ctx, (await api(`${sessionPath(app, user, session)}/pending`)).pending);
      ctx.timeline.refresh();
    } else {
      ctx.log.append(h("div", { class: "muted", "data-testid": "empty" }, "A new session: send a message to start it."));
      ctx.timeline.view.hidden = true;
    }
  } catch (e) {
    ctx.log.append(h("div", { class: "error" }, `${e.kind}: ${e.message}`));
  }
  ctx.workflow = workflow;
  refreshSide(ctx);
  text.focus();
}

function setWorkflow(el, url, id, version) {
  el.replaceChildren(url ? h("a", { href: url, target: "_blank", rel: "noopener", "data-testid": "workflow-link", title: id }, "workflow in Temporal UI ↗")
    : h("span", { class: "muted mono", title: "no Temporal UI URL known (adkt web --temporal-ui URL)" }, id));
  // The worker build the conversation's run is on (versioned workers only: docs/versioning.md).
  if (version) el.append(h("span", { class: "muted mono", "data-testid": "worker-version", title: "worker deployment version" }, ` · ${version}`));
}

async function streamTurn(ctx, message, status, send) {
  busy = true;
  send.disabled = true;
  ctx.log.querySelector("[data-testid=empty]")?.remove();
  ctx.log.append(eventView({ author: "user", timestamp: Date.now() / 1000, content: { parts: [{ text: message }] } }));
  ctx.pending.replaceChildren();
  status.replaceChildren(h("div", { class: "running", "data-testid": "running" }, "running…"));
  // Partial text of the model call in progress, replaced by the stored event when it arrives.
  let draft = null;
  const dropDraft = () => { draft?.remove(); draft = null; };
  try {
    const body = { text: message, partial: ctx.tokens.checked };
    for await (const { event, data } of sse(`${sessionPath(ctx.app, ctx.user, ctx.session)}/messages/stream`, body)) {
      if (event === "start") setWorkflow(ctx.workflow, data.workflow_url, data.workflow_id);
      else if (event === "partial") {
        if (data.custom_metadata && "adk_stream_reset" in data.custom_metadata) { dropDraft(); continue; }
        const text = (data.content?.parts || []).filter((p) => p.text && !p.thought).map((p) => p.text).join("");
        if (!text) continue;
        if (!draft) { draft = h("div", { class: "ev model draft", "data-testid": "draft" }, h("div", { class: "meta" }, data.author, " · typing…"), h("div", { class: "text" })); ctx.log.append(draft); }
        draft.querySelector(".text").append(text);
      }
      else if (event === "event") { dropDraft(); if (data.author !== "user") ctx.log.append(eventView(data)); }
      else if (event === "done") { renderPending(ctx, data.pending); status.replaceChildren(); }
      else if (event === "error") status.replaceChildren(h("div", { class: "error", "data-testid": "turn-error" }, `${data.error}: ${data.message}`));
    }
    dropDraft();
    if (status.querySelector("[data-testid=running]")) status.replaceChildren(h("div", { class: "error" }, "the stream ended early; reload to see the stored events"));
  } catch (e) {
    status.replaceChildren(h("div", { class: "error", "data-testid": "turn-error" }, `${e.kind || "Error"}: ${e.message}`));
  } finally {
    busy = false;
    send.disabled = false;
    refreshSide(ctx);
    ctx.timeline.view.hidden = false;
    ctx.timeline.refresh();
  }
}

// --- routing -------------------------------------------------------------------------------------
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const view = parts[0].startsWith("eval") ? "evals" : "chat";
  document.querySelectorAll("#nav a[data-view]").forEach((a) => a.classList.toggle("active", a.dataset.view === view));
  if (view === "evals") return renderEvalRoute(parts, { api, eventView, main });
  return renderChat(parts[1], parts[2], parts[3]);
}

async function start() {
  try { config = await api("/apps"); } catch (e) {
    main.replaceChildren(h("div", { class: "error" }, `${e.kind}: ${e.message}`)); return;
  }
  const nav = document.getElementById("nav");
  if (config.simulator_page) nav.append(h("a", { href: config.simulator_page }, "Simulator"));
  if (config.temporal_ui) nav.append(h("a", { href: config.temporal_ui, target: "_blank", rel: "noopener", class: "ext" }, "Temporal UI"));
  window.addEventListener("hashchange", route);
  route();
}

start();
