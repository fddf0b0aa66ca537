// Formatting of values for people: times in the viewer's own time zone with the date,
// sizes, durations, budgets, and any recorded value as readable text (never "undefined",
// "null" or raw JSON).

const DATE_TIME = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric",
  hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
});
const TIME = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3,
});

export const MISSING = "—";

// A Date from a Unix time (seconds) or an ISO 8601 text; null when it is neither.
export function toDate(value) {
  if (typeof value === "number" && Number.isFinite(value)) return new Date(value * 1000);
  if (typeof value === "string" && value) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  return null;
}

// "Dec 2, 2026, 04:33:04 CET": the viewer's local time zone, with the date.
export function dateTime(value) {
  const date = toDate(value);
  return date ? DATE_TIME.format(date) : "";
}

// "04:33:04.106" local time, for steps within one run (the run's date is shown above).
export function clockTime(value) {
  const date = toDate(value);
  return date ? TIME.format(date) : "";
}

// A <time> element: local date and time, with the recorded instant in its title.
export function timeNode(value, short = false) {
  const date = toDate(value);
  const node = document.createElement("time");
  if (!date) return node;
  node.dateTime = date.toISOString();
  node.textContent = short ? clockTime(date.getTime() / 1000) : DATE_TIME.format(date);
  node.title = DATE_TIME.format(date) + " (" + date.toISOString() + ")";
  return node;
}

export function isNumber(value) { return typeof value === "number" && Number.isFinite(value); }

export function seconds(value) {
  if (!isNumber(value)) return "";
  if (value < 1) return Math.round(value * 1000) + " ms";
  return value < 60 ? value.toFixed(1) + " s" : (value / 60).toFixed(1) + " min";
}

export function millis(value) {
  if (!isNumber(value)) return "";
  return value < 1000 ? value.toFixed(value < 10 ? 1 : 0) + " ms" : seconds(value / 1000);
}

export function count(value, one, many) {
  if (!isNumber(value)) return "";
  return value + " " + (value === 1 ? one : (many || one + "s"));
}

export function bytes(value) {
  if (!isNumber(value)) return "";
  if (value < 1024) return count(value, "byte");
  return value < 1024 * 1024 ? (value / 1024).toFixed(1) + " KiB" : (value / 1048576).toFixed(1) + " MiB";
}

export function shortHash(value) {
  return typeof value === "string" && value.length > 16 ? value.slice(0, 12) + "…" : (value || "");
}

export function yesNo(value) {
  if (value === true) return "yes";
  if (value === false) return "no";
  return MISSING;
}

// Budgets used so far: "3 turns · 5 tool calls · 1 denial · 0 invalid".
export function budget(used) {
  if (!used || typeof used !== "object") return "";
  const parts = [count(used.iterations, "turn"), count(used.tool_calls, "tool call"),
    count(used.policy_denials, "denial"), count(used.invalid_outputs, "invalid output")];
  if (used.input_tokens || used.output_tokens) {
    parts.push((used.input_tokens || 0) + " in / " + (used.output_tokens || 0) + " out tokens");
  }
  if (used.cost_usd) parts.push("$" + Number(used.cost_usd).toFixed(4));
  return parts.filter(Boolean).join(" · ");
}

// The trace's summary of bulk text: {bytes, lines, sha256}.
export function isDigest(value) {
  return value !== null && typeof value === "object" && isNumber(value.bytes) &&
    typeof value.sha256 === "string";
}

export function digest(value) {
  const lines = isNumber(value.lines) ? ", " + count(value.lines, "line") : "";
  return "(" + bytes(value.bytes) + lines + ", sha256 " + shortHash(value.sha256) + "; not kept in the trace)";
}

// Any recorded value as one readable text: strings as they are, lists joined, objects as
// "key: value" pairs, digests described. Depth-limited; never JSON.
export function describe(value, depth = 0) {
  if (value === undefined || value === null) return MISSING;
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return yesNo(value);
  if (typeof value === "number") return String(value);
  if (depth > 3) return "…";
  if (Array.isArray(value)) {
    if (value.length === 0) return "none";
    return value.map((item) => describe(item, depth + 1)).join(", ");
  }
  if (typeof value === "object") {
    if (isDigest(value)) return digest(value);
    if (isNumber(value.omitted_items)) return "… " + value.omitted_items + " more";
    const pairs = Object.entries(value).map(([key, item]) => key + ": " + describe(item, depth + 1));
    return pairs.length ? pairs.join("; ") : "none";
  }
  return String(value);
}

// A provider failure ({kind, http_status, type, message}; bounded and redacted by the
// controller) as one line: "HTTP 401 authentication_error: invalid x-api-key (check ...)".
export function providerError(error) {
  if (error === null || typeof error !== "object") return "";
  const message = typeof error.message === "string" ? error.message : "";
  const type = typeof error.type === "string" ? error.type : "";
  const kind = typeof error.kind === "string" ? error.kind : "";
  if (kind === "http_status" && isNumber(error.http_status)) {
    const head = ["HTTP " + error.http_status, type].filter(Boolean).join(" ");
    return message ? head + ": " + message : head;
  }
  return [message || MISSING, kind ? "(" + kind.replace(/_/g, " ") + ")" : ""].filter(Boolean).join(" ");
}
