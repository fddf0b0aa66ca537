// The evidence of a run: the seal and chain (`verify`'s verdict), the original's
// integrity, the final verdict and who judged it, and every sandbox run with its
// classification, attestation, exit report, runner report and runtime.

import { badge, box, button, collapsible, el, fact } from "./dom.js";
import * as fmt from "./format.js";
import { denialMessage, renderTestRun } from "./transcript.js";

const str = (value) => (typeof value === "string" ? value : "");
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

const CHECK_TITLES = {
  files: "files read", evidence: "evidence record", signature: "signature", trace_chain: "trace hash chain",
  trace_head: "trace head", result: "result.json", diff: "diff.patch", fixture: "original's hashes",
};

// `verify`'s verdict as a block: the headline, then each check.
export function renderSeal(container, verdict, pendingText) {
  container.replaceChildren();
  container.className = "seal";
  if (!isObject(verdict)) {
    container.classList.add("seal-pending");
    container.append(box("p", "seal-headline", el("strong", "Seal and chain: "), pendingText || "not checked"));
    return;
  }
  const checks = Array.isArray(verdict.checks) ? verdict.checks : [];
  const failed = checks.filter((check) => check && check.ok !== true);
  container.classList.add(verdict.ok === true ? "seal-ok" : "seal-bad");
  const headline = box("p", "seal-headline", el("strong", "Seal and chain: "),
    verdict.ok === true ? badge("VERIFIED", "ok") : badge("NOT VERIFIED", "denied"),
    " ", verdict.ok === true ? "signed evidence, hash-chained trace, result, diff and original hashes all hold" :
      "failed: " + failed.map((check) => CHECK_TITLES[check.name] || str(check.name)).join(", "));
  container.append(headline);
  const list = el("ul", null, "checks");
  for (const check of checks) {
    if (!isObject(check)) continue;
    list.append(box("li", check.ok === true ? "check-ok" : "check-bad",
      el("span", check.ok === true ? "✓ " : "✗ ", "mark"),
      el("strong", CHECK_TITLES[check.name] || str(check.name)), ": ", el("span", str(check.detail))));
  }
  if (isObject(verdict.first_bad_event)) {
    const bad = verdict.first_bad_event;
    list.append(box("li", "check-bad", el("strong", "first failing event: "),
      "line " + fmt.describe(bad.line) + (fmt.isNumber(bad.seq) ? " (seq " + bad.seq + ")" : "") + ": " + str(bad.reason)));
  }
  if (str(verdict.signer)) list.append(box("li", null, el("strong", "signer: "), el("code", verdict.signer)));
  container.append(collapsible("Each check", list, verdict.ok !== true, "seal-checks"));
}

// The original's integrity, the final verdict and the judges, as facts.
// inFlight: the run is still queued or running, so no verdict is missing yet.
export function renderVerdicts(list, result, heldout, inFlight = false) {
  list.replaceChildren();
  const fixture = isObject(result.fixture) ? result.fixture : null;
  if (fixture) {
    const intact = fixture.intact === true ? "unchanged (hashed byte for byte before and after)" :
      (fixture.intact === false ? "CHANGED during the run" : "");
    fact(list, "Original repository", intact, fixture.intact === true ? "good" : "bad");
    fact(list, "sha256 before", str(fixture.sha256_before), "hash");
    fact(list, "sha256 after", str(fixture.sha256_after), "hash");
  }
  if (isObject(result.provider_error)) fact(list, "Provider error", fmt.providerError(result.provider_error), "bad");
  const final = isObject(result.final_tests) ? result.final_tests : null;
  if (final) {
    const verdict = (final.passed === true ? "passed" : "not passed") + " · " +
      [fmt.count(final.tests_run, "test run", "tests run"), fmt.count(final.failures, "failure")].filter(Boolean).join(", ") +
      (str(final.status) ? " (" + final.status + ")" : "") + (final.reused === true ? " · reused the last whole-suite run of the same bytes" : "");
    fact(list, "Final tests", verdict, final.passed === true ? "good" : "bad");
    if (str(final.output_tail)) {
      // Bounded and redacted by the controller; shown as text, open when the tests failed.
      const output = el("pre", final.output_tail, "raw test-output");
      fact(list, "Test output", collapsible("The last lines, as run_tests shows them to the model", output, final.passed !== true, "test-output"));
    }
    fact(list, "Judged by", judgeText(final.judge || "in_process"));
  } else if (inFlight) {
    fact(list, "Final tests", "pending: the run is still going", "pending");
  } else if (result.final_tests === null) {
    fact(list, "Final tests", "none: the controller made no final test run (see the reason)", "bad");
  }
  if (isObject(heldout)) {
    fact(list, "Held-out check", heldout.passed === true ? "passed" : "not passed", heldout.passed === true ? "good" : "bad");
    fact(list, "Held-out judged by", judgeText(heldout.judge));
  }
}

