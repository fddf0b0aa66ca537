// The run viewer: one page for `sandbox-agent serve` (a service's runs, live, with a
// token) and `sandbox-agent view` (runs and evaluations from a folder, read-only).
// Plain ES modules, no build step, nothing from the network but this server.

import { $, box, el, fact, link } from "./dom.js";
import * as fmt from "./format.js";
import { AuthError, detectMode, local, service } from "./api.js";
import { Transcript } from "./transcript.js";
import { renderSandboxRuns, renderSeal, renderVerdicts } from "./evidence.js";
import { renderDiff } from "./diff.js";
import { renderEval } from "./evals.js";

const LIST_REFRESH_MS = 2000;
const RECONNECT_MS = 2000;
const IN_FLIGHT = ["QUEUED", "RUNNING"];
const str = (value) => (typeof value === "string" ? value : "");
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

let mode = "service";
let listTimer = null;
let shown = null;   // what the page shows now: {kind, key, abort, transcript, ...}

const runHref = (key) => "#/runs/" + encodeURIComponent(key);
const evalHref = (key) => "#/evals/" + encodeURIComponent(key);

function statusBadge(status, id) {
  const node = el("span", status || "no result", "status status-" + (status || "NONE"));
  if (id) node.id = id;
  return node;
}

function showOnly(section) {
  for (const id of ["home", "run-view", "eval-view"]) $(id).hidden = id !== section;
}

function showError(message) {
  $("page-error").textContent = message || "";
  $("page-error").hidden = !message;
}

// ---- the lists ----------------------------------------------------------------------

// A long value in a list is clamped to three lines (its title holds it all); the run's
// own view shows it whole.
const LIST_CELLS = ["clamp", "", "clamp", "clamp", "clamp", "", "short", ""];

function runRow(cells, href, status) {
  const row = el("tr");
  const open = link(cells.label, href, "run-link");
  const values = [open, statusBadge(status), cells.task, cells.source, cells.provider,
    cells.started, cells.duration, cells.budget];
  values.forEach((value, index) => {
    const content = value instanceof Node ? value : el("span", value);
    if (LIST_CELLS[index] === "clamp" && !(value instanceof Node)) content.title = String(value || "");
    row.append(box("td", LIST_CELLS[index] || null, content));
  });
  return row;
}

function providerText(provider, model) {
  const p = str(provider);
  const m = str(model);
  return m && m !== p ? p + " · " + m : p;
}

// The runs and evaluations come newest first, as the server sorts them (serve's list too).
// `view RUN_DIR` or `view RESULTS_DIR`: the folder itself (key ".") is opened, not listed
// as one item, even from the bare URL.
function renderViewHome(home) {
  $("mode-note").textContent = "read-only view of " + str(home.root);
  const runs = Array.isArray(home.runs) ? home.runs : [];
  const evals = Array.isArray(home.evals) ? home.evals : [];
  const itself = evals.some((item) => item.key === ".") ? evalHref(".") :
    (runs.length === 1 && runs[0].key === "." ? runHref(".") : null);
  if (itself) {
    location.replace(itself);
    return;
  }
  $("runs").tBodies[0].replaceChildren(...runs.map((run) => {
    const row = runRow({
      label: str(run.run_id) || run.key, task: str(run.task), source: str(run.source),
      provider: providerText(run.provider, run.model), started: fmt.timeNode(run.started),
      duration: fmt.seconds(run.wall_seconds), budget: fmt.budget(run.budget_used),
    }, runHref(run.key), run.status);
    if (Array.isArray(run.problems) && run.problems.length) row.cells[1].append(el("div", run.problems.join("; "), "problem"));
    return row;
  }));
  $("runs-empty").hidden = runs.length > 0;
  $("evals-section").hidden = evals.length === 0;
  $("evals").tBodies[0].replaceChildren(...evals.map((item) => {
    const s = isObject(item.summary) ? item.summary : {};
    const row = el("tr");
    const cells = [link(str(item.key), evalHref(item.key), "eval-link"), fmt.timeNode(item.started_at), str(item.suite),
      providerText(item.provider, item.model), fmt.describe(s.runs), fmt.describe(s.passed), fmt.describe(s.clean),
      (s.attempted_violations === undefined ? "" : s.attempted_violations + " attempted, " + s.executed_violations + " executed")];
    for (const value of cells) row.append(box("td", null, value instanceof Node ? value : el("span", value)));
    if (Array.isArray(item.problems) && item.problems.length) row.cells[2].append(el("div", item.problems.join("; "), "problem"));
    return row;
  }));
  if (home.complete === false) showError("The folder holds more than the viewer scanned (--max-runs, --max-depth, --max-scan-entries).");
}

