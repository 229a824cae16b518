// A conversation's turns drawn as timelines, from GET .../sessions/{session}/timeline (docs/web.md):
// a bar per agent and, under it, its model calls, tool calls, waits for a person, retries and
// continue-as-new, each with its duration, tokens and cost. Click a bar for what it was given and returned.
import { h, pretty } from "./dom.js";

const KINDS = { agent: "agent", model: "model call", tool: "tool call", wait: "waits for a person", retry: "failed attempts",
  continue_as_new: "continue-as-new", error: "error" };

export function duration(ms) {
  if (ms < 1) return "0 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}
export const usd = (v) => (v === null || v === undefined ? "" : `$${v < 0.01 ? v.toFixed(5) : v.toFixed(4)}`);
const num = (n) => (n || 0).toLocaleString("en-US");
const tokens = (s) => (s.input_tokens === null || s.input_tokens === undefined ? "" : `${num(s.input_tokens)} in / ${num(s.output_tokens)} out tok`);

// What a bar says beside it: its duration, then tokens and cost when it has them.
function barText(span) {
  if (span.kind === "continue_as_new") return "continued as new";
  if (span.kind === "error") return span.error || span.name;
  const open = span.open ? " (still waiting)" : "";
  return [duration(span.duration_ms) + open, tokens(span), usd(span.cost_usd), span.attempts > 1 ? `attempt ${span.attempts}` : ""]
    .filter(Boolean).join(" · ");
}

function detailView(span) {
  const rows = [["kind", KINDS[span.kind] || span.kind], ["agent", span.agent || "—"], ["duration", duration(span.duration_ms)],
    ["started", new Date(span.start * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3, hour12: false })]];
  if (tokens(span)) rows.push(["tokens", tokens(span)]);
  if (span.cost_usd !== null && span.cost_usd !== undefined) rows.push(["cost", usd(span.cost_usd)]);
  if (span.attempts) rows.push(["attempts", String(span.attempts)]);
  if (span.error) rows.push(["error", span.error]);
  return h("div", { class: "tl-detail", "data-testid": "span-detail" },
    h("div", { class: "tl-detail-head" }, h("b", {}, span.name), h("button", { class: "tl-close", title: "close", onclick: (e) => e.target.closest(".tl-detail").remove() }, "×")),
    h("div", { class: "kv" }, rows.flatMap(([k, v]) => [h("div", { class: "muted" }, k), h("div", {}, v)])),
    h("div", { class: "grid" },
      h("div", {}, h("h3", {}, span.kind === "model" ? "Request (what it answered)" : "Request"), h("pre", { "data-testid": "span-request" }, span.request === null || span.request === undefined ? "—" : pretty(span.request))),
      h("div", {}, h("h3", {}, "Response"), h("pre", { "data-testid": "span-response" }, span.response === null || span.response === undefined ? "—" : pretty(span.response)))));
}

function axis(total) {
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  return h("div", { class: "tl-row tl-axis" }, h("div", { class: "tl-label" }),
    h("div", { class: "tl-track" }, ticks.map((f) => h("span", { class: "tl-tick", style: `left:${f * 100}%` }, duration(total * f)))));
}

function turnView(turn, detail) {
  const total = Math.max((turn.end - turn.start) * 1000, 1);
  const rows = turn.spans.map((span) => {
    const left = ((span.start - turn.start) * 1000 / total) * 100;
    const width = (span.duration_ms / total) * 100;
    const right = left + width > 62; // the text goes left of a bar that ends near the right edge
    const bar = h("button", { class: `tl-bar ${span.kind}${span.open ? " open" : ""}`, "data-testid": `bar-${span.kind}`, "data-name": span.name,
      title: `${span.name}: ${barText(span)}`, style: `left:${left}%;width:${width}%` });
    bar.onclick = () => {
      detail.replaceChildren(detailView(span));
      detail.closest(".timeline").querySelectorAll(".tl-bar.selected").forEach((b) => b.classList.remove("selected"));
      bar.classList.add("selected");
    };
    const text = h("span", { class: "tl-text", style: right ? `right:${100 - left}%` : `left:${left + width}%` }, barText(span));
    return h("div", { class: `tl-row ${span.kind}` },
      h("div", { class: "tl-label", style: `padding-left:${span.depth * 16 + 6}px`, title: span.name },
        h("span", { class: `tl-dot ${span.kind}` }), span.name),
      h("div", { class: "tl-track" }, bar, text));
  });
  return h("div", { class: "tl-chart", "data-testid": "timeline-chart" }, axis(total), rows);
}

