// The dev page's eval views (docs/eval.md, "On the page"): stored runs, starting a suite and following
// it live, a trial's trace, two runs compared, a metric's trend across a suite's runs. Only the HTTP
// API (/api/v1/evals/...). dev.js routes here and lends its `api` and `eventView`.
import { h, pretty, when } from "./dom.js";

const enc = encodeURIComponent;
const POLL_MS = 800;
const FOLLOW_LIMIT_MS = 2 * 60 * 60 * 1000; // stop following a run after 2 h (reload to follow again)
let deps = null; // { api, eventView, main }
let token = 0; // the newest render: an older one (and its polling) stops touching the page
window.addEventListener("hashchange", () => { token++; }); // leaving the view (for the chat, too) stops its polling

const fixed = (v) => (v === null || v === undefined ? "—" : Number(v).toFixed(2));

export function statusBadge(status) {
  const kind = { passed: "done", completed: "done", running: "pending", failed: "failed", error: "failed", errors: "failed",
    not_evaluated: "not-evaluated", terminated: "pending", cancelled: "completed", canceled: "completed" }[status] || "";
  return h("span", { class: `badge ${kind}` }, status || "—");
}

function fail(e, back = true) {
  deps.main.replaceChildren(h("div", { class: "error" }, `${e.kind || "Error"}: ${e.message}`), back ? h("a", { href: "#/evals" }, "← all runs") : null);
}

// parts: the hash split on "/": evals[/RUN[/trial/CASE/N]] · eval-compare/A/B · eval-trend/SUITE
export function renderEvalRoute(parts, lent) {
  deps = lent;
  const mine = ++token;
  if (parts[0] === "eval-compare") return renderCompare(parts[1], parts[2], mine);
  if (parts[0] === "eval-trend") return renderTrend(parts[1], mine);
  if (parts[1] && parts[2] === "trial") return renderTrial(parts[1], parts[3], Number(parts[4] || 0), mine);
  if (parts[1]) return renderRun(parts[1], mine);
  return renderRuns(mine);
}

// --- the runs list, starting a run, picking two to compare -----------------------------------------
async function renderRuns(mine) {
  let runs, suites;
  try {
    [{ runs }, suites] = await Promise.all([deps.api("/evals/runs?limit=100"), deps.api("/evals/suites").catch((e) => ({ error: e }))]);
  } catch (e) { fail(e, false); return; }
  if (mine !== token) return;
  const rows = runs.map((r) => h("tr", {},
    h("td", {}, h("a", { href: `#/evals/${enc(r.run_id)}`, class: "mono" }, r.run_id)),
    h("td", {}, h("a", { href: `#/eval-trend/${enc(r.suite)}`, class: "mono", title: "trend of this suite" }, r.suite)),
    h("td", {}, r.mode), h("td", {}, statusBadge(r.status)),
    h("td", {}, r.summary ? `${r.summary.passed}/${r.summary.total} passed` : "—"), h("td", {}, when(r.start_time))));
  const pick = (label, testid, index) => h("select", { "data-testid": testid, "aria-label": label },
    runs.map((r, i) => h("option", { value: r.run_id, selected: i === index }, `${r.run_id} · ${r.suite}`)));
  const a = pick("earlier run", "compare-a", 1), b = pick("later run", "compare-b", 0);
  const compare = h("button", { "data-testid": "compare", onclick: () => { location.hash = `#/eval-compare/${enc(a.value)}/${enc(b.value)}`; } }, "Compare");
  deps.main.replaceChildren(
    h("h1", {}, "Eval runs"),
    h("p", { class: "muted" }, "Start a suite here or with ", h("code", {}, "adkt eval run"), "; newest first."),
    startCard(suites),
    runs.length ? h("table", { "data-testid": "runs" }, h("tr", {}, ["run", "suite", "mode", "status", "result", "started"].map((c) => h("th", {}, c))), rows)
      : h("div", { class: "card muted" }, "No eval runs stored yet: start one above, or ", h("code", {}, "adkt eval run CASES"), "."),
    runs.length > 1 ? h("div", { class: "card row" }, h("b", {}, "Compare"), a, h("span", { class: "muted" }, "→"), b, compare) : null);
}