async function refreshServiceRuns() {
  const data = await service.runs();
  const runs = Array.isArray(data.runs) ? data.runs : [];
  $("runs").tBodies[0].replaceChildren(...runs.map((run) => runRow({
    label: str(run.id).slice(0, 8), task: str(run.task), source: str(run.fixture_name) || str(run.repo), provider: str(run.provider),
    started: fmt.timeNode(run.submitted_at), duration: fmt.seconds(run.duration_s), budget: fmt.budget(run.budget_used),
  }, runHref(run.id), run.status)));
  $("runs-empty").hidden = runs.length > 0;
}

// ---- a run ---------------------------------------------------------------------------

function resetRunView(key) {
  if (shown && shown.abort) shown.abort.abort();
  const transcript = new Transcript($("transcript"));
  $("transcript").replaceChildren();
  for (const id of ["run-facts", "verdict-facts", "sandbox-runs", "diff", "run-problems"]) $(id).replaceChildren();
  $("run-id").textContent = key;
  $("run-status").replaceWith(statusBadge("", "run-status"));
  $("run-reason").textContent = "";
  $("run-context").replaceChildren();
  setLive(null);
  $("cancel-button").hidden = true;
  renderSeal($("seal"), null, "loading");
  shown = { kind: "run", key, abort: new AbortController(), transcript, result: null, run: null, page: null };
  return shown;
}

function setLive(state, text) {
  const node = $("live-state");
  node.hidden = !state;
  node.className = "live live-" + (state || "none");
  node.textContent = text || "";
}

function focusItem(node) {
  if (!node) return;
  node.focus({ preventScroll: true });
  node.scrollIntoView({ block: "start" });
  node.classList.remove("flash");
  void node.offsetWidth;
  node.classList.add("flash");
}

function focusTurn(number) {
  if (shown && shown.transcript) focusItem(shown.transcript.turnElement(number));
}

// Header facts from the result, the trace's first and last events and the service's run.
function renderHeader(state) {
  const result = state.result || {};
  const run = state.run || {};
  const events = state.transcript.items.map((item) => item.events[0]).filter(Boolean);
  const start = (events.find((event) => event.event === "run_started")) || {};
  const end = (events.find((event) => event.event === "run_finished")) || {};
  const status = str(run.status) || str(result.status) || str(end.status);
  $("run-status").replaceWith(statusBadge(status, "run-status"));
  $("run-reason").textContent = str(run.reason) || str(result.reason) || str(end.reason) ||
    (state.page && !state.page.result ? "no result: the run is still going, or stopped before its end" : "");
  if (str(result.run_id)) $("run-id").textContent = result.run_id;
  const facts = $("run-facts");
  facts.replaceChildren();
  fact(facts, "Task", str(start.task) || str(run.task));
  fact(facts, "Repository", str(run.repo) || str(start.source) || str(run.fixture_name));
  fact(facts, "Strategy", str(result.strategy) || str(run.strategy));
  fact(facts, "Provider", providerText(str(result.provider) || str(run.provider) || str(start.provider), str(result.model) || str(run.model)));
  fact(facts, "Runtime", str(result.runtime) || str(start.runtime));
  if (run.submitted_at) fact(facts, "Submitted", fmt.timeNode(run.submitted_at));
  fact(facts, "Started", fmt.toDate(start.time) ? fmt.timeNode(start.time) : (run.started_at ? fmt.timeNode(run.started_at) : ""));
  fact(facts, "Finished", fmt.toDate(end.time) ? fmt.timeNode(end.time) : (run.finished_at ? fmt.timeNode(run.finished_at) : ""));
  const used = isObject(result.budget_used) ? result.budget_used : (isObject(run.budget_used) ? run.budget_used : null);
  fact(facts, "Duration", fmt.seconds(used && used.wall_seconds ? used.wall_seconds : run.duration_s));
  fact(facts, "Budgets used", fmt.budget(used));
  if (Array.isArray(result.files_changed)) fact(facts, "Files changed", result.files_changed.join(", ") || "none");
  if (str(result.model_summary)) {
    fact(facts, "Model's summary", box("span", null, el("span", result.model_summary, "quote"),
      el("span", " (recorded, never believed)", "muted")));
  }
  if (str(result.trace_path)) fact(facts, "Trace (as recorded)", result.trace_path, "path");
  renderVerdicts($("verdict-facts"), result, state.page && state.page.evaluation ? state.page.evaluation.heldout : null,
    IN_FLIGHT.includes(status));
  $("cancel-button").hidden = !(mode === "service" && IN_FLIGHT.includes(status));
}

