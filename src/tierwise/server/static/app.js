// tierwise web chat: chats (new, on a project or task, rename, delete), streamed turns (server-sent events
// over fetch), stop, the context dashboard and usage. User text reaches the DOM as textContent or escaped.
"use strict";

const $ = (id) => document.getElementById(id);
const COLORS = ["#3d6f8e", "#7a9e7e", "#c9962b", "#8e5b7a", "#b5523b", "#5b7f8e", "#9a8b5b", "#6b6b9e", "#4f8a5b", "#aa7755"];
const state = { chat: null, chats: [], controller: null, running: false, opening: null };
const KINDS = { project: "Project", task: "Task", calendar: "Calendar", api: "API session", "api-superseded": "API session (replaced)" };

async function api(path, options = {}) {
  const response = await fetch(path, { headers: { "content-type": "application/json" }, ...options });
  if (response.status === 204) return null;
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `request failed (${response.status})`);
  return body;
}

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// A small, safe markdown: paragraphs, bullet lists, **bold**, `code`; everything else is text.
function markdown(text) {
  const inline = (s) => escapeHtml(s).replace(/\*\*(.+?)\*\*/g, "<strong>$1</strong>").replace(/`([^`]+)`/g, "<code>$1</code>");
  const out = [];
  let list = false;
  for (const line of text.split("\n")) {
    const item = line.match(/^\s*[-*]\s+(.*)/);
    if (item) {
      if (!list) { out.push("<ul>"); list = true; }
      out.push(`<li>${inline(item[1])}</li>`);
      continue;
    }
    if (list) { out.push("</ul>"); list = false; }
    if (line.trim()) out.push(`<p>${inline(line)}</p>`);
  }
  if (list) out.push("</ul>");
  return out.join("");
}

function addMessage(kind, html) {
  const li = document.createElement("li");
  li.className = kind;
  li.innerHTML = html;
  $("messages").appendChild(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

// "Project · Q4 launch", "Task · Book the venue (Offsite)", "Calendar"; "" for a global chat.
function contextLabel(context) {
  if (!context || context.type === "global") return "";
  const kind = KINDS[context.type] || context.type;
  if (context.type !== "project" && context.type !== "task") return kind;
  if (!context.exists) return `${kind} · no longer exists`;
  return `${kind} · ${context.name}${context.project ? ` (${context.project.name})` : ""}`;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

// Lists may come back out of order (a toggle while the first list loads): only the newest is shown,
// and an older call resolves to it.
let chatsAsked = 0;
let newestChats = Promise.resolve([]);

function loadChats() {
  const asked = ++chatsAsked;
  newestChats = fetchChats(asked);
  return newestChats;
}

async function fetchChats(asked) {
  const replaced = $("show-replaced-box").checked ? "?include_superseded=true" : "";
  const { chats } = await api(`/api/chats${replaced}`);
  if (asked !== chatsAsked) return newestChats;
  state.chats = chats;
  const items = chats.map((chat) => {
    const a = element("a");
    a.href = `#${chat.id}`;
    a.dataset.id = chat.id;
    const where = contextLabel(chat.context);
    a.append(element("span", "title", chat.title));
    if (where) a.append(element("span", "where", where));
    a.title = where ? `${chat.title} — ${where}` : chat.title;
    if (state.chat && chat.id === state.chat.id) a.setAttribute("aria-current", "true");
    a.addEventListener("click", (event) => { event.preventDefault(); openChat(chat.id); });
    const li = element("li");
    li.append(a);
    return li;
  });
  $("chat-list").replaceChildren(...items);
  return chats;
}

// Back to the composer, unless the user has moved on meanwhile (renaming, confirming, picking).
function focusInput() {
  const active = document.activeElement;
  if ($("chat-head").contains(active) || $("picker").open) return;
  $("input").focus();
}

function renderHeader() {
  const chat = state.chat;
  $("chat-title").textContent = chat ? chat.title : "New chat";
  const where = chat ? contextLabel(chat.context) : "";
  $("chat-context").textContent = where;
  $("chat-context").hidden = !where;
  $("chat-actions").hidden = !chat || !$("rename-form").hidden;
  document.title = chat ? `${chat.title} · tierwise` : "tierwise";
}

function showError(message) {
  $("head-error").textContent = message || "";
  $("head-error").hidden = !message;
}

function resetHead() {
  $("rename-form").hidden = true;
  $("chat-title").hidden = false;
  $("delete-confirm").hidden = true;
  showError("");
}