export function judgeText(judge) {
  if (judge === "in_process") return "in_process: the repository's own suite, counted by the trusted runner in the process that runs the code under test";
  if (judge === "out_of_process") return "out_of_process: a trusted judge process; the code under test ran in another process";
  return str(judge) || fmt.MISSING;
}

// Every sandbox run: each run_tests call (turn by turn) and the final run. `transcript`
// gives the turn items; sandbox_run events (when recorded) add the attestation's checks,
// the exit report and the runner report.
export function renderSandboxRuns(container, transcript, focusTurn) {
  container.replaceChildren();
  const rows = [];
  for (const item of transcript.items) {
    if (item.kind === "turn" && item.call && str(item.call.tool) === "run_tests") rows.push({ item, call: item.call, final: false });
    if (item.kind === "final") rows.push({ item, call: item.final, final: true });
  }
  if (!rows.length && !transcript.baseline.length) {
    container.append(el("p", "No test run was asked for or made.", "muted"));
    return;
  }
  for (const event of transcript.baseline) container.append(renderBaselineCard(event));
  for (const row of rows) container.append(renderSandboxCard(row, transcript, focusTurn));
}

// The original's tests, collected (not run) at the start: every one must run in the
// final verdict (issue 20, C8-1).
function renderBaselineCard(event) {
  const card = box("section", "sandbox-card sandbox-baseline",
    box("h4", null, el("span", "Baseline: the original's tests, collected")));
  card.append(el("p", "A collect-only run of the untouched copy, beside the loop: the final " +
    "verdict must run every test it lists.", "muted"));
  card.append(renderSandboxEvent(event));
  return card;
}

function renderSandboxCard(row, transcript, focusTurn) {
  const { item, call, final } = row;
  const outcome = final ? call : (isObject(call.outcome) ? call.outcome : (isObject(call.result) ? call.result : {}));
  const number = final ? null : transcript.turnNumber(item);
  const title = final ? "Final test run" : "run_tests in turn " + number;
  const card = box("section", "sandbox-card", box("h4", null, el("span", title)));
  if (!final) card.firstChild.append(" ", button("show turn", () => focusTurn(number), "small"));
  if (typeof call.denial === "string" && call.denial) {
    card.classList.add("sandbox-denied");
    card.append(box("p", "denial denial-denied", el("strong", "Denied: "), el("code", call.denial), " ",
      el("span", denialMessage(call))));
    card.append(el("p", "No sandbox was made: nothing ran.", "muted"));
    return card;
  }
  const facts = el("dl", null, "facts");
  fact(facts, "Classification", str(outcome.status), outcome.status === "completed" ? "good" : "bad");
  fact(facts, "Attested", outcome.attested === true ? "yes: PID 1 checked the isolation from inside before any test code ran" :
    (outcome.attested === false ? "NO" : ""), outcome.attested === true ? "good" : "bad");
  fact(facts, "Exit code", fmt.isNumber(outcome.exit_code) ? String(outcome.exit_code) : (outcome.exit_code === null ? "none (no valid exit report)" : ""));
  fact(facts, "Runtime", str(outcome.runtime));
  if (final && fmt.isNumber(outcome.baseline_tests)) {
    const missing = fmt.isNumber(outcome.missing_tests) ? outcome.missing_tests : 0;
    fact(facts, "Baseline", outcome.baseline_tests + " tests of the original, " +
      (missing ? missing + " not run: the verdict fails" : "all run"), missing ? "bad" : "good");
  }
  card.append(facts, renderTestRun(outcome, true));
  for (const event of item.sandbox || []) card.append(renderSandboxEvent(event));
  return card;
}

