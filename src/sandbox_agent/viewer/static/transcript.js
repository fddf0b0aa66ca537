// The transcript: a run's trace events gathered into turns, in order. Each turn shows the
// model's reply, the tool call with its arguments, the controller's answer (a result, a
// denial with its code and message, or an invalid output with its reason) and the
// budgets after it. Events may arrive one by one (live) or all at once.

import { badge, box, collapsible, el, fact } from "./dom.js";
import * as fmt from "./format.js";

// The controller's policy denials (controller/parse.py POLICY_CODES; a test holds the two
// lists equal). Output codes and args.invalid are invalid outputs; the rest are failed calls.
export const POLICY_CODES = [
  "tool.unknown", "tool.not_allowed", "path.outside_workspace", "path.absolute", "path.invalid",
  "path.symlink", "path.hardlink", "path.special_file", "path.protected",
  "command.not_allowlisted", "command.bad_selector",
];

// A reply longer than this (characters or lines) starts collapsed.
export const REPLY_COLLAPSE_CHARS = 600;
export const REPLY_COLLAPSE_LINES = 12;
// Events rendered per run at most (the service stores 10,000; `view` has --max-events).
export const MAX_EVENTS_SHOWN = 10000;

export function denialKind(code) {
  if (typeof code !== "string" || !code) return null;
  if (code.startsWith("output.") || code === "args.invalid") return "invalid";
  return POLICY_CODES.includes(code) ? "denied" : "failed";
}

const str = (value) => (typeof value === "string" ? value : "");
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

// A denial's message: the event's own, or the summary "code: message" without its code.
export function denialMessage(call) {
  if (str(call.message)) return call.message;
  const outcome = isObject(call.outcome) ? call.outcome : (isObject(call.result) ? call.result : {});
  const summary = str(outcome.summary) || str(outcome.message);
  const prefix = str(call.denial) + ": ";
  return summary.startsWith(prefix) ? summary.slice(prefix.length) : summary;
}

export class Transcript {
  constructor(list) {
    this.list = list;
    this.items = [];
    this.current = null;          // the turn still waiting for its call or outcome
    this.pendingSandbox = [];     // sandbox_run events, waiting for the call they belong to
    this.baseline = [];           // sandbox_run events of the original's collect-only run
    this.pendingNotes = [];       // context_fitted events, shown on the next turn
    this.changedBy = new Map();   // path -> [turn numbers that changed it]
    this.count = 0;
    this.hiddenEvents = 0;
  }

  // Add one trace event; returns the item it changed.
  add(event) {
    if (!isObject(event)) return null;
    if (this.count >= MAX_EVENTS_SHOWN) { this.hiddenEvents += 1; return null; }
    this.count += 1;
    const kind = str(event.event);
    let item;
    switch (kind) {
      case "run_started": item = this.push({ kind: "start", events: [event] }); break;
      case "model_turn":
        item = this.push({ kind: "turn", events: [event], reply: event, sandbox: [], notes: this.pendingNotes });
        this.pendingNotes = [];
        this.current = item;
        break;
      case "context_fitted": this.pendingNotes.push(event); return null;
      case "sandbox_run":
        // The baseline runs beside the loop: it belongs to no call (issue 20, C8-1).
        (str(event.purpose) === "baseline" ? this.baseline : this.pendingSandbox).push(event);
        return null;
      case "tool_call": item = this.attach("call", event); this.trackChanges(item, event); break;
      case "invalid_output": item = this.attach("invalid", event); break;
      case "tool_error": case "provider_error": item = this.attach("error", event); break;
      case "final_tests":
        item = this.push({ kind: "final", events: [event], final: event, sandbox: this.takeSandbox() });
        break;
      case "run_finished": item = this.push({ kind: "end", events: [event] }); break;
      default: item = this.push({ kind: "note", events: [event] }); break;
    }
    this.render(item);
    return item;
  }

  push(item) {
    item.index = this.items.length;
    this.items.push(item);
    if (item.kind !== "turn") this.current = null;
    return item;
  }

  takeSandbox() {
    const taken = this.pendingSandbox;
    this.pendingSandbox = [];
    return taken;
  }