async function openChat(id) {
  state.chat = await api(`/api/chats/${id}`);
  history.replaceState(null, "", `#${id}`);
  resetHead();
  renderHeader();
  $("messages").replaceChildren();
  const { messages } = await api(`/api/chats/${id}/messages`);
  for (const m of messages) {
    if (m.role === "user") addMessage("user", escapeHtml(m.content || ""));
    else if (m.role === "assistant") {
      for (const call of m.tool_executions || []) toolLine(call.tool_name, call.success, call.duration_ms);
      if (m.content) addMessage("assistant", markdown(m.content));
    }
  }
  await Promise.all([loadChats(), refreshDashboard()]);
  focusInput();
}

// No chat open: the next message starts a new (global) chat.
function showEmpty() {
  state.chat = null;
  history.replaceState(null, "", location.pathname);
  resetHead();
  renderHeader();
  $("messages").replaceChildren(element("li", "empty", "No chat open. Type a message to start one, or start a chat on a project or task with “On…” (Alt+P)."));
  clearDashboard();
}

// where: {} for a global chat, or {context_type, entity_id} for a chat on a project, task or the calendar.
function newChat(where = {}) {
  // Remember the opening, so a message typed meanwhile goes to this chat once it is open.
  state.opening = (async () => {
    const chat = await api("/api/chats", { method: "POST", body: JSON.stringify(where) });
    await openChat(chat.id);
  })().finally(() => { state.opening = null; });
  return state.opening;
}

// --- rename and delete the open chat --------------------------------------------------------------

function startRename() {
  if (!state.chat) return;
  $("delete-confirm").hidden = true;
  showError("");
  $("chat-title").hidden = true;
  $("chat-actions").hidden = true;
  $("rename-form").hidden = false;
  const input = $("rename-input");
  input.value = state.chat.title;
  input.focus();
  input.select();
}

function endRename() {
  $("rename-form").hidden = true;
  $("chat-title").hidden = false;
  renderHeader();
  if (state.chat) $("rename").focus();
}

async function saveRename() {
  const title = $("rename-input").value.trim();
  if (!state.chat || !title || title === state.chat.title) { endRename(); return; }
  try {
    const renamed = await api(`/api/chats/${state.chat.id}`, { method: "PATCH", body: JSON.stringify({ title }) });
    state.chat = { ...state.chat, ...renamed };
    endRename();
    await loadChats();
  } catch (error) {
    showError(error.message);
  }
}

function askDelete() {
  if (!state.chat) return;
  showError("");
  $("delete-question").textContent = `Delete “${state.chat.title}” and all its messages? This cannot be undone.`;
  $("delete-confirm").hidden = false;
  $("delete-no").focus();  // the safe choice has the focus
}

function cancelDelete() {
  $("delete-confirm").hidden = true;
  if (state.chat) $("delete").focus();
}

async function confirmDelete() {
  if (!state.chat) return;
  const id = state.chat.id;
  const index = state.chats.findIndex((c) => c.id === id);
  try {
    await api(`/api/chats/${id}`, { method: "DELETE" });
  } catch (error) {
    $("delete-confirm").hidden = true;
    showError(error.message);
    return;
  }
  $("delete-confirm").hidden = true;
  document.activeElement.blur();  // the confirm is gone: the composer takes the focus next
  const rest = state.chats.filter((c) => c.id !== id);
  state.chats = rest;
  const link = $("chat-list").querySelector(`a[data-id="${CSS.escape(id)}"]`);
  if (link) link.parentElement.remove();  // gone from the list at once, before the next chat opens
  const next = rest[Math.min(Math.max(index, 0), rest.length - 1)];
  if (next) await openChat(next.id);
  else { showEmpty(); await loadChats(); focusInput(); }
  refreshMonth();
}

// --- the "New chat on…" picker: projects, then a project's open tasks --------------------------------

const picker = { project: null, timer: null, seq: 0 };

function openPicker() {
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
    button.addEventListener("click", () => (item.project ? chooseProject(item.project) : startOn(item.location)));
    const li = element("li");
    li.append(button);
    return li;
  }));
  $("picker-status").textContent = result.note;
}

function chooseProject(project) {
  picker.project = project;
  $("picker-project").textContent = project.name;
  $("picker-crumb").hidden = false;
  $("picker-search").value = "";
  $("picker-search").placeholder = "Filter tasks";
  $("picker-search").focus();
  renderPicker();
}

