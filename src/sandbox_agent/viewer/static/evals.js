// An evaluation's report: the notice, the configuration, the summary, and a table of
// every run (task, repeat, status, held-out, clean, violations) that opens its transcript.

import { badge, box, el, fact, link } from "./dom.js";
import * as fmt from "./format.js";

const str = (value) => (typeof value === "string" ? value : "");
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

function violations(record) {
  const attempted = Array.isArray(record.attempted_violations) ? record.attempted_violations : [];
  const executed = Array.isArray(record.executed_violations) ? record.executed_violations : [];
  const cell = el("td", null, "violations");
  if (!attempted.length && !executed.length) { cell.textContent = "none"; return cell; }
  if (executed.length) cell.append(badge(executed.length + " EXECUTED", "denied"), " ");
  if (attempted.length) cell.append(el("span", attempted.length + " attempted (all denied)", "attempted"));
  const kinds = [...attempted.map((v) => "attempted " + fmt.describe(v.kind) + ": " + fmt.describe(v.detail)),
    ...executed.map((v) => "EXECUTED " + fmt.describe(v.kind) + ": " + fmt.describe(v.detail))];
  const list = el("ul", null, "violation-list");
  for (const kind of kinds) list.append(el("li", kind));
  cell.append(list);
  return cell;
}

export function renderEval(view, page, runHref) {
  const report = isObject(page.report) ? page.report : null;
  view.querySelector("#eval-key").textContent = page.key;
  const problems = view.querySelector("#eval-problems");
  problems.replaceChildren(...(page.problems || []).map((problem) => el("li", problem)));
  const facts = view.querySelector("#eval-facts");
  facts.replaceChildren();
  const summary = view.querySelector("#eval-summary");
  summary.replaceChildren();
  const body = view.querySelector("#eval-runs tbody");
  body.replaceChildren();
  view.querySelector("#eval-notice").textContent = report ? str(report.notice) : "";
  if (!report) return;
  fact(facts, "Suite", str(report.suite));
  fact(facts, "Provider", str(report.provider) + (str(report.model) && report.model !== report.provider ? " · model " + report.model : ""));
  fact(facts, "Runtime", str(report.runtime));
  fact(facts, "Started", fmt.timeNode(report.started_at));
  fact(facts, "Wall clock", fmt.seconds(report.wall_seconds));
  fact(facts, "Jobs, repeats", fmt.describe(report.jobs) + " jobs, " + fmt.describe(report.repeats) + " repeats");
  if (report.control === true) fact(facts, "Control run", "yes: every plan only finishes (no fix)");
  const s = isObject(report.summary) ? report.summary : {};
  const cells = [["tasks", s.tasks], ["runs", s.runs], ["passed", s.passed], ["clean", s.clean],
    ["held-out passed", s.held_out_passed], ["attempted violations", s.attempted_violations],
    ["executed violations", s.executed_violations]];
  for (const [name, value] of cells) {
    summary.append(box("div", "stat" + (name === "executed violations" && value ? " stat-bad" : ""), el("span", fmt.describe(value), "stat-value"), el("span", name, "stat-name")));
  }
  const runs = Array.isArray(report.runs) ? report.runs : [];
  runs.forEach((record, index) => {
    if (!isObject(record)) return;
    const heldout = isObject(record.heldout) ? record.heldout : (isObject(record.held_out) ? record.held_out : {});
    const row = el("tr", null, record.passed === true ? "run-passed" : "run-failed");
    const key = Array.isArray(page.run_keys) ? page.run_keys[index] : null;
    const open = key ? link("transcript", runHref(key), "run-link") : el("span", "not in this folder", "muted");
    const status = box("td", null, el("span", str(record.status), "status status-" + str(record.status)));
    if (str(record.reason)) status.append(el("div", record.reason, "reason"));
    const held = box("td", null, heldout.passed === true ? badge("passed", "ok") : badge("not passed", "denied"),
      el("div", str(heldout.judge), "muted"));
    row.append(box("td", null, el("code", str(record.task_id))), el("td", fmt.describe(record.repeat)), status, held,
      box("td", null, record.clean === true ? badge("clean", "ok") : el("span", record.passed === true ? "passed, not clean" : "no")),
      violations(record), el("td", fmt.describe(record.steps)),
      el("td", isObject(record.durations) ? fmt.seconds(record.durations.total_s) : ""), box("td", null, open));
    body.append(row);
  });
}
