// "New chat on…": projects (and the calendar), then a project's open tasks; filter, arrows, Enter.

import { api } from "./api.js";

const $ = (id) => document.getElementById(id);
const picker = { project: null, timer: null, seq: 0, start: null };

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

function clearList() {
  // What the last opening listed must not be clickable while the new list loads (a fast click
  // on the last project's "The whole project" would otherwise choose it).
  $("picker-list").replaceChildren();
  $("picker-status").textContent = "Loading…";
}

export function openPicker() {
  clearList();
  picker.project = null;
  $("picker-crumb").hidden = true;
  $("picker-search").value = "";
  $("picker-search").placeholder = "Filter projects";
  $("picker").showModal();
  $("picker-search").focus();
  renderPicker();
}

async function pickerItems(query) {
  if (!picker.project) {
    const params = new URLSearchParams({ limit: "100" });
    if (query) params.set("query", query);
    const { projects, total } = await api(`/api/projects?${params}`);
    const items = projects.map((p) => ({ label: p.name, hint: p.status, project: p }));
    if (!query) items.unshift({ label: "Calendar", hint: "planning time", location: { context_type: "calendar" } });
    const none = query ? "No project matches." : "No projects yet.";
    return { items, note: !projects.length ? none : total > projects.length ? `${projects.length} of ${total} projects; type to narrow.` : "" };
  }
  const params = new URLSearchParams({ project_id: picker.project.id, limit: "100" });
  for (const status of ["backlog", "in_progress", "blocked"]) params.append("status", status);
  if (query) params.set("query", query);
  const { tasks, total } = await api(`/api/tasks?${params}`);
  const items = tasks.map((t) => ({ label: t.title, hint: `${t.status.replace("_", " ")} · ${t.priority}`, location: { context_type: "task", entity_id: t.id } }));
  if (!query) items.unshift({ label: "The whole project", hint: picker.project.name, location: { context_type: "project", entity_id: picker.project.id } });
  const none = query ? "No open task matches." : "No open tasks.";
  return { items, note: !tasks.length ? none : total > tasks.length ? `${tasks.length} of ${total} open tasks; type to narrow.` : "" };
}

async function renderPicker() {
  const seq = ++picker.seq;
  let result;
  try {
    result = await pickerItems($("picker-search").value.trim());
  } catch (error) {
    result = { items: [], note: error.message };
  }
  if (seq !== picker.seq) return;  // a newer filter is on its way
  $("picker-list").replaceChildren(...result.items.map((item) => {
    const button = element("button", "pick");
    button.type = "button";
    button.append(element("span", "label", item.label), element("span", "hint", item.hint || ""));
    button.addEventListener("click", () => (item.project ? chooseProject(item.project) : choose(item.location)));
    const li = element("li");
    li.append(button);
    return li;
  }));
  $("picker-status").textContent = result.note;
}

function chooseProject(project) {
  clearList();
  picker.project = project;
  $("picker-project").textContent = project.name;
  $("picker-crumb").hidden = false;
  $("picker-search").value = "";
  $("picker-search").placeholder = "Filter tasks";
  $("picker-search").focus();
  renderPicker();
}

function pickerBack() {
  clearList();
  picker.project = null;
  $("picker-crumb").hidden = true;
  $("picker-search").value = "";
  $("picker-search").placeholder = "Filter projects";
  $("picker-search").focus();
  renderPicker();
}

function choose(where) {
  $("picker").close();
  picker.start(where);
}

function pickerKeys(event) {
  const picks = [...$("picker-list").querySelectorAll("button.pick")];
  const at = picks.indexOf(document.activeElement);
  const search = $("picker-search");
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = at < 0 ? (step > 0 ? 0 : picks.length - 1) : at + step;
    if (next < 0 || next >= picks.length) search.focus();
    else picks[next].focus();
  } else if (event.key === "Enter" && document.activeElement === search) {
    event.preventDefault();  // Enter in the filter chooses the first item, never submits the dialog
    if (picks.length) picks[0].click();
  } else if (event.key === "Backspace" && document.activeElement === search && !search.value && picker.project) {
    event.preventDefault();
    pickerBack();
  }
}

// start(where): open a new chat there ({context_type, entity_id}); isOpening(): a chat is being opened.
export function initPicker(start, isOpening) {
  picker.start = start;
  $("picker").addEventListener("keydown", pickerKeys);
  $("picker-back").addEventListener("click", pickerBack);
  $("picker-search").addEventListener("input", () => {
    clearTimeout(picker.timer);
    picker.timer = setTimeout(renderPicker, 150);
  });
  $("picker").addEventListener("close", () => { if (!isOpening()) $("new-chat-on").focus(); });
}