  // The call or outcome of the current turn; a turn of its own when there is none (an
  // event with no model turn before it, as in a run function that records calls only).
  attach(slot, event) {
    let turn = this.current;
    if (!turn || turn[slot] || turn.call || turn.invalid) {
      turn = this.push({ kind: "turn", events: [], sandbox: [], notes: [] });
      this.current = turn;
    }
    turn[slot] = event;
    turn.events.push(event);
    if (slot === "call" && str(event.tool) === "run_tests") turn.sandbox = this.takeSandbox();
    if (slot !== "error") this.current = null;
    return turn;
  }

  turnNumber(item) {
    const reply = item.reply;
    if (reply && fmt.isNumber(reply.iteration)) return reply.iteration;
    return this.items.filter((other) => other.kind === "turn" && other.index <= item.index).length;
  }

  trackChanges(item, event) {
    if (str(event.tool) !== "apply_patch" || event.ok !== true) return;
    const outcome = isObject(event.outcome) ? event.outcome : (isObject(event.result) ? event.result : {});
    const paths = new Set();
    for (const path of [].concat(outcome.files || [], outcome.created || [])) if (typeof path === "string") paths.add(path);
    const args = isObject(event.arguments) ? event.arguments : {};
    for (const edit of Array.isArray(args.edits) ? args.edits : []) if (isObject(edit) && typeof edit.path === "string") paths.add(edit.path);
    const number = this.turnNumber(item);
    for (const path of paths) {
      const turns = this.changedBy.get(path) || [];
      if (!turns.includes(number)) turns.push(number);
      this.changedBy.set(path, turns);
    }
  }

  elementId(item) { return "item-" + item.index; }

  render(item) {
    const node = renderItem(item, this);
    node.id = this.elementId(item);
    if (item.element && item.element.isConnected) item.element.replaceWith(node);
    else this.list.append(node);
    item.element = node;
  }

  // The transcript item of turn `number`, for links from the diff.
  turnElement(number) {
    const item = this.items.find((other) => other.kind === "turn" && this.turnNumber(other) === number);
    return item ? item.element : null;
  }
}

// ---- rendering ---------------------------------------------------------------------

function itemShell(item, transcript, title, className) {
  const node = el("li", null, "item " + className);
  node.tabIndex = 0;
  const head = box("div", "item-head", el("span", title, "item-title"));
  const first = item.events[0];
  if (first && first.time) head.append(fmt.timeNode(first.time, true));
  node.append(head);
  return node;
}

function rawEvents(item) {
  const pre = el("pre", item.events.map((event) => JSON.stringify(event, null, 2)).join("\n\n"), "raw");
  return collapsible("Raw event" + (item.events.length > 1 ? "s" : "") + " (as recorded)", pre, false, "raw-events");
}

function renderItem(item, transcript) {
  let node;
  if (item.kind === "turn") node = renderTurn(item, transcript);
  else if (item.kind === "start") node = renderStart(item);
  else if (item.kind === "final") node = renderFinal(item);
  else if (item.kind === "end") node = renderEnd(item);
  else node = renderNote(item);
  node.append(rawEvents(item));
  return node;
}

function renderStart(item) {
  const event = item.events[0];
  const node = itemShell(item, null, "Run started", "item-start");
  const facts = el("dl", null, "facts");
  fact(facts, "Task", str(event.task));
  fact(facts, "Repository", str(event.source));
  fact(facts, "Provider", str(event.provider));
  fact(facts, "Runtime", str(event.runtime));
  fact(facts, "Test runner", str(event.runner));
  if (Array.isArray(event.allowed_tools)) fact(facts, "Tools allowed", event.allowed_tools.join(", "));
  if (isObject(event.budgets)) {
    const b = event.budgets;
    fact(facts, "Budgets", [fmt.count(b.max_iterations, "turn"), fmt.count(b.max_tool_calls, "tool call"),
      fmt.seconds(b.max_wall_seconds), fmt.count(b.max_denials, "denial"),
      fmt.count(b.max_invalid_outputs, "invalid output")].filter(Boolean).join(" · ") + " at most");
  }
  if (Array.isArray(event.skipped) && event.skipped.length) {
    fact(facts, "Not copied", event.skipped.map((entry) => Array.isArray(entry) ? entry.join(": ") : fmt.describe(entry)).join("; "));
  }
  node.append(facts);
  return node;
}