function startCard(suites) {
  if (suites.error) {
    return h("div", { class: "card muted", "data-testid": "start-unavailable" }, `Starting runs here: ${suites.error.kind}: ${suites.error.message}`);
  }
  const list = h("datalist", { id: "eval-suites" }, suites.suites.map((s) => h("option", { value: s })));
  const suite = h("input", { type: "text", list: "eval-suites", "data-testid": "suite", value: suites.suites[0] || "",
    placeholder: "module:attr of EvalCases (e.g. my_evals:cases)" });
  const trials = h("input", { type: "number", min: 1, max: 100, placeholder: "each case's own", "data-testid": "trials" });
  const parallel = h("input", { type: "number", min: 1, max: 500, placeholder: "all at once", "data-testid": "parallel" });
  const error = h("div", { class: "error", hidden: true, "data-testid": "start-error" });
  const picker = casePicker(() => { error.hidden = true; }); // a new pick: the last refusal no longer holds
  let picking = null; // debounces typing in the suite box
  const pickFor = () => { clearTimeout(picking); picking = setTimeout(() => picker.load(suite.value.trim()), PICK_DEBOUNCE_MS); };
  suite.addEventListener("input", pickFor);
  suite.addEventListener("change", pickFor);
  if (suite.value) picker.load(suite.value.trim());
  const start = h("button", { class: "primary", "data-testid": "start" }, "Start run");
  start.onclick = async () => {
    error.hidden = true;
    const body = { suite: suite.value.trim() };
    const cases = picker.picked(body.suite);
    if (cases && !cases.length) {
      error.textContent = "Pick at least one case (or check them all to run the whole suite).";
      error.hidden = false;
      return;
    }
    start.disabled = true;
    if (cases) body.cases = cases;
    if (trials.value) body.trials = Number(trials.value);
    if (parallel.value) body.parallel = Number(parallel.value);
    try {
      const started = await deps.api("/evals/runs", { method: "POST", body });
      location.hash = `#/evals/${enc(started.run_id)}`;
    } catch (e) {
      error.textContent = `${e.kind}: ${e.message}`;
      error.hidden = false;
      start.disabled = false;
    }
  };
  const allowed = suites.allowed_modules.length ? suites.allowed_modules.join(", ") : "none (adkt web --eval-suite MODULE)";
  return h("div", { class: "card start" },
    h("b", {}, "Start a run"), h("span", { class: "hint" }, ` · durably, as EvalSuiteWorkflow on task queue ${suites.task_queue}`),
    h("div", { class: "start-grid" },
      h("div", {}, h("label", {}, "Suite"), suite, list, h("div", { class: "hint" }, `from the modules the worker allows: ${allowed}`)),
      h("div", {}, h("label", {}, "Trials per case"), trials),
      h("div", {}, h("label", {}, "Parallel trials"), parallel),
      h("div", { class: "start-go" }, start)),
    picker.el, error);
}

const PICK_DEBOUNCE_MS = 300;

