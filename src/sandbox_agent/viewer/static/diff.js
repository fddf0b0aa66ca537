// The diff, rendered as a diff: files, hunks, added and removed lines with their line
// numbers, and for each file a link to the turns that changed it.

import { box, button, el } from "./dom.js";

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

function stripPrefix(path) {
  const clean = path.split("\t")[0];
  if (clean === "/dev/null") return null;
  return clean.startsWith("a/") || clean.startsWith("b/") ? clean.slice(2) : clean;
}

// A unified diff as [{path, oldPath, newPath, added, removed, hunks: [{header, lines}]}].
export function parseDiff(text) {
  const files = [];
  let file = null;
  let hunk = null;
  let oldLine = 0;
  let newLine = 0;
  const lines = (typeof text === "string" ? text : "").split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index];
    if (line.startsWith("--- ") && index + 1 < lines.length && lines[index + 1].startsWith("+++ ")) {
      const oldPath = stripPrefix(line.slice(4));
      const newPath = stripPrefix(lines[index + 1].slice(4));
      file = { path: newPath || oldPath || "(unnamed)", oldPath, newPath, added: 0, removed: 0, hunks: [], preamble: [] };
      files.push(file);
      hunk = null;
      index += 1;
      continue;
    }
    const match = HUNK.exec(line);
    if (match && file) {
      oldLine = Number(match[1]);
      newLine = Number(match[3]);
      hunk = { header: line, context: match[5].trim(), lines: [] };
      file.hunks.push(hunk);
      continue;
    }
    if (!file) { files.push(file = { path: "(diff header)", added: 0, removed: 0, hunks: [], preamble: [line] }); continue; }
    if (!hunk) { file.preamble.push(line); continue; }
    if (line.startsWith("+")) { hunk.lines.push({ kind: "add", text: line.slice(1), newNo: newLine++ }); file.added += 1; }
    else if (line.startsWith("-")) { hunk.lines.push({ kind: "del", text: line.slice(1), oldNo: oldLine++ }); file.removed += 1; }
    else if (line.startsWith("\\")) hunk.lines.push({ kind: "meta", text: line });
    else hunk.lines.push({ kind: "ctx", text: line.slice(1), oldNo: oldLine++, newNo: newLine++ });
  }
  return files;
}

// `changedBy` maps a path to the turn numbers that changed it; `focusTurn(n)` shows one.
export function renderDiff(container, text, changedBy, focusTurn) {
  container.replaceChildren();
  const files = parseDiff(text);
  if (!files.length) { container.append(el("p", "No changes.", "muted")); return files; }
  const summary = el("ul", null, "diff-files");
  files.forEach((file, index) => {
    const item = box("li", null, button(file.path, () => document.getElementById("diff-file-" + index).scrollIntoView(), "link-button"),
      el("span", " +" + file.added + " −" + file.removed, "diff-counts"));
    summary.append(item);
  });
  container.append(summary);
  files.forEach((file, index) => {
    const section = box("section", "diff-file");
    section.id = "diff-file-" + index;
    const head = box("div", "diff-file-head", el("code", file.path, "diff-path"),
      el("span", " +" + file.added + " −" + file.removed, "diff-counts"));
    if (file.oldPath === null) head.append(el("span", " new file", "muted"));
    if (file.newPath === null) head.append(el("span", " deleted", "muted"));
    const turns = (changedBy && changedBy.get(file.path)) || [];
    if (turns.length) {
      head.append(el("span", " changed in ", "muted"));
      turns.forEach((number, position) => {
        if (position) head.append(", ");
        head.append(button("turn " + number, () => focusTurn(number), "link-button turn-link"));
      });
    } else if (changedBy) {
      head.append(el("span", " (no turn of the transcript shown changed it)", "muted"));
    }
    section.append(head);
    for (const line of file.preamble) section.append(el("div", line, "diff-meta"));
    for (const hunk of file.hunks) {
      const table = el("table", null, "diff-hunk");
      const caption = el("caption", hunk.header, "diff-hunk-head");
      table.append(caption);
      const body = el("tbody");
      for (const line of hunk.lines) {
        const row = el("tr", null, "diff-" + line.kind);
        row.append(el("td", line.oldNo === undefined ? "" : line.oldNo, "ln"), el("td", line.newNo === undefined ? "" : line.newNo, "ln"),
          el("td", line.kind === "add" ? "+" : (line.kind === "del" ? "−" : ""), "sign"), el("td", line.text, "code"));
        body.append(row);
      }
      table.append(body);
      section.append(table);
    }
    container.append(section);
  });
  return files;
}