// A sandbox_run event: what PID 1 and the host established about one container.
function renderSandboxEvent(event) {
  const body = el("div", null, "sandbox-detail");
  const facts = el("dl", null, "facts");
  fact(facts, "Classification", [str(event.status), str(event.reason)].filter(Boolean).join(": "));
  fact(facts, "Runtime", str(event.runtime));
  if (event.prestarted === true) fact(facts, "Started", "ahead of the call (pre-started), then sent the go");
  fact(facts, "Cleanup", str(event.cleanup));
  fact(facts, "Image", fmt.shortHash(str(event.image_id)));
  body.append(facts);
  const attestation = isObject(event.attestation) ? event.attestation : null;
  if (attestation) {
    const checks = Array.isArray(attestation.checks) ? attestation.checks : [];
    const list = el("ul", null, "checks attestation-checks");
    for (const check of checks) {
      if (!isObject(check)) continue;
      list.append(box("li", check.ok === true ? "check-ok" : "check-bad", el("span", check.ok === true ? "✓ " : "✗ ", "mark"),
        el("strong", str(check.name)), str(check.detail) ? ": " + check.detail : ""));
    }
    const failed = checks.filter((check) => isObject(check) && check.ok !== true).length;
    const title = "Attestation: " + (str(attestation.status) || fmt.MISSING) + " · " +
      fmt.count(checks.length, "check") + (failed ? ", " + failed + " failed" : ", all passed");
    body.append(collapsible(title, checks.length ? list : el("p", "no checks recorded", "muted"), false, "attestation"));
  }
  const exit = isObject(event.exit_report) ? event.exit_report : null;
  if (exit) {
    const list = el("dl", null, "facts");
    fact(list, "Status", str(exit.status));
    fact(list, "Exit code", fmt.isNumber(exit.exit_code) ? String(exit.exit_code) : "");
    fact(list, "Signal", fmt.isNumber(exit.signal) ? String(exit.signal) : "");
    fact(list, "Timed out", exit.timed_out === true ? "yes" : (exit.timed_out === false ? "no" : ""));
    fact(list, "Output", [fmt.bytes(exit.output_bytes), exit.output_truncated === true ? "cut at the budget" : ""].filter(Boolean).join(", "));
    fact(list, "Duration", fmt.millis(exit.duration_ms));
    fact(list, "Launch", str(exit.launch));
    fact(list, "OOM kills", fmt.isNumber(exit.oom_kills_delta) ? String(exit.oom_kills_delta) : "");
    fact(list, "Runner report problem", str(exit.runner_report_error));
    body.append(collapsible("Exit report: " + (str(exit.status) || fmt.MISSING), list, false, "exit-report"));
  }
  const runner = isObject(event.runner_report) ? event.runner_report : null;
  const runnerFacts = el("dl", null, "facts");
  if (runner) {
    fact(runnerFacts, "Runner", str(runner.runner));
    fact(runnerFacts, "Counted", [fmt.count(runner.tests_run, "test"), fmt.count(runner.failures, "failure"),
      fmt.count(runner.errors, "error"), fmt.count(runner.skipped, "skipped", "skipped")].filter(Boolean).join(", "));
  } else {
    runnerFacts.append(el("dd", "none: no trusted runner report reached the host", "muted"));
  }
  body.append(collapsible("Runner report" + (runner ? ": " + str(runner.runner) : ": none"), runnerFacts, false, "runner-report"));
  if (isObject(event.phase_ms)) {
    body.append(el("p", "Phases: " + Object.entries(event.phase_ms).map(([name, ms]) => name + " " + fmt.millis(ms)).join(" · "), "note"));
  }
  return body;
}