// The chosen suite's cases as checkboxes, all checked (GET /evals/suites?suite=REF). picked(suite) is
// null to run every case (all checked, or the list is not that suite's), else the checked names.
function casePicker(onPick) {
  const el = h("div", { class: "case-pick", "data-testid": "case-pick", hidden: true });
  let loaded = null; // { suite, boxes: [[name, checkbox]] }
  let asked = 0;
  const count = h("span", { class: "hint", "data-testid": "case-pick-count" });
  const counted = () => {
    const on = loaded.boxes.filter(([, b]) => b.checked).length;
    count.textContent = `${on} of ${loaded.boxes.length} cases`;
    onPick();
  };
  const setAll = (checked) => { for (const [, b] of loaded.boxes) b.checked = checked; counted(); };
  async function load(suite) {
    const mine = ++asked;
    if (loaded && loaded.suite === suite) return;
    loaded = null;
    el.hidden = true;
    if (!suite) return;
    let answer;
    try { answer = await deps.api(`/evals/suites?suite=${enc(suite)}`); } catch (e) {
      if (mine !== asked) return;
      el.replaceChildren(h("span", { class: "hint", "data-testid": "case-pick-unavailable" }, `Cases: every case runs (${e.kind}: ${e.message})`));
      el.hidden = false;
      return;
    }
    if (mine !== asked || !answer.cases) return;
    loaded = { suite, boxes: answer.cases.map((c) => [c.name, h("input", { type: "checkbox", checked: true, onchange: () => counted(),
      "data-testid": `case-pick-${c.name}`, "aria-label": c.name })]) };
    const labels = answer.cases.map((c, i) => h("label", { class: "case-box", title: c.description || "" }, loaded.boxes[i][1],
      h("span", { class: "mono" }, c.name), c.trials > 1 ? h("span", { class: "hint" }, ` ×${c.trials}`) : null));
    el.replaceChildren(
      h("div", { class: "row" }, h("b", {}, "Cases"), count,
        h("button", { class: "link-btn", "data-testid": "case-pick-all", onclick: () => setAll(true) }, "all"),
        h("button", { class: "link-btn", "data-testid": "case-pick-none", onclick: () => setAll(false) }, "none")),
      h("div", { class: "case-boxes" }, labels));
    counted();
    el.hidden = false;
  }
  function picked(suite) {
    if (!loaded || loaded.suite !== suite) return null;
    const on = loaded.boxes.filter(([, b]) => b.checked).map(([name]) => name);
    return on.length === loaded.boxes.length ? null : on;
  }
  return { el, load, picked };
}

// --- one run: live progress, cases, trials ----------------------------------------------------------
function summaryText(summary) {
  if (!summary) return "—";
  const k = summary.pass_hat_k === null || summary.pass_hat_k === undefined ? "" : ` · pass^${summary.k} ${summary.pass_hat_k.toFixed(2)}`;
  const unchecked = summary.not_evaluated ? `, ${summary.not_evaluated} not evaluated` : "";
  return `${summary.passed} passed, ${summary.failed} failed, ${summary.errors} errors${unchecked} of ${summary.total}${k}`;
}

const mark = (m) => (m.passed ? ["pass", "✓ "] : m.evaluated === false ? ["unchecked", "? "] : ["fail", "✗ "]);

function metricsView(metrics) {
  return Object.entries(metrics || {}).map(([name, m]) => h("div", { title: m.evaluated === false ? (m.evidence || []).join("; ") : "" },
    h("span", { class: mark(m)[0] }, mark(m)[1]), name,
    m.score !== null && m.score !== undefined ? h("span", { class: "muted" }, ` ${Number(m.score).toFixed(2)}`) : null));
}

// Mirrors adk_core.eval.results.not_evaluated_reason: why nothing checked this trial.
function notEvaluatedReason(t) {
  if (t.status !== "not_evaluated") return "";
  const skipped = Object.entries(t.metrics || {}).filter(([, m]) => m.evaluated === false);
  if (!Object.keys(t.metrics || {}).length) return "not evaluated: the case has no metrics";
  return "not evaluated: " + skipped.map(([name, m]) => `${name} (${(m.evidence || []).join("; ")})`).join(", ");
}