function renderTurn(item, transcript) {
  const call = item.call;
  const kind = item.invalid ? "invalid" : (call ? (denialKind(call.denial) || (call.ok === false ? "failed" : "ok")) : (item.error ? "failed" : "pending"));
  const number = transcript.turnNumber(item);
  const node = itemShell(item, transcript, "Turn " + number, "item-turn turn-" + kind);
  node.dataset.turn = String(number);
  node.dataset.outcome = kind;
  const head = node.firstChild;
  if (kind === "denied") head.append(badge("DENIED", "denied"));
  if (kind === "invalid") head.append(badge("INVALID OUTPUT", "invalid"));
  if (kind === "failed") head.append(badge("FAILED", "failed"));
  if (kind === "pending") head.append(badge("in progress", "pending"));
  for (const note of item.notes || []) node.append(renderContextNote(note));
  if (item.reply) node.append(renderReply(item.reply));
  if (call) node.append(renderCall(call, Boolean(item.reply)), renderAnswer(call, item.sandbox));
  if (item.invalid) node.append(renderInvalid(item.invalid));
  if (item.error) node.append(renderError(item.error));
  const after = (item.invalid || call || item.reply || {}).budgets;
  if (isObject(after)) node.append(box("p", "budgets", el("span", "Budgets used after this turn: ", "label"), fmt.budget(after)));
  return node;
}

function renderContextNote(event) {
  return el("p", "Context fitted before this turn: " + [fmt.count(event.elided_observations, "earlier observation") + " elided",
    fmt.isNumber(event.estimated_prompt_tokens) ? "~" + event.estimated_prompt_tokens + " of " + event.budget_tokens + " prompt tokens" : ""].filter(Boolean).join(", "), "note");
}

function renderReply(event) {
  const text = str(event.reply);
  const section = box("div", "part part-reply", el("h4", "Model's reply"));
  const meta = [];
  if (fmt.isNumber(event.duration_ms)) meta.push(fmt.millis(event.duration_ms));
  if (isObject(event.usage) && (event.usage.input_tokens || event.usage.output_tokens)) {
    meta.push(event.usage.input_tokens + " in / " + event.usage.output_tokens + " out tokens");
  }
  if (isObject(event.timings) && fmt.isNumber(event.timings.predicted_per_second)) {
    meta.push(event.timings.predicted_per_second.toFixed(1) + " tokens/s");
  }
  if (meta.length) section.firstChild.append(el("span", " " + meta.join(" · "), "meta"));
  const pre = el("pre", text, "reply");
  if (!text) pre.append(el("span", "(an empty reply)", "muted"));
  const lines = text.split("\n").length;
  if (text.length > REPLY_COLLAPSE_CHARS || lines > REPLY_COLLAPSE_LINES) {
    const first = text.split("\n").find((line) => line.trim()) || "";
    const title = first.slice(0, 120) + (first.length > 120 ? "…" : "") + "  (" + fmt.count(text.length, "character") + ", " + fmt.count(lines, "line") + ")";
    section.append(collapsible(title, pre, false, "reply-collapsed"));
  } else {
    section.append(pre);
  }
  if (fmt.isNumber(event.reply_chars) && event.reply_chars > text.length) {
    section.append(el("p", "The trace keeps the first " + text.length + " of " + event.reply_chars + " characters.", "note"));
  }
  if (Array.isArray(event.notes) && event.notes.length) {
    section.append(el("p", "Provider notes: " + event.notes.map((note) => fmt.describe(note)).join("; "), "note"));
  }
  return section;
}

function argumentValue(value) {
  if (value === "") return el("span", "(empty: the workspace root)", "muted");
  if (typeof value === "string") return el("code", value, "value");
  if (fmt.isDigest(value)) return el("span", fmt.digest(value), "muted");
  return el("code", fmt.describe(value), "value");
}

function renderEdits(edits) {
  const list = el("ol", null, "edits");
  for (const edit of edits) {
    if (!isObject(edit)) { list.append(el("li", fmt.describe(edit))); continue; }
    const item = box("li", "edit", box("div", null, el("span", "in ", "label"), el("code", str(edit.path) || fmt.MISSING, "value")));
    for (const [label, value] of [["replace", edit.old], ["with", edit.new]]) {
      if (value === undefined) continue;
      const body = typeof value === "string" ? el("pre", value === "" ? "" : value, "code-text " + (label === "with" ? "text-new" : "text-old")) : el("p", fmt.describe(value), "muted");
      if (typeof value === "string" && value === "") body.append(el("span", label === "replace" ? "(nothing: a new file)" : "(nothing)", "muted"));
      item.append(box("div", "edit-part", el("span", label, "label"), body));
    }
    list.append(item);
  }
  return list;
}

