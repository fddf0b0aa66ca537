// The sandbox-agent page: plain JS, no build step, no network beyond this server.
// Everything shown comes from the API and may hold model output, so it is only ever
// placed with textContent / createElement, never parsed as HTML.
"use strict";

const TOKEN_KEY = "sandbox-agent-token";
const LIST_REFRESH_MS = 2000;
let listTimer = null;
let streamAbort = null;
let shownRunId = null;

const $ = (id) => document.getElementById(id);

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

class AuthError extends Error {}

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {}, { Authorization: "Bearer " + token() });
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) { showLogin("The token was refused."); throw new AuthError("401"); }
  return response;
}

async function apiJson(path, options) {
  const response = await api(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail ? JSON.stringify(body.detail) : response.statusText);
  return body;
}

function showLogin(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  $("main").hidden = true;
  $("forget-token").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  if (listTimer) { clearInterval(listTimer); listTimer = null; }
}

async function start() {
  $("login").hidden = true;
  $("main").hidden = false;
  $("forget-token").hidden = false;
  try {
    await loadFixtures();
    await refreshRuns();
    loadPreflight();
  } catch (error) { if (!(error instanceof AuthError)) throw error; return; }
  if (!listTimer) listTimer = setInterval(() => refreshRuns().catch(() => {}), LIST_REFRESH_MS);
  route();
}

async function loadPreflight() {
  const status = await apiJson("/preflight");
  $("preflight").textContent = "preflight: " + status.status + (status.detail ? " (" + status.detail + ")" : "");
}

async function loadFixtures() {
  const data = await apiJson("/fixtures");
  const fixture = $("fixture");
  const provider = $("provider");
  fixture.replaceChildren(...data.fixtures.map((name) => el("option", name)));
  provider.replaceChildren(...data.providers.map((name) => el("option", name)));
}

function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return seconds < 60 ? seconds.toFixed(1) + " s" : (seconds / 60).toFixed(1) + " min";
}

function formatBudget(budget) {
  if (!budget) return "";
  return budget.iterations + " it, " + budget.tool_calls + " calls, " +
    budget.policy_denials + " denials, " + budget.invalid_outputs + " invalid";
}

function statusBadge(status) { return el("span", status, "status status-" + status); }

async function refreshRuns() {
  const data = await apiJson("/runs?limit=100");
  const rows = data.runs.map((run) => {
    const row = el("tr");
    row.dataset.runId = run.id;
    const link = el("a", run.id.slice(0, 8), "run-link");
    link.href = "#/runs/" + run.id;
    const cells = [link, statusBadge(run.status), el("span", run.fixture_name),
      el("span", run.provider), el("span", formatDuration(run.duration_s)),
      el("span", formatBudget(run.budget_used)),
      el("span", new Date(run.submitted_at * 1000).toLocaleTimeString())];
    for (const content of cells) { const cell = el("td"); cell.append(content); row.append(cell); }
    return row;
  });
  $("runs").tBodies[0].replaceChildren(...rows);
}

