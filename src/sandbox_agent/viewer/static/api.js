// Where the page's data comes from: the service (`serve`, bearer token, live runs) or
// the viewer (`view`, a folder on disk, read-only, no token). Both answer in JSON.

const TOKEN_KEY = "sandbox-agent-token";

export class AuthError extends Error {}

// One line for a refused request: the server's detail when it gave one.
async function failure(response) {
  let detail = response.statusText || "request failed";
  try {
    const body = await response.json();
    if (typeof body.detail === "string") detail = body.detail;
    else if (Array.isArray(body.detail)) detail = body.detail.map((item) => item.msg || "").join("; ");
  } catch (error) { /* no JSON body */ }
  return new Error(response.status + ": " + detail);
}

// Both servers answer /health without a token; only `view` says {"mode": "view"}.
export async function detectMode() {
  try {
    const response = await fetch("/health", { headers: { Accept: "application/json" } });
    const health = await response.json();
    if (health && health.mode === "view") return { mode: "view" };
  } catch (error) { /* the service's answer, or none */ }
  return { mode: "service" };
}

export const local = {
  async json(path) {
    const response = await fetch(path, { headers: { Accept: "application/json" } });
    if (!response.ok) throw await failure(response);
    return response.json();
  },
  home() { return this.json("/api/view"); },
  run(key) { return this.json("/api/run?key=" + encodeURIComponent(key)); },
  evaluation(key) { return this.json("/api/eval?key=" + encodeURIComponent(key)); },
};

export const service = {
  onAuthError: () => {},
  token() { return sessionStorage.getItem(TOKEN_KEY); },
  setToken(value) { sessionStorage.setItem(TOKEN_KEY, value); },
  forget() { sessionStorage.removeItem(TOKEN_KEY); },

  async fetch(path, options = {}) {
    const headers = Object.assign({}, options.headers || {}, { Authorization: "Bearer " + this.token() });
    const response = await fetch(path, Object.assign({}, options, { headers }));
    if (response.status === 401) { this.onAuthError(); throw new AuthError("the token was refused"); }
    return response;
  },
  async json(path, options) {
    const response = await this.fetch(path, options);
    if (!response.ok) throw await failure(response);
    return response.json();
  },
  runs() { return this.json("/runs?limit=100"); },
  run(id) { return this.json("/runs/" + id); },
  verdict(id) { return this.json("/runs/" + id + "/verify"); },
  fixtures() { return this.json("/fixtures"); },
  preflight() { return this.json("/preflight"); },
  cancel(id) { return this.json("/runs/" + id + "/cancel", { method: "POST" }); },
  async submit(body) {
    const response = await this.fetch("/runs", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    return { response, data };
  },

  // Server-sent events of a run, read with fetch (EventSource cannot send the token).
  // Calls onFrame({name, data, id}) per frame; resolves when the stream ends.
  async events(id, after, signal, onFrame) {
    const headers = after ? { "Last-Event-ID": String(after) } : {};
    const response = await this.fetch("/runs/" + id + "/events", { signal, headers });
    if (!response.ok || !response.body) throw await failure(response);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let split;
      while ((split = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, split);
        buffer = buffer.slice(split + 2);
        let name = "message";
        let frameId = null;
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
          else if (line.startsWith("id: ")) frameId = Number(line.slice(4));
        }
        if (data.length) onFrame({ name, data: data.join("\n"), id: frameId });
      }
    }
  },
};
