// DOM helpers. Every string from a run (model text, paths, tool names, test output) is
// hostile: it is only ever placed with textContent, never parsed as HTML.

export const $ = (id) => document.getElementById(id);

// An element with optional text and class. A missing value (undefined, null) gives an
// empty element, never the word "undefined".
export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

// An element holding children (nodes or strings); missing children are skipped.
export function box(tag, className, ...children) {
  const node = el(tag, null, className);
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A definition list row, skipped when the value is missing or empty.
export function fact(list, name, value, className) {
  if (value === undefined || value === null || value === "") return;
  const dd = value instanceof Node ? box("dd", className, value) : el("dd", value, className);
  list.append(el("dt", name), dd);
}

// A collapsible block: <details><summary>title</summary>body</details>.
export function collapsible(title, body, open = false, className) {
  const details = el("details", null, className);
  details.open = open;
  details.append(el("summary", title), body);
  return details;
}

export function button(text, onClick, className) {
  const node = el("button", text, className);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

export function link(text, href, className) {
  const node = el("a", text, className);
  node.href = href;
  return node;
}

export function badge(text, kind) {
  return el("span", text, "badge badge-" + kind);
}