function progressView(p, cancel) {
  const state = p.progress || { total: 0, done: 0, passed: 0, failed: 0, errors: 0, not_evaluated: 0, running: [] };
  const share = state.total ? Math.round((100 * state.done) / state.total) : 0; // the bar: one segment per outcome
  const link = p.workflow_url ? h("a", { href: p.workflow_url, target: "_blank", rel: "noopener" }, "workflow ↗") : h("span", { class: "mono muted" }, p.workflow_id);
  return h("div", { class: "card live-run", "data-testid": "progress" },
    h("div", { class: "row" }, h("span", { class: "muted" }, "workflow"), statusBadge(p.status), h("b", { "data-testid": "progress-count" }, `${state.done} of ${state.total || "?"} trials`), link,
      p.status === "running" ? cancel : null),
    h("div", { class: "bar", title: `${share}% done` }, [["passed", state.passed], ["failed", state.failed + state.errors + (state.terminated || 0)],
      ["unchecked", state.not_evaluated]].map(([kind, n]) => (n && state.total ? h("div", { class: `fill ${kind}`, style: `width:${(100 * n) / state.total}%` }) : null))),
    h("div", { class: "muted" }, `${state.passed} passed · ${state.failed} failed · ${state.errors} errors · ${state.not_evaluated} not evaluated`,
      state.running.length ? ` · running ${state.running.join(", ")}` : ""),
    p.error ? h("div", { class: "error", "data-testid": "run-error" }, p.error) : null);
}