async function submitRun(event) {
  event.preventDefault();
  const body = { fixture: $("fixture").value, task: $("task").value, provider: $("provider").value };
  const planText = $("plan").value.trim();
  if (planText) {
    try { body.plan = JSON.parse(planText); } catch (error) {
      $("submit-status").textContent = "The plan is not valid JSON: " + error.message; return;
    }
  }
  $("submit-status").textContent = "submitting...";
  try {
    const response = await api("/runs", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    const data = await response.json();
    if (!response.ok) {
      const retry = response.headers.get("Retry-After");
      $("submit-status").textContent = "Refused (" + response.status + "): " + JSON.stringify(data.detail) +
        (retry ? " - retry in " + retry + " s" : "");
      return;
    }
    $("submit-status").textContent = "queued " + data.id;
    await refreshRuns();
    location.hash = "#/runs/" + data.id;
  } catch (error) {
    if (!(error instanceof AuthError)) $("submit-status").textContent = "Failed: " + error.message;
  }
}

function route() {
  const match = /^#\/runs\/([0-9a-f]{32})$/.exec(location.hash);
  if (streamAbort) { streamAbort.abort(); streamAbort = null; }
  if (!match) { $("run-view").hidden = true; shownRunId = null; return; }
  shownRunId = match[1];
  $("run-view").hidden = false;
  $("events").replaceChildren();
  showRun(shownRunId).then(() => followEvents(shownRunId)).catch(() => {});
}

function fact(list, name, value, className) {
  list.append(el("dt", name), el("dd", value, className));
}

function toolDetail(call) {
  const result = call.result || {};
  if (call.tool === "run_tests") {
    return result.status + ", " + result.tests_run + " run, " + result.failures + " failed";
  }
  if (call.denial) return result.message || "";
  for (const key of ["path", "summary", "files", "pattern"]) {
    if (result[key] !== undefined) return key + ": " + (Array.isArray(result[key]) ? result[key].join(", ") : result[key]);
  }
  return "";
}

function renderTimeline(calls) {
  $("timeline").replaceChildren(...calls.map((call, index) => {
    const item = el("li", null, call.denial ? "denied" : (call.ok ? "ok" : "failed"));
    item.append(el("strong", (index + 1) + ". " + call.tool));
    item.append(el("span", " " + (call.ok ? "ok" : "not ok") + " - " + call.duration_ms.toFixed(1) + " ms"));
    if (call.denial) item.append(el("span", "DENIED: " + call.denial, "denial"));
    const detail = toolDetail(call);
    if (detail) item.append(el("span", detail, "detail"));
    return item;
  }));
}

function renderEvidence(calls) {
  const rows = [];
  calls.forEach((call, index) => {
    if (call.tool !== "run_tests") return;
    const result = call.result || {};
    const row = el("tr");
    for (const value of [index + 1, result.status, String(result.attested), result.runtime,
      result.exit_code, result.tests_run, result.failures]) {
      row.append(el("td", value === undefined ? "" : value));
    }
    rows.push(row);
  });
  $("evidence").tBodies[0].replaceChildren(...rows);
}

function renderDiff(diff) {
  const pre = $("diff");
  if (!diff) { pre.replaceChildren(el("span", "(no changes)", "muted")); return; }
  pre.replaceChildren(...diff.split("\n").map((line) => {
    let kind = "";
    if (line.startsWith("+") && !line.startsWith("+++")) kind = "add";
    else if (line.startsWith("-") && !line.startsWith("---")) kind = "del";
    else if (line.startsWith("@@")) kind = "hunk";
    return el("span", line + "\n", kind);
  }));
}

async function showRun(runId) {
  const run = await apiJson("/runs/" + runId);
  if (runId !== shownRunId) return run;
  $("run-id").textContent = run.id;
  $("run-status").replaceWith(Object.assign(statusBadge(run.status), { id: "run-status" }));
  $("run-reason").textContent = run.reason;
  $("cancel-button").hidden = !(run.status === "QUEUED" || run.status === "RUNNING");
  const facts = $("run-facts");
  facts.replaceChildren();
  fact(facts, "Fixture", run.fixture_name);
  fact(facts, "Provider", run.provider + (run.model ? " / " + run.model : ""));
  fact(facts, "Task", run.task);
  fact(facts, "Duration", formatDuration(run.duration_s));
  fact(facts, "Budget used", formatBudget(run.budget_used));
  if (run.fixture) {
    fact(facts, "Fixture integrity", run.fixture.intact ? "intact" : "CHANGED", "intact-" + run.fixture.intact);
    fact(facts, "sha256 before", run.fixture.sha256_before);
    fact(facts, "sha256 after", run.fixture.sha256_after);
  }
  if (run.final_tests) {
    const tests = run.final_tests;
    fact(facts, "Final tests", (tests.passed ? "passed" : "not passed") + " - " + tests.tests_run +
      " run, " + tests.failures + " failures (" + tests.status + ")");
  }
  if (run.model_summary) fact(facts, "Model's summary (not believed)", run.model_summary);
  renderTimeline(run.tool_calls || []);
  renderEvidence(run.tool_calls || []);
  renderDiff(run.diff);
  return run;
}

function addEvent(data) {
  let text = data;
  try {
    const event = JSON.parse(data);
    const kind = event.event || event.type || "event";
    text = kind + (event.tool ? " " + event.tool : "") + (event.denial ? " DENIED " + event.denial : "") +
      " " + JSON.stringify(event).slice(0, 300);
  } catch (error) { /* shown as received */ }
  $("events").append(el("li", text));
}

// EventSource cannot send an Authorization header, so the stream is read with fetch.
async function followEvents(runId) {
  const controller = new AbortController();
  streamAbort = controller;
  let response;
  try {
    response = await api("/runs/" + runId + "/events", { signal: controller.signal });
  } catch (error) { return; }
  if (!response.ok || !response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let split;
      while ((split = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, split);
        buffer = buffer.slice(split + 2);
        let name = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (name === "trace") addEvent(data.join("\n"));
        if (name === "end" && runId === shownRunId) { await showRun(runId); await refreshRuns(); }
      }
    }
  } catch (error) { /* aborted when another run is shown */ }
}

async function cancelShownRun() {
  if (!shownRunId) return;
  await apiJson("/runs/" + shownRunId + "/cancel", { method: "POST" });
  await showRun(shownRunId);
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    $("token-input").value = "";
    start();
  });
  $("forget-token").addEventListener("click", () => showLogin(""));
  $("submit-form").addEventListener("submit", submitRun);
  $("cancel-button").addEventListener("click", () => cancelShownRun().catch(() => {}));
  window.addEventListener("hashchange", route);
  if (token()) start(); else showLogin("");
});