function renderCall(call, withReply) {
  const section = box("div", "part part-call", box("h4", null, "Tool call ", el("code", str(call.tool) || fmt.MISSING, "tool-name")));
  const args = isObject(call.arguments) ? call.arguments : (isObject(call.args) ? call.args : null);
  if (args) {
    const entries = Object.entries(args).filter(([, value]) => value !== null && value !== undefined);
    if (!entries.length) section.append(el("p", "no arguments", "muted"));
    const list = el("dl", null, "facts args");
    for (const [name, value] of entries) {
      if (name === "edits" && Array.isArray(value)) fact(list, name, renderEdits(value));
      else fact(list, name, argumentValue(value));
    }
    if (list.childNodes.length) section.append(list);
  } else if (denialKind(call.denial)) {
    section.append(el("p", "The controller did not accept this call, so it recorded no arguments" +
      (withReply ? "; the reply above shows what the model asked for." : "."), "muted"));
  }
  return section;
}

function renderAnswer(call, sandbox) {
  const section = box("div", "part part-answer", el("h4", "Controller's answer"));
  const outcome = isObject(call.outcome) ? call.outcome : (isObject(call.result) ? call.result : {});
  const kind = denialKind(call.denial);
  if (kind) {
    const label = kind === "denied" ? "Denied" : (kind === "invalid" ? "Invalid" : "Refused");
    section.append(box("p", "denial denial-" + kind, el("strong", label + ": "), el("code", call.denial), " ", el("span", denialMessage(call))));
    if (str(call.tool) === "run_tests") section.append(el("p", "No sandbox was made: the call was refused before any container existed.", "muted"));
  } else if (str(call.tool) === "finish") {
    section.append(el("p", "The model finished. Its summary is recorded, never believed: the controller now runs the tests itself.", "muted"));
  } else if (str(call.tool) === "run_tests") {
    section.append(renderTestRun(outcome));
  } else {
    section.append(renderOutcome(str(call.tool), outcome));
  }
  if (fmt.isNumber(call.duration_ms)) section.firstChild.append(el("span", " " + fmt.millis(call.duration_ms), "meta"));
  return section;
}

// The facts of a test run (a run_tests result or the final_tests event); `brief` leaves
// out the sandbox line (the evidence card shows it on its own).
export function renderTestRun(run, brief = false) {
  const facts = el("dl", null, "facts");
  const passed = run.passed === true ? "passed" : (run.passed === false ? "not passed" : "");
  fact(facts, "Verdict", [passed, str(run.reason)].filter(Boolean).join(": "), run.passed ? "good" : "bad");
  fact(facts, "Tests", [fmt.count(run.tests_run, "run", "run"), fmt.count(run.failures, "failed", "failed"),
    fmt.isNumber(run.errors) ? fmt.count(run.errors, "error") : ""].filter(Boolean).join(", "));
  if (!brief) fact(facts, "Sandbox", [str(run.status), run.attested === true ? "attested" : (run.attested === false ? "NOT attested" : ""),
    fmt.isNumber(run.exit_code) ? "exit code " + run.exit_code : "", str(run.runtime), str(run.runner)].filter(Boolean).join(" · "));
  fact(facts, "Selector", str(run.selector));
  if (run.reused === true) fact(facts, "Reused", "the model's last whole-suite run of the same bytes");
  if (run.output_truncated === true) fact(facts, "Output", "cut at the output budget");
  return facts;
}