async function follow(runId, mine, slot, onTrial) {
  // Poll while the workflow runs; bounded by the page (a newer render stops it) and by FOLLOW_LIMIT_MS.
  const started = Date.now();
  let done = -1;
  // One button for the whole follow: a redraw must not bring back one that was clicked.
  const cancel = h("button", { class: "no-btn push-right", "data-testid": "cancel-run" }, "Cancel run");
  cancel.onclick = async () => {
    cancel.disabled = true;
    cancel.textContent = "cancelling…";
    try { await deps.api(`/evals/runs/${enc(runId)}/cancel`, { method: "POST", body: {} }); } catch (e) {
      cancel.replaceWith(h("span", { class: "error" }, `${e.kind}: ${e.message}`));
    }
  };
  for (;;) {
    let p;
    try { p = await deps.api(`/evals/runs/${enc(runId)}/progress`); } catch (e) {
      if (mine === token) slot.replaceChildren(h("div", { class: "error" }, `${e.kind}: ${e.message}`));
      return null;
    }
    if (mine !== token) return null;
    slot.replaceChildren(progressView(p, cancel));
    if (p.status !== "running") return p;
    if (p.progress && p.progress.done !== done) { done = p.progress.done; onTrial(); } // a trial finished: show it
    if (Date.now() - started > FOLLOW_LIMIT_MS) {
      slot.append(h("div", { class: "muted" }, "stopped following after 2 hours; reload to follow again"));
      return null;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function renderRun(runId, mine, resumed = false) {
  const slot = h("div", {});
  const body = h("div", {});
  deps.main.replaceChildren(h("a", { href: "#/evals" }, "← all runs"), h("h1", {}, runId), slot, body);
  let detail = await deps.api(`/evals/runs/${enc(runId)}`).catch((e) => e);
  if (mine !== token) return;
  if (!(detail instanceof Error) && detail.run.status !== "running" && !resumed) { showRun(detail, body, mine); return; }
  // Not stored yet (the suite is listing its cases) or still running: follow the workflow.
  if (!(detail instanceof Error)) showRun(detail, body, mine, false, true);
  const refresh = async () => {
    const now = await deps.api(`/evals/runs/${enc(runId)}`).catch(() => null);
    if (now && mine === token) showRun(now, body, mine, false, true);
  };
  const ended = await follow(runId, mine, slot, refresh);
  if (!ended || mine !== token) return;
  detail = await deps.api(`/evals/runs/${enc(runId)}`).catch((e) => e);
  if (mine !== token) return;
  if (detail instanceof Error) { body.replaceChildren(h("div", { class: "error" }, `${detail.kind}: ${detail.message}`)); return; }
  showRun(detail, body, mine, ended.status !== "completed");
}

// A durable run that stopped before its end (cancelled, or its workflow failed) goes on under its id.
function resumeButton(run, mine) {
  const button = h("button", { class: "primary", "data-testid": "resume-run" }, "Resume");
  const error = h("span", { class: "error", hidden: true, "data-testid": "resume-error" });
  button.onclick = async () => {
    button.disabled = true;
    try {
      await deps.api(`/evals/runs/${enc(run.run_id)}/resume`, { method: "POST", body: {} });
      if (mine === token) renderRun(run.run_id, ++token, true); // the store says "cancelled" until the workflow records again
    } catch (e) {
      error.textContent = `${e.kind}: ${e.message}`;
      error.hidden = false;
      button.disabled = false;
    }
  };
  return h("span", { class: "row" }, button, error, h("span", { class: "hint" }, "runs only the trials it has not recorded"));
}

function showRun(detail, body, mine, stopped = false, following = false) {
  const { run, cases, trials } = detail;
  const resumable = !following && run.mode === "durable" && (run.status === "cancelled" || (stopped && run.status === "running"));
  const sessionLink = (s) => (s ? h("a", { href: `#/chat/${enc(s.app_name)}/${enc(s.user_id)}/${enc(s.session_id)}`, class: "mono" }, "session") : "—");
  const traceLink = (t) => h("a", { href: `#/evals/${enc(run.run_id)}/trial/${enc(t.case_name)}/${t.trial}`, "data-testid": `trace-${t.case_name}-${t.trial}` }, "trace");
  body.replaceChildren(
    h("div", { class: "kv card", "data-testid": "run" }, [
      ["suite", h("span", {}, h("span", { class: "mono" }, run.suite), " · ", h("a", { href: `#/eval-trend/${enc(run.suite)}`, "data-testid": "trend-link" }, "trend"))],
      ["mode", run.mode], ["status", h("span", { class: "row" }, statusBadge(run.status), resumable ? resumeButton(run, mine) : null)],
      ["started", when(run.start_time)], ["ended", when(run.end_time) || "—"], ["summary", summaryText(run.summary)],
    ].flatMap(([k, v]) => [h("div", { class: "muted" }, k), h("div", {}, v)])),
    compareWith(run),
    h("h2", {}, `Cases (${cases.length})`),
    h("table", { "data-testid": "cases" }, h("tr", {}, ["case", "status", "trials passed", "pass^k", "duration"].map((c) => h("th", {}, c))),
      cases.map((c) => h("tr", {}, h("td", {}, c.case_name), h("td", {}, statusBadge(c.status)), h("td", {}, `${c.passed_trials}/${c.trials}`),
        h("td", {}, fixed(c.pass_hat_k)), h("td", {}, `${Math.round(c.duration_ms)} ms`)))),
    h("h2", {}, `Trials (${trials.length})`),
    h("table", { "data-testid": "trials" }, h("tr", {}, ["case", "trial", "status", "metrics", "turns", "trace", "error"].map((c) => h("th", {}, c))),
      trials.map((t) => h("tr", {}, h("td", {}, t.case_name), h("td", {}, t.trial), h("td", {}, statusBadge(t.status)), h("td", {}, metricsView(t.metrics)),
        h("td", {}, t.turns), h("td", {}, traceLink(t), t.session ? " · " : "", sessionLink(t.session)),
        h("td", {}, t.error ? `${t.error.phase}: ${t.error.message}` : notEvaluatedReason(t) || t.termination_reason || "")))));
}

function compareWith(run) {
  // The suite's other runs, filled in when they arrive: the run's view does not wait for them.
  const slot = h("div", { class: "row compare-with" });
  deps.api("/evals/runs?limit=100").then(({ runs }) => {
    const others = runs.filter((r) => r.suite === run.suite && r.run_id !== run.run_id);
    if (!others.length) return;
    const pick = h("select", { "data-testid": "compare-with", "aria-label": "run to compare with" },
      others.map((r) => h("option", { value: r.run_id }, `${r.run_id} · ${when(r.start_time)}`)));
    const go = h("button", { onclick: () => { location.hash = `#/eval-compare/${enc(pick.value)}/${enc(run.run_id)}`; } }, "Compare");
    slot.replaceChildren(h("span", { class: "muted" }, "Compare with an earlier run of this suite:"), pick, go);
  }).catch(() => {});
  return slot;
}

// --- one trial's trace --------------------------------------------------------------------------------
function toolCalls(events) {
  const results = new Map();
  for (const e of events) for (const p of e.content?.parts || []) if (p.function_response) results.set(p.function_response.id || p.function_response.name, p.function_response.response);
  const calls = [];
  for (const e of events) {
    if (e.author === "user") continue;
    for (const p of e.content?.parts || []) {
      const c = p.function_call;
      if (c && c.name !== "adk_request_confirmation") calls.push({ agent: e.author, name: c.name, args: c.args || {}, result: results.get(c.id || c.name) });
    }
  }
  return calls;
}

function stateTable(state, testid) {
  const keys = Object.keys(state);
  if (!keys.length) return h("div", { class: "muted", "data-testid": testid }, "(empty)");
  return h("table", { class: "state", "data-testid": testid }, keys.sort().map((k) => h("tr", {}, h("td", { class: "mono" }, k), h("td", { class: "mono" }, JSON.stringify(state[k])))));
}

async function renderTrial(runId, caseName, trial, mine) {
  let t;
  try { t = await deps.api(`/evals/runs/${enc(runId)}/trace?case=${enc(caseName)}&trial=${trial}`); } catch (e) { fail(e); return; }
  if (mine !== token) return;
  const calls = toolCalls(t.events);
  const judges = t.judges.map((j) => h("div", { class: `card judge ${j.passed ? "ok-edge" : j.evaluated ? "fail-edge" : "unchecked-edge"}`, "data-testid": `judge-${j.metric}` },
    h("div", { class: "row" }, h("span", { class: mark(j)[0] }, mark(j)[1]), h("b", {}, j.metric), j.judge ? h("span", { class: "badge" }, "judge") : null,
      j.score === null || j.score === undefined ? null : h("span", { class: "muted" }, `score ${fixed(j.score)}`)),
    j.rationale.length ? h("ul", { class: "rationale" }, j.rationale.map((r) => h("li", {}, r))) : h("div", { class: "muted" }, "no rationale given")));
  deps.main.replaceChildren(
    h("a", { href: `#/evals/${enc(runId)}` }, `← run ${runId}`),
    h("h1", {}, `${caseName} · trial ${trial} `, statusBadge(t.trial.status)),
    h("div", { class: "muted" }, `${t.trial.turns} turn${t.trial.turns === 1 ? "" : "s"} · ${Math.round(t.trial.duration_ms)} ms`, t.trial.termination_reason ? ` · stopped by ${t.trial.termination_reason}` : "",
      t.trial.error ? ` · ${t.trial.error.phase} error: ${t.trial.error.message}` : ""),
    h("div", { class: "trace" },
      h("div", {},
        h("h2", {}, "Conversation"),
        t.stored ? h("div", { class: "log", "data-testid": "trace-log" }, t.events.map((e) => deps.eventView(e)))
          : h("div", { class: "card muted" }, "No stored trace: the run kept none (an in-process run without a database)."),
        h("h2", {}, `Tool calls (${calls.length})`),
        calls.length ? h("table", { "data-testid": "tool-calls" }, h("tr", {}, ["tool", "arguments", "result"].map((c) => h("th", {}, c))),
          calls.map((c) => h("tr", {}, h("td", { class: "mono" }, c.name), h("td", {}, h("pre", {}, pretty(c.args))),
            h("td", {}, c.result === undefined ? h("span", { class: "muted" }, "no result") : h("pre", {}, pretty(c.result))))))
          : h("div", { class: "muted" }, "none")),
      h("div", {},
        h("h2", {}, "Metrics"), judges,
        h("h2", {}, "State before"), h("div", { class: "hint" }, "as the trial started, less the keys it wrote (the store keeps only their last value)"), stateTable(t.state_before, "state-before"),
        h("h2", {}, "Written during the trial"),
        t.changes.length ? h("table", { class: "state", "data-testid": "state-changes" }, t.changes.map((c) => h("tr", {}, h("td", { class: "mono" }, c.key),
          h("td", { class: "mono" }, JSON.stringify(c.value)), h("td", { class: "muted" }, `event ${c.event_index + 1} (${c.author})`)))) : h("div", { class: "muted" }, "nothing"),
        h("h2", {}, "State after"), stateTable(t.state_after, "state-after"))));
}

// --- two runs side by side ---------------------------------------------------------------------------
const verdict = (passed, score) => (passed === null || passed === undefined ? h("span", { class: "muted" }, "—")
  : h("span", {}, h("span", { class: passed ? "pass" : "fail" }, passed ? "✓" : "✗"), score === null || score === undefined ? "" : ` ${Number(score).toFixed(2)}`));

async function renderCompare(a, b, mine) {
  let c;
  try { c = await deps.api(`/evals/compare?a=${enc(a)}&b=${enc(b)}`); } catch (e) { fail(e); return; }
  if (mine !== token) return;
  const rows = c.cases.flatMap((k) => [
    h("tr", { class: `case-row ${k.change}`, "data-testid": `case-${k.case_name}` },
      h("td", {}, h("b", {}, k.case_name)), h("td", {}, k.before ? statusBadge(k.before) : "—"), h("td", {}, k.after ? statusBadge(k.after) : "—"),
      h("td", {}, changeBadge(k.change))),
    ...k.metrics.map((m) => h("tr", { class: `metric-row ${m.change}`, "data-testid": `metric-${k.case_name}-${m.metric}` },
      h("td", { class: "indent mono" }, m.metric), h("td", {}, verdict(m.before, m.score_before)),
      h("td", {}, verdict(m.after, m.score_after), delta(m.score_before, m.score_after)),
      h("td", {}, changeBadge(m.change)))),
  ]);
  const head = (run) => h("div", { class: "card" }, h("a", { href: `#/evals/${enc(run.run_id)}`, class: "mono" }, run.run_id), h("div", { class: "mono muted" }, run.suite),
    h("div", {}, statusBadge(run.status), " ", summaryText(run.summary)), h("div", { class: "muted" }, when(run.start_time)));
  deps.main.replaceChildren(
    h("a", { href: "#/evals" }, "← all runs"), h("h1", {}, "Compare runs"),
    h("div", { class: "grid" }, h("div", {}, h("div", { class: "muted" }, "A (before)"), head(c.a)), h("div", {}, h("div", { class: "muted" }, "B (after)"), head(c.b))),
    h("p", { "data-testid": "compare-summary" }, h("b", { class: c.regressions ? "fail" : "" }, `${c.regressions} regressions`), ` · `,
      h("b", { class: c.fixes ? "pass" : "" }, `${c.fixes} fixes`), h("span", { class: "muted" }, " (cases and metrics that passed in A and not in B, and the other way)")),
    h("table", { class: "compare", "data-testid": "comparison" }, h("tr", {}, ["case / metric", "A", "B", "change"].map((t) => h("th", {}, t))), rows));
}

function delta(before, after) {
  if (before === null || before === undefined || after === null || after === undefined || before === after) return null;
  const d = after - before;
  return h("span", { class: d > 0 ? "delta up" : "delta down" }, ` ${d > 0 ? "+" : ""}${d.toFixed(2)}`);
}

function changeBadge(change) {
  const kind = { regression: "failed", fix: "done", added: "", removed: "completed" }[change];
  return change === "same" ? h("span", { class: "muted" }, "same") : h("span", { class: `badge ${kind}` }, change);
}

// --- trend of a suite, per metric (inline SVG) ------------------------------------------------------------
async function renderTrend(suite, mine) {
  let t;
  try { t = await deps.api(`/evals/trend?suite=${enc(suite)}&limit=30`); } catch (e) { fail(e); return; }
  if (mine !== token) return;
  deps.main.replaceChildren(
    h("a", { href: "#/evals" }, "← all runs"), h("h1", {}, "Trend"), h("div", { class: "mono muted" }, suite),
    h("p", { class: "muted" }, `${t.runs.length} runs of this suite, oldest first; a metric without a score of its own plots the share of trials it passed.`),
    legend(),
    t.runs.length ? h("div", { class: "charts" }, t.metrics.map((m) => h("div", { class: "card chart", "data-testid": `trend-${m}` }, h("b", {}, m), chart(t.runs, m))))
      : h("div", { class: "card muted" }, "No runs of this suite yet."));
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function chart(runs, metric) {
  const W = 520, H = 200, L = 34, R = 40, T = 14, B = 34;
  const P = 40; // the first and last points sit inside the plot, so their time labels are not cut
  const x = (i) => L + P + (runs.length === 1 ? (W - L - R - 2 * P) / 2 : (i * (W - L - R - 2 * P)) / (runs.length - 1));
  const y = (v) => T + (1 - v) * (H - T - B);
  const grid = [0, 0.5, 1].map((v) => [s("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "gridline" }), s("text", { x: L - 6, y: y(v) + 4, class: "tick", "text-anchor": "end" }, v.toFixed(1))]);
  const line = (pick, cls) => {
    const pts = runs.map((r, i) => [i, pick(r.metrics[metric])]).filter(([, v]) => v !== null && v !== undefined);
    return pts.length ? s("polyline", { points: pts.map(([i, v]) => `${x(i)},${y(v)}`).join(" "), class: cls }) : null;
  };
  const score = (p) => (p ? (p.score ?? p.pass_rate) : null);
  const dots = runs.map((r, i) => {
    const p = r.metrics[metric];
    if (!p) return null;
    return s("circle", { cx: x(i), cy: y(score(p)), r: 4, class: p.pass_rate === 1 ? "dot pass" : "dot fail", "data-run": r.run_id },
      s("title", {}, `${r.run_id}: score ${fixed(p.score)}, passed ${Math.round(p.pass_rate * 100)}% of ${p.trials} trials`));
  });
  // x labels: when each run started (its id is the point's tooltip); at most ~6, so they never overlap.
  const every = Math.ceil(runs.length / 6);
  const labels = runs.map((r, i) => (i % every && i !== runs.length - 1 ? null
    : s("text", { x: x(i), y: H - B + 18, class: "tick", "text-anchor": "middle" }, startedAt(r.start_time))));
  const last = runs[runs.length - 1].metrics[metric];
  const latest = last ? s("text", { x: x(runs.length - 1) + 8, y: y(score(last)) + 4, class: "latest" }, fixed(score(last))) : null;
  return s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": `trend of ${metric}` },
    grid, line((p) => (p ? p.pass_rate : null), "rate"), line(score, "score"), dots, labels, latest);
}

function startedAt(t) {
  const d = new Date(t * 1000);
  return `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })}`;
}

function legend() {
  const item = (cls, text) => h("span", { class: `legend ${cls}` }, text);
  return h("div", { class: "row muted" }, item("score", "mean score"), item("rate", "trials passed"), item("dot-pass", "every trial passed"),
    item("dot-fail", "a trial failed"));
}

// --- the chat page's "Save as eval case" --------------------------------------------------------------
export async function saveSessionAsCase(api, path, session, status) {
  try {
    const exported = await api(`${path}/eval-case`);
    const file = `${session}.eval-case.json`;
    const url = URL.createObjectURL(new Blob([JSON.stringify(exported, null, 2)], { type: "application/json" }));
    const a = h("a", { href: url, download: file });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    status.replaceChildren(h("div", { class: "ok", "data-testid": "case-saved" }, `Saved ${file}: `,
      h("code", {}, "eval_case(SimulatorExport.model_validate_json(open(file).read()), app)"), " replays it (docs/eval.md)."));
  } catch (e) {
    status.replaceChildren(h("div", { class: "error", "data-testid": "case-error" }, `${e.kind || "Error"}: ${e.message}`));
  }
}