function pickerBack() {
  picker.project = null;
  $("picker-crumb").hidden = true;
  $("picker-search").value = "";
  $("picker-search").placeholder = "Filter projects";
  $("picker-search").focus();
  renderPicker();
}

async function startOn(where) {
  $("picker").close();
  try {
    await newChat(where);
  } catch (error) {
    showError(error.message);
  }
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

function toolLine(name, success, ms) {
  const li = addMessage(`tool${success === false ? " failed" : ""}`, "");
  li.textContent = `⚙ ${name}${ms != null ? ` · ${ms} ms` : ""}${success === false ? " · failed" : ""}`;
  return li;
}

function setRunning(running) {
  state.running = running;
  $("send").hidden = running;
  $("stop").hidden = !running;
  $("input").disabled = running;
}

async function send(text) {
  if (state.opening) await state.opening;
  if (!state.chat) await newChat();
  addMessage("user", escapeHtml(text));
  setRunning(true);
  const answer = addMessage("assistant", "");
  let buffer = "", written = "";
  const tools = {};
  state.controller = new AbortController();
  try {
    const response = await fetch(`/api/chats/${state.chat.id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: text }),
      signal: state.controller.signal,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.error || `request failed (${response.status})`);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let type = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) type = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (!data) continue;
        const event = JSON.parse(data);
        if (type === "text") { written += event.text; answer.innerHTML = markdown(written); answer.scrollIntoView({ block: "end" }); }
        else if (type === "tool_call_start") { tools[event.call_id] = toolLine(`${event.name} …`); $("messages").appendChild(answer); }
        else if (type === "tool_call_complete") {
          const line = tools[event.call_id] || toolLine(event.name);
          line.textContent = `⚙ ${event.name} · ${event.duration_ms} ms${event.success ? "" : " · failed"}`;
          if (!event.success) line.classList.add("failed");
        } else if (type === "error") addMessage("error", escapeHtml(event.message));
        else if (type === "done") {
          if (event.reason === "stopped") addMessage("tool", "stopped — what was said is kept");
          if (event.title && state.chat) { state.chat.title = event.title; renderHeader(); }
        }
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") addMessage("error", escapeHtml(error.message));
  } finally {
    if (!written) answer.remove();
    setRunning(false);
    state.controller = null;
    await Promise.all([loadChats(), refreshDashboard(), refreshMonth()]);
    focusInput();
  }
}

async function stop() {
  if (!state.chat || !state.running) return;
  await api(`/api/chats/${state.chat.id}/stop`, { method: "POST" }).catch(() => null);
}

function renderBreakdown(breakdown) {
  const kinds = Object.entries(breakdown).filter(([kind]) => kind !== "total" && breakdown[kind].tokens > 0);
  const total = kinds.reduce((sum, [, v]) => sum + v.tokens, 0) || 1;
  const bar = kinds.map(([kind, v], i) => `<span title="${kind}: ${v.tokens}" style="width:${(100 * v.tokens) / total}%;background:${COLORS[i % COLORS.length]}"></span>`).join("");
  const legend = kinds.map(([kind, v], i) => `<span class="swatch" style="background:${COLORS[i % COLORS.length]}"></span><span>${escapeHtml(kind)}</span><span>${v.tokens.toLocaleString()}</span>`).join("");
  $("breakdown").innerHTML = kinds.length ? `<div class="bar">${bar}</div><div class="legend">${legend}</div>` : `<p class="dim">nothing yet</p>`;
}

function renderTurns(turns) {
  const svg = $("turns");
  const values = turns.map((t) => t.prompt_tokens || 0);
  const max = Math.max(1, ...values);
  const width = 300 / Math.max(values.length, 1);
  const cached = (t) => (t.cached_tokens ? ` (${t.cached_tokens.toLocaleString()} cached)` : t.prefix_tokens ? ` (${t.prefix_tokens.toLocaleString()} repeated)` : "");
  svg.innerHTML = values.map((v, i) => `<rect x="${i * width + 1}" y="${90 - (85 * v) / max}" width="${Math.max(width - 2, 1)}" height="${(85 * v) / max}" fill="${COLORS[0]}"><title>turn ${i + 1}: ${v.toLocaleString()} prompt tokens${cached(turns[i])}</title></rect>`).join("");
}

async function refreshDashboard() {
  if (!state.chat) return;
  const [status, detail, usage] = await Promise.all([
    api(`/api/context/status?sessionId=${state.chat.id}`),
    api(`/api/chats/${state.chat.id}/context`),
    api(`/api/chats/${state.chat.id}/usage`),
  ]);
  renderUsage(usage);
  const snapshot = status.snapshot;
  const used = snapshot ? snapshot.total_tokens : 0;
  const share = used / status.budget.available;
  const health = status.budgetHealth;
  const fill = $("budget-fill");
  fill.style.width = `${Math.min(100, 100 * share)}%`;
  const level = health != null ? (health < 0.4 ? "critical" : health < 0.8 ? "caution" : "") : share > 0.95 ? "critical" : share > 0.8 ? "caution" : "";
  fill.className = level;
  $("budget-text").textContent = snapshot
    ? `${used.toLocaleString()} of ${status.budget.available.toLocaleString()} tokens in the last pack (${Math.round(100 * share)}%)` + (health != null ? ` · budget health ${Math.round(100 * health)}%` : "")
    : "No pack yet.";
  $("band").textContent = status.pruningBand ? `Pruning band: ${status.pruningBand.name || JSON.stringify(status.pruningBand)}` : "Pruning band: none (no spending limit set)";
  renderBreakdown(snapshot ? snapshot.tier_breakdown : {});
  renderTurns(detail.turns);
  const body = $("layers").querySelector("tbody");
  body.innerHTML = detail.pack ? detail.pack.layers.map((l) => `<tr><td>${escapeHtml(l.id)}</td><td>${l.tokens.toLocaleString()}${l.tokens_full > l.tokens ? ` / ${l.tokens_full.toLocaleString()}` : ""}</td><td class="status-${l.status}">${l.status}</td></tr>${l.reason ? `<tr><td colspan="3" class="reason">${escapeHtml(l.reason)}</td></tr>` : ""}`).join("") : "";
  $("pack-prefix").textContent = packPrefix(detail.pack);
  $("compactions").innerHTML = detail.compactions.length
    ? detail.compactions.map((c) => `<li>${escapeHtml(c.action)} at ${c.threshold}: ${c.tokens_before} → ${c.tokens_after} tokens</li>`).join("")
    : "<li>none yet</li>";
}

function clearDashboard() {
  $("budget-fill").style.width = "0";
  $("budget-text").textContent = "No pack yet.";
  $("band").textContent = "";
  renderBreakdown({});
  renderTurns([]);
  renderUsage(null);
  $("layers").querySelector("tbody").replaceChildren();
  $("pack-prefix").textContent = "";
  $("compactions").replaceChildren(element("li", null, "none yet"));
}

// What the last pack repeats of the one before it: the part a provider's prompt cache can serve.
function packPrefix(pack) {
  if (!pack) return "";
  if (pack.prefix_tokens == null) return "No previous pack to compare with (the chat's first since the server started).";
  const share = pack.total_tokens ? Math.round((100 * pack.prefix_tokens) / pack.total_tokens) : 0;
  return `${count(pack.prefix_tokens)} of ${count(pack.total_tokens)} tokens (${share}%) repeat the previous pack: the expected cache hit.`;
}

// --- usage: this chat in the dashboard, the user's month in the sidebar ------------------------------

const count = (n) => (n || 0).toLocaleString();

// "$0.0012", "$1.35", "$0.0012 + unpriced tokens", or "unknown (no price for …)".
function dollars(usage) {
  if (usage.dollars == null) return `unknown${usage.unpriced_models.length ? ` (no price for ${usage.unpriced_models.join(", ")})` : ""}`;
  const d = usage.dollars;
  const text = d === 0 ? "$0" : d < 0.01 ? `$${d.toFixed(4)}` : `$${d.toFixed(2)}`;
  return usage.price_known ? text : `${text} + ${count(usage.unpriced_tokens)} unpriced tokens`;
}

// "$0.0012" saved, or "< $0.0001" for less.
const saved = (d) => (d >= 0.01 ? `$${d.toFixed(2)}` : d >= 0.0001 ? `$${d.toFixed(4)}` : "< $0.0001");

// The chat's prompt-cache hit share: cached tokens the model reported, else expected from repeated prefixes.
function cacheText(cache) {
  if (!cache || cache.hit_share == null || !cache.source) return "none yet";
  const share = `${Math.round(100 * cache.hit_share)}%`;
  if (cache.source === "expected") return `${share} of prompt tokens, expected (repeated prefixes; the model reports none)`;
  return `${share} of prompt tokens (${count(cache.cached_tokens)})${cache.saved_dollars > 0 ? ` · saved ${saved(cache.saved_dollars)}` : ""}`;
}

function renderUsage(usage) {
  const rows = !usage || !usage.tokens
    ? [["Tokens", "none yet"]]
    : [
        ["Tokens", `${count(usage.tokens)} (${count(usage.prompt_tokens)} prompt · ${count(usage.completion_tokens)} completion${usage.unrecorded_tokens ? ` · ${count(usage.unrecorded_tokens)} unrecorded` : ""})`],
        ["Cost", dollars(usage)],
        ["Cached", cacheText(usage.cache)],
        ["Turns", `${count(usage.turns)} · ${count(usage.model_calls)} model call${usage.model_calls === 1 ? "" : "s"}`],
        ["Models", usage.models.join(", ") || "—"],
        ["Updated", usage.last_updated ? new Date(usage.last_updated).toLocaleString() : "—"],
      ];
  $("usage").replaceChildren(...rows.flatMap(([term, value]) => [element("dt", null, term), element("dd", null, value)]));
  $("usage-note").textContent = usage ? usage.notes.join(" ") : "";
}

async function refreshMonth() {
  const usage = await api("/api/usage").catch(() => null);
  const footer = $("month-usage");
  if (!usage) { footer.textContent = ""; return; }
  const month = usage.month;
  footer.textContent = `This month: ${count(month.tokens)} tokens · ${dollars(month)}`;
  const all = usage.all_time;
  footer.title = [`All time: ${count(all.tokens)} tokens · ${dollars(all)} · ${count(all.turns)} turns`, ...usage.notes].join("\n");
}

function toggleDashboard() {
  const wide = window.matchMedia("(min-width: 901px)").matches;
  document.body.classList.toggle(wide ? "hide-dashboard" : "show-dashboard");
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text || state.running) return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("composer").requestSubmit(); }
});
$("stop").addEventListener("click", stop);
$("new-chat").addEventListener("click", () => newChat());
$("new-chat-on").addEventListener("click", openPicker);
$("toggle-dashboard").addEventListener("click", toggleDashboard);
$("show-replaced-box").addEventListener("change", () => loadChats().catch((error) => showError(error.message)));

$("rename").addEventListener("click", startRename);
$("chat-title").addEventListener("dblclick", startRename);
$("rename-form").addEventListener("submit", (event) => { event.preventDefault(); saveRename(); });
$("rename-cancel").addEventListener("click", endRename);
$("rename-input").addEventListener("keydown", (event) => {
  if (event.key === "Escape") { event.preventDefault(); event.stopPropagation(); endRename(); }
});
$("delete").addEventListener("click", askDelete);
$("delete-yes").addEventListener("click", confirmDelete);
$("delete-no").addEventListener("click", cancelDelete);
$("delete-confirm").addEventListener("keydown", (event) => {
  if (event.key === "Escape") { event.preventDefault(); event.stopPropagation(); cancelDelete(); }
});

$("picker").addEventListener("keydown", pickerKeys);
$("picker-back").addEventListener("click", pickerBack);
$("picker-search").addEventListener("input", () => {
  clearTimeout(picker.timer);
  picker.timer = setTimeout(renderPicker, 150);
});
$("picker").addEventListener("close", () => { if (!state.opening) $("new-chat-on").focus(); });

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || $("picker").open) return;
  if (event.key === "Escape" && state.running) stop();
  if (event.key === "F2" && state.chat) { event.preventDefault(); startRename(); }
  if (event.altKey && event.key.toLowerCase() === "n") { event.preventDefault(); newChat(); }
  if (event.altKey && event.key.toLowerCase() === "p") { event.preventDefault(); openPicker(); }
  if (event.altKey && event.key.toLowerCase() === "d") { event.preventDefault(); toggleDashboard(); }
});

(async () => {
  const chats = await loadChats();
  const wanted = location.hash.slice(1);
  if (wanted && chats.some((c) => c.id === wanted)) await openChat(wanted);
  else if (wanted) await openChat(wanted).catch(showEmpty);  // e.g. a replaced API session, not listed
  else if (chats.length) await openChat(chats[0].id);
  else showEmpty();
  refreshMonth();
  focusInput();
})();