function renderOutcome(tool, outcome) {
  const facts = el("dl", null, "facts");
  fact(facts, "Result", str(outcome.summary) || str(outcome.message));
  if (tool === "list_files" && Array.isArray(outcome.files)) {
    fact(facts, "Files", outcome.files.length ? box("div", "file-list", ...outcome.files.map((name) => el("code", fmt.describe(name), "value"))) : "none");
  }
  if (tool === "read_file") {
    fact(facts, "File", str(outcome.path));
    if (fmt.isDigest(outcome.content)) fact(facts, "Content", fmt.digest(outcome.content), "muted");
  }
  if (tool === "apply_patch") {
    if (Array.isArray(outcome.files)) fact(facts, "Changed", outcome.files.join(", ") || "nothing");
    if (Array.isArray(outcome.created) && outcome.created.length) fact(facts, "Created", outcome.created.join(", "));
  }
  const shown = new Set(["summary", "message", "files", "path", "content", "created", "edits", "truncated", "start_line", "end_line", "total_lines"]);
  for (const [key, value] of Object.entries(outcome)) {
    if (shown.has(key) || value === null || value === undefined) continue;
    fact(facts, key.replace(/_/g, " "), fmt.describe(value));
  }
  if (outcome.truncated === true) fact(facts, "Truncated", "yes");
  if (!facts.childNodes.length) facts.append(el("dd", "done", "muted"));
  return facts;
}

function renderInvalid(event) {
  return box("div", "part part-answer", el("h4", "Controller's answer"),
    box("p", "denial denial-invalid", el("strong", "Invalid output: "), el("code", str(event.denial) || fmt.MISSING), " ", el("span", str(event.message))),
    el("p", "Nothing was executed; the model was told why and may try again.", "muted"));
}

function errorText(event) {
  if (isObject(event.provider_error)) return fmt.providerError(event.provider_error);
  const error = isObject(event.error) ? event.error : {};
  return [str(error.type) || "an error", fmt.isNumber(error.message_chars) ? "(" + fmt.count(error.message_chars, "character") + " of message, not kept in the trace)" : ""].filter(Boolean).join(" ");
}

function renderError(event) {
  const what = event.event === "provider_error" ? "The model provider failed: " : "The tool failed on the controller's side: ";
  return box("div", "part part-answer", el("h4", "Controller's answer"), box("p", "denial denial-failed", el("strong", what), errorText(event)));
}

function renderFinal(item) {
  const node = itemShell(item, null, "Final test run (the controller's own)", "item-final");
  node.append(renderTestRun(item.final));
  return node;
}

function renderEnd(item) {
  const event = item.events[0];
  const node = itemShell(item, null, "Run finished", "item-end");
  const facts = el("dl", null, "facts");
  fact(facts, "Status", str(event.status), "status-text status-" + str(event.status));
  fact(facts, "Reason", str(event.reason));
  if (isObject(event.fixture)) fact(facts, "Original", event.fixture.intact === true ? "unchanged" : (event.fixture.intact === false ? "CHANGED" : ""));
  if (Array.isArray(event.files_changed)) fact(facts, "Files changed", event.files_changed.join(", ") || "none");
  fact(facts, "Wall clock", fmt.seconds(event.wall_seconds));
  if (isObject(event.budgets)) fact(facts, "Budgets used", fmt.budget(event.budgets));
  node.append(facts);
  return node;
}

const NOTES = {
  infrastructure_error: (event) => "Our side failed: " + errorText(event),
  request_stopped: (event) => "The model request in flight was stopped (" +
    (str(event.why) === "cancelled" ? "the run was cancelled" : "the run's wall clock ran out") +
    "); it is not a provider failure. " + str(event.message),
  provider_retry: (event) => "The model request failed and is sent again: " +
    fmt.providerError(event.provider_error) + " (retry " + fmt.describe(event.attempt) + " of " +
    fmt.describe(event.retries) + ", after " + fmt.seconds(event.wait_seconds) + ")",
  prestart_cleanup: (event) => "Sandboxes made ahead could not all be removed (left to the reaper): " + fmt.describe(event.failures),
  unreadable_line: (event) => "Trace line " + fmt.describe(event.line) + " could not be read: " + fmt.describe(event.why),
  events_truncated: (event) => "The service kept the first " + fmt.describe(event.limit) + " events of this run.",
  event_too_large: (event) => "An event of " + fmt.bytes(event.bytes) + " was too large to keep.",
};

function renderNote(item) {
  const event = item.events[0];
  const name = str(event.event) || "event";
  const node = itemShell(item, null, name.replace(/_/g, " "), "item-note");
  const describe = NOTES[name];
  if (describe) node.append(el("p", describe(event)));
  else {
    const facts = el("dl", null, "facts");
    for (const [key, value] of Object.entries(event)) {
      if (["schema", "run_id", "seq", "time", "event", "prev_sha256"].includes(key)) continue;
      fact(facts, key.replace(/_/g, " "), fmt.describe(value));
    }
    node.append(facts);
  }
  return node;
}