function turnHead(turn, index, ui) {
  const status = { done: "done", failed: "failed", waiting: "pending" }[turn.status];
  return h("div", { class: "tl-turn-head" },
    h("span", { class: "tl-turn-msg", title: turn.message }, `Turn ${index + 1}: “${turn.message}”`),
    h("span", { class: `badge ${status}` }, turn.status),
    h("span", { class: "muted", "data-testid": "turn-summary" },
      [duration((turn.end - turn.start) * 1000), `${turn.model_calls} model call${turn.model_calls === 1 ? "" : "s"}`,
        turn.input_tokens || turn.output_tokens ? `${num(turn.input_tokens)} in / ${num(turn.output_tokens)} out tokens` : "", usd(turn.cost_usd)]
        .filter(Boolean).join(" · ")),
    turn.trace_id ? h("span", { class: "mono tl-trace", "data-testid": "trace-id", title: "OpenTelemetry trace id: search your tracing backend for it" },
      ui.traceUrl ? h("a", { href: ui.traceUrl.replace("{trace_id}", turn.trace_id), target: "_blank", rel: "noopener" }, `trace ${turn.trace_id}`) : `trace ${turn.trace_id}`)
      : h("span", { class: "muted tl-trace", title: "start the API with --tracing (ADK_TRACING=1) to trace turns" }, "no trace"));
}

// The conversation's totals (for its header) and its timeline card; refresh() reloads both.
export function createTimeline(load, ui = {}) {
  const totals = h("span", { class: "tl-totals", "data-testid": "totals" });
  const body = h("div", {});
  const view = h("details", { class: "card timeline", "data-testid": "timeline", open: localStorage.getItem("adk-timeline") !== "closed" },
    h("summary", {}, h("b", {}, "Timeline")), body);
  view.ontoggle = () => localStorage.setItem("adk-timeline", view.open ? "open" : "closed");
  let chosen = null; // the turn shown: the newest unless one was picked
  let data = null;

  function draw() {
    const turns = data.turns;
    if (!turns.length) { body.replaceChildren(h("div", { class: "muted" }, "No turns yet.")); return; }
    const index = chosen === null || chosen >= turns.length ? turns.length - 1 : chosen;
    const detail = h("div", {});
    const tabs = h("div", { class: "tabs tl-tabs" }, turns.map((t, i) => h("button", { class: i === index ? "active" : "", "data-testid": "turn-tab",
      title: t.message, onclick: () => { chosen = i; draw(); } }, `Turn ${i + 1}`)));
    body.replaceChildren(...[
      turns.length > 1 ? tabs : null,
      turnHead(turns[index], index, ui), turnView(turns[index], detail), detail,
      data.history ? null : h("div", { class: "hint" }, "Temporal no longer has this conversation's history: bars are drawn from the stored events alone (no retries or continue-as-new)."),
    ].filter(Boolean));
  }

  async function refresh() {
    try { data = await load(); } catch (e) {
      body.replaceChildren(h("div", { class: "error" }, `timeline: ${e.kind || "Error"}: ${e.message}`)); return;
    }
    const t = data.totals;
    totals.replaceChildren(
      [`${t.turns} turn${t.turns === 1 ? "" : "s"}`, `${num(t.model_calls)} model calls`, `${num(t.tool_calls)} tool calls`,
        `${num(t.input_tokens)} in / ${num(t.output_tokens)} out tokens`, t.cost_usd === null ? "no price" : usd(t.cost_usd)].join(" · "));
    draw();
  }
  return { totals, view, refresh };
}
