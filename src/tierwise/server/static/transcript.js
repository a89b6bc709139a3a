// The conversation's list: messages, answers as markdown, and one line per tool call — the
// engine's housekeeping calls named for what they did ("recalled S12 (summary)"), never a hash.

import { markdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const count = (n) => Number(n || 0).toLocaleString();

// The line of a tool call, from its name and arguments (an object, or the JSON text of one).
export function describeCall(name, args) {
  let a = args;
  if (typeof a === "string") {
    try { a = a.trim() ? JSON.parse(a) : {}; } catch { a = {}; }
  }
  if (!a || typeof a !== "object") a = {};
  if (name === "recall_segments") {
    const ids = Array.isArray(a.ids) ? a.ids.join(", ") : String(a.ids || "").replace(/[;,]\s*/g, ", ");
    return `recalled ${ids || "earlier segments"} (${a.form || "summary"})`;
  }
  if (name === "open_blob") {
    const range = a.start != null || a.end != null ? ` (bytes ${count(a.start)}–${a.end != null ? count(a.end) : "end"})` : "";
    return `read a stored tool result in full${range}`;
  }
  if (name === "more_tools") {
    const names = Array.isArray(a.names) ? a.names.filter((n) => String(n).trim()).join(", ") : "";
    return `asked for more tools${names ? `: ${names}` : ""}`;
  }
  if (name === "update_narrative") return "updated the conversation's narrative";
  if (name === "record_decision") return `noted a decision${a.decision ? `: ${a.decision}` : ""}`;
  return name;
}

export function addMessage(kind, html = "") {
  const li = document.createElement("li");
  li.className = kind;
  li.innerHTML = html;  // callers pass escaped text or markdown() output, never raw model text
  $("messages").appendChild(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

export function addText(kind, text) {
  const li = addMessage(kind);
  li.textContent = text;
  return li;
}

export function addAnswer(text) {
  return addMessage("assistant", markdown(text));
}

// "⚙ recalled S12 (summary) · 3 ms", "⚙ list_tasks …" while it runs, "· failed" when it did.
export function toolLine(name, args, success, ms, running = false) {
  const li = addMessage(`tool${success === false ? " failed" : ""}`);
  setToolLine(li, name, args, success, ms, running);
  return li;
}

export function setToolLine(li, name, args, success, ms, running = false) {
  li.textContent = `⚙ ${describeCall(name, args)}${running ? " …" : ""}${ms != null ? ` · ${ms} ms` : ""}${success === false ? " · failed" : ""}`;
  li.dataset.tool = name;
  li.classList.toggle("failed", success === false);
}