function renderDerived(state) {
  renderSandboxRuns($("sandbox-runs"), state.transcript, focusTurn);
  const diff = str(state.result && state.result.diff) || str(state.page && state.page.diff);
  renderDiff($("diff"), diff, state.transcript.changedBy, focusTurn);
  const hidden = state.transcript.hiddenEvents;
  if (hidden) $("run-problems").append(el("li", hidden + " more events are not shown."));
}

// A run on disk with no result yet may still be going: its folder is read again every
// LOCAL_POLL_MS and the new events are added, until the result appears.
const LOCAL_POLL_MS = 3000;

async function showLocalRun(key) {
  const state = resetRunView(key);
  const page = await local.run(key);
  if (state !== shown) return;
  renderLocalRun(state, page);
  let polled = false;
  while (!state.result && state === shown && !state.abort.signal.aborted) {
    setLive("live", "● no result yet: re-reading the folder every " + LOCAL_POLL_MS / 1000 + " s");
    await new Promise((resolve) => setTimeout(resolve, LOCAL_POLL_MS));
    if (state !== shown || state.abort.signal.aborted) return;
    renderLocalRun(state, await local.run(key));
    polled = true;
  }
  if (polled && state === shown && state.result) setLive("ended", "finished: " + str(state.result.status));
}

function renderLocalRun(state, page) {
  state.page = page;
  state.result = isObject(page.result) ? page.result : null;
  const events = Array.isArray(page.events) ? page.events : [];
  for (const event of events.slice(state.added || 0)) state.transcript.add(event);
  state.added = Math.max(state.added || 0, events.length);
  // A missing result is said once, in the headline; the seal waits for it.
  const problems = (page.problems || []).filter((problem) => state.result || !problem.endsWith("result.json is missing"));
  $("run-problems").replaceChildren(...problems.map((problem) => el("li", problem)));
  const evaluation = isObject(page.evaluation) ? page.evaluation : null;
  $("run-context").replaceChildren();
  if (evaluation) {
    $("run-context").append("Run of evaluation ", link(str(evaluation.key), evalHref(evaluation.key)),
      ": task ", el("code", str(evaluation.task_id)), ", repeat " + fmt.describe(evaluation.repeat));
  }
  renderHeader(state);
  const sealed = state.result || (isObject(page.verdict) && (page.verdict.checks || []).some(
    (check) => check && check.name === "evidence" && check.ok === true));
  if (sealed) renderSeal($("seal"), page.verdict);
  else renderSeal($("seal"), null, "not sealed yet: a run is sealed when it ends");
  renderDerived(state);
}

async function showServiceRun(id) {
  const state = resetRunView(id);
  state.run = await service.run(id);
  if (state !== shown) return;
  state.result = state.run;
  renderHeader(state);
  renderSeal($("seal"), null, IN_FLIGHT.includes(state.run.status) ? "not sealed yet: the run is in progress" : "checking");
  followEvents(state);
}

// The run's events over SSE: replayed from the start, then live until its end event.
async function followEvents(state) {
  let last = 0;
  let redraw = null;
  const scheduleRedraw = () => {
    if (redraw) return;
    redraw = requestAnimationFrame(() => { redraw = null; if (state === shown) renderDerived(state); });
  };
  for (;;) {
    setLive(IN_FLIGHT.includes(str(state.run && state.run.status)) ? "live" : "replay",
      IN_FLIGHT.includes(str(state.run && state.run.status)) ? "● live: events appear as the run makes them" : "reading the trace");
    let ended = false;
    try {
      await service.events(state.key, last, state.abort.signal, (frame) => {
        if (frame.name === "trace") {
          if (frame.id) last = frame.id;
          let event = null;
          try { event = JSON.parse(frame.data); } catch (error) { event = { event: "unreadable_line", line: frame.id, why: "not JSON" }; }
          state.transcript.add(event);
          scheduleRedraw();
        } else if (frame.name === "end") {
          ended = true;
        }
      });
    } catch (error) {
      if (state.abort.signal.aborted || error instanceof AuthError) return;
    }
    if (state !== shown || state.abort.signal.aborted) return;
    if (ended) break;
    setLive("lost", "connection lost: reconnecting");
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    if (state !== shown) return;
  }
  state.run = await service.run(state.key);
  if (state !== shown) return;
  state.result = state.run;
  setLive("ended", "finished: " + str(state.run.status));
  renderHeader(state);
  renderDerived(state);
  try {
    renderSeal($("seal"), await service.verdict(state.key));
  } catch (error) {
    renderSeal($("seal"), null, "not available: " + error.message);
  }
  if (listTimer) refreshServiceRuns().catch(() => {});
}

// ---- an evaluation ---------------------------------------------------------------------

async function showEval(key) {
  if (shown && shown.abort) shown.abort.abort();
  shown = { kind: "eval", key };
  const page = await local.evaluation(key);
  if (shown.key !== key) return;
  renderEval($("eval-view"), page, runHref);
}

// ---- routing and keys ------------------------------------------------------------------

function route() {
  showError("");
  const hash = location.hash;
  const run = /^#\/runs\/(.+)$/.exec(hash);
  const evaluation = /^#\/evals\/(.+)$/.exec(hash);
  let work;
  if (run) {
    showOnly("run-view");
    const key = decodeURIComponent(run[1]);
    work = mode === "view" ? showLocalRun(key) : showServiceRun(key);
  } else if (evaluation && mode === "view") {
    showOnly("eval-view");
    work = showEval(decodeURIComponent(evaluation[1]));
  } else {
    if (shown && shown.abort) shown.abort.abort();
    shown = null;
    showOnly("home");
    work = mode === "view" ? local.home().then(renderViewHome) : refreshServiceRuns();
  }
  work.catch((error) => { if (!(error instanceof AuthError)) showError("Could not load this: " + error.message); });
}

function onKey(event) {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
  const target = event.target;
  if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
  if ($("run-view").hidden) return;
  const items = [...$("transcript").children];
  if (!items.length) return;
  const current = items.indexOf(document.activeElement && document.activeElement.closest("#transcript > li"));
  let next = null;
  if (event.key === "j") next = current < 0 ? 0 : Math.min(items.length - 1, current + 1);
  else if (event.key === "k") next = current < 0 ? 0 : Math.max(0, current - 1);
  else if (event.key === "r" && current >= 0) {
    const raw = items[current].querySelector(".raw-events");
    if (raw) raw.open = !raw.open;
    return;
  } else return;
  event.preventDefault();
  focusItem(items[next]);
}

// ---- the service: token, submissions, cancel ---------------------------------------------

function showLogin(message) {
  service.forget();
  $("main").hidden = true;
  $("forget-token").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  if (listTimer) { clearInterval(listTimer); listTimer = null; }
}

async function startService() {
  $("login").hidden = true;
  $("main").hidden = false;
  $("forget-token").hidden = false;
  $("submit-section").hidden = false;
  try {
    const data = await service.fixtures();
    showSubmitChoices(data);
    await refreshServiceRuns();
    service.preflight().then((status) => {
      $("preflight").textContent = "preflight: " + str(status.status) + (str(status.detail) ? " (" + status.detail + ")" : "");
    }).catch(() => {});
  } catch (error) {
    if (!(error instanceof AuthError)) showError("Could not load the runs: " + error.message);
    return;
  }
  if (!listTimer) listTimer = setInterval(() => { if (!$("home").hidden) refreshServiceRuns().catch(() => {}); }, LIST_REFRESH_MS);
  route();
}

// The form's choices and defaults, from GET /fixtures: the server's default provider (its
// first real one), that provider's default strategy, and a folder path under its roots.
let defaultStrategies = {};

function showSubmitChoices(data) {
  $("fixture").replaceChildren(...(Array.isArray(data.fixtures) ? data.fixtures : []).map((name) => el("option", name)));
  const providers = Array.isArray(data.providers) ? data.providers : [];
  $("provider").replaceChildren(...providers.map((name) => el("option", name)));
  if (providers.includes(data.default_provider)) $("provider").value = data.default_provider;
  defaultStrategies = isObject(data.default_strategies) ? data.default_strategies : {};
  showDefaultStrategy();
  const roots = (Array.isArray(data.repo_roots) ? data.repo_roots : []).filter((root) => typeof root === "string");
  $("repo-label").hidden = roots.length === 0;
  $("repo-roots").textContent = roots.length ? "(under " + roots.join(", ") + ")" : "";
  $("repo").placeholder = roots.length ? roots[0] + "/…" : "";
}

function showDefaultStrategy() {
  const strategy = defaultStrategies[$("provider").value];
  if (strategy === "tools" || strategy === "repair") $("strategy").value = strategy;
}

async function submitRun(event) {
  event.preventDefault();
  const body = { task: $("task").value, provider: $("provider").value, strategy: $("strategy").value };
  const repo = $("repo-label").hidden ? "" : $("repo").value.trim();
  if (repo) body.repo = repo; else body.fixture = $("fixture").value;
  const planText = $("plan").value.trim();
  if (planText) {
    try { body.plan = JSON.parse(planText); } catch (error) {
      $("submit-status").textContent = "The plan is not valid JSON: " + error.message;
      return;
    }
  }
  $("submit-status").textContent = "submitting…";
  try {
    const { response, data } = await service.submit(body);
    if (!response.ok) {
      const retry = response.headers.get("Retry-After");
      const detail = typeof data.detail === "string" ? data.detail :
        (Array.isArray(data.detail) ? data.detail.map((item) => fmt.describe(item.loc) + ": " + fmt.describe(item.msg)).join("; ") : response.statusText);
      $("submit-status").textContent = "Refused (" + response.status + "): " + detail + (retry ? " (retry in " + retry + " s)" : "");
      return;
    }
    $("submit-status").textContent = "queued " + data.id;
    location.hash = runHref(data.id);
  } catch (error) {
    if (!(error instanceof AuthError)) $("submit-status").textContent = "Failed: " + error.message;
  }
}

async function main() {
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", route);
  $("cancel-button").addEventListener("click", () => {
    if (shown && shown.kind === "run") service.cancel(shown.key).catch((error) => showError(error.message));
  });
  const detected = await detectMode();
  mode = detected.mode;
  document.body.dataset.mode = mode;
  if (mode === "view") {
    $("main").hidden = false;
    route();
    document.body.dataset.ready = "true";
    return;
  }
  service.onAuthError = () => showLogin("The token was refused.");
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    service.setToken($("token-input").value.trim());
    $("token-input").value = "";
    startService();
  });
  $("forget-token").addEventListener("click", () => showLogin(""));
  $("submit-form").addEventListener("submit", submitRun);
  $("provider").addEventListener("change", showDefaultStrategy);
  if (service.token()) startService(); else showLogin("");
  document.body.dataset.ready = "true";
}

main();
