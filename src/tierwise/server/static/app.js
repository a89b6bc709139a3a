// tierwise web chat: chats (new, on a project or task, rename, delete), streamed turns (server-sent events
// over fetch), stop, the API key when the server requires one, and the context dashboard (dashboard.js).
// Model text reaches the DOM only through markdown() (escaped first); user text as textContent.

import { api, ApiError, onUnauthorized, request, saveKey, storedKey } from "./api.js";
import { clearDashboard, onDashboardError, refreshDashboard, refreshMonth, setStreaming } from "./dashboard.js";
import { escapeHtml, markdown } from "./markdown.js";
import { initPicker, openPicker } from "./picker.js";
import { addAnswer, addMessage, addText, setToolLine, toolLine } from "./transcript.js";

const $ = (id) => document.getElementById(id);
const state = { chat: null, chats: [], controller: null, running: false, opening: null, info: null, started: false };
const KINDS = { project: "Project", task: "Task", calendar: "Calendar", api: "API session", "api-superseded": "API session (earlier branch)" };
// Requests the offline assistant answers from the sample workspace (and any model can).
export const EXAMPLES = [
  "What are my high priority tasks?",
  "Show me my active projects",
  "What's on my calendar this week?",
  "Find my notes about the launch",
];

// --- notices: every failure is shown, none is silent ----------------------------------------------

function notice(message) {
  $("notice-text").textContent = message || "";
  $("notice").hidden = !message;
}

// A failure, shown: a 401 has already asked for a key (the key field says why), so it is not repeated.
function report(error) {
  if (!error || error.name === "AbortError" || (error instanceof ApiError && error.status === 401)) return;
  notice(error.message || String(error));
}

window.addEventListener("unhandledrejection", (event) => report(event.reason));

// --- the API key (serve --require-key) ------------------------------------------------------------

function askKey(message) {
  $("key-form").hidden = false;
  $("key-status").textContent = message || "This server needs an API key. Create one with `tierwise keys create --user NAME`.";
  $("key-input").value = "";
  $("key-input").focus();
  if (!state.started) {
    $("messages").replaceChildren(element("li", "empty", "This server needs an API key: enter yours above to see your chats."));
  }
}

onUnauthorized((error) => askKey(error.message));

async function submitKey(event) {
  event.preventDefault();
  const key = $("key-input").value.trim();
  if (!key) { $("key-status").textContent = "Paste a key first (tierwise keys create --user NAME prints one)."; return; }
  saveKey(key);
  try {
    await api("/api/chats?limit=1");  // checks the key
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) $("key-status").textContent = error.message;
    return;  // a 401 has asked again, with the server's reason
  }
  $("key-form").hidden = true;
  notice("");
  await start();
}

function forgetKey() {
  saveKey("");
  askKey("Key forgotten. Enter another to go on.");
}

// --- which model answers ------------------------------------------------------------------------

async function loadInfo() {
  try {
    state.info = await api("/api/info");
  } catch (error) {
    notice(error.message);
    return null;
  }
  const info = state.info;
  // "answers:" / "model:" gives way on a phone, so the label itself fits without being cut
  const label = info.label.replace(/\([^)]*\)/g, (aside) => aside.replace(/ /g, "\u00a0"));  // "(no AI model)" stays whole
  $("model").replaceChildren(element("span", "model-role", info.offline ? "answers: " : "model: "), label);
  $("model").title = info.offline ? "No model is configured: set TIERWISE_BASE_URL and TIERWISE_MODEL for a real one." : `Answers come from ${info.model}.`;
  $("key-button").hidden = !info.requireKey;
  return info;
}

// --- chats --------------------------------------------------------------------------------------

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

// Lists may come back out of order (a toggle while the first list loads): only the newest is shown.
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
    a.addEventListener("click", (event) => {
      event.preventDefault();
      document.body.classList.remove("show-chats");
      openChat(chat.id).catch(report);
    });
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
  if ($("chat-head").contains(active) || $("picker").open || !$("key-form").hidden) return;
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

// An empty conversation: what to do, and example prompts that send themselves.
function emptyState(intro) {
  const li = element("li", "empty");
  li.append(element("p", null, intro));
  const list = element("div", "examples");
  list.setAttribute("aria-label", "Example prompts");
  for (const prompt of EXAMPLES) {
    const button = element("button", "example", prompt);
    button.type = "button";
    button.addEventListener("click", () => {
      $("input").value = prompt;
      $("composer").requestSubmit();
    });
    list.append(button);
  }
  li.append(list);
  $("messages").replaceChildren(li);
}

async function openChat(id) {
  state.chat = await api(`/api/chats/${encodeURIComponent(id)}`);
  history.replaceState(null, "", `#${id}`);
  resetHead();
  renderHeader();
  $("messages").replaceChildren();
  const { messages } = await api(`/api/chats/${encodeURIComponent(id)}/messages`);
  for (const m of messages) {
    if (m.role === "user") addText("user", m.content || "");
    else if (m.role === "assistant") {
      for (const call of m.tool_executions || []) toolLine(call.tool_name, call.arguments, call.success, call.duration_ms);
      if (m.content) addAnswer(m.content);
    }
  }
  if (!messages.length) emptyState("Ask anything about your tasks, projects, notes or calendar — or try one of these:");
  await Promise.all([loadChats(), refreshDashboard(id)]);
  focusInput();
}

// No chat open: the next message starts a new (global) chat.
function showEmpty() {
  state.chat = null;
  history.replaceState(null, "", location.pathname);
  resetHead();
  renderHeader();
  emptyState("No chat open. Type a message to start one, start a chat on a project or task with “On…” (Alt+P), or try one of these:");
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
  refreshMonth().catch(report);
}

async function startOn(where) {
  try {
    await newChat(where);
  } catch (error) {
    showError(error.message);
  }
}

// --- a turn: the message, then the answer streamed as server-sent events --------------------------

function setRunning(running) {
  state.running = running;
  $("send").hidden = running;
  $("stop").hidden = !running;
  $("input").disabled = running;
}

// The stream's events, one block ("event: …\ndata: …") at a time.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
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
      if (data) yield [type, JSON.parse(data)];
    }
  }
}

async function send(text) {
  if (state.opening) await state.opening.catch(() => null);
  try {
    if (!state.chat) await newChat();
  } catch (error) {
    $("input").value = text;  // kept, to send again
    if (error instanceof ApiError && error.status === 401) return;  // the key field asks
    notice(`Could not start a chat: ${error.message}`);
    return;
  }
  $("messages").querySelector("li.empty")?.remove();
  addText("user", text);
  setRunning(true);
  const chatId = state.chat.id;
  setStreaming(chatId, true);
  const answer = addMessage("assistant");
  let written = "";
  const tools = {};
  state.controller = new AbortController();
  try {
    const response = await request(`/api/chats/${chatId}/messages`, {
      method: "POST",
      body: JSON.stringify({ content: text }),
      signal: state.controller.signal,
    });
    for await (const [type, event] of events(response)) {
      if (type === "text") { written += event.text; answer.innerHTML = markdown(written); answer.scrollIntoView({ block: "end" }); }
      else if (type === "tool_call_start") {
        tools[event.call_id] = toolLine(event.name, event.arguments, null, null, true);
        tools[event.call_id].dataset.args = event.arguments || "";
        $("messages").appendChild(answer);
      } else if (type === "tool_call_complete") {
        const line = tools[event.call_id] || toolLine(event.name, "", null, null);
        setToolLine(line, event.name, line.dataset.args || "", event.success, event.duration_ms);
      } else if (type === "error") addText("error", event.message);
      else if (type === "done") {
        if (event.reason === "stopped") addText("tool", "stopped — what was said is kept");
        if (event.title && state.chat) { state.chat.title = event.title; renderHeader(); }
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") addMessage("error", escapeHtml(error.message));
  } finally {
    if (!written) answer.remove();
    setRunning(false);
    setStreaming(chatId, false);
    state.controller = null;
    await Promise.all([loadChats(), refreshDashboard(chatId), refreshMonth()]).catch(report);
    focusInput();
  }
}

async function stop() {
  if (!state.chat || !state.running) return;
  await api(`/api/chats/${state.chat.id}/stop`, { method: "POST" }).catch(report);
}

// --- layout: the dashboard (and on a narrow screen, the chat list) as drawers ---------------------

const wide = () => window.matchMedia("(min-width: 901px)").matches;

function toggleDashboard() {
  const shown = wide() ? !document.body.classList.toggle("hide-dashboard") : document.body.classList.toggle("show-dashboard");
  document.body.classList.remove("show-chats");
  $("toggle-dashboard").setAttribute("aria-expanded", String(shown));
}

function toggleChats() {
  document.body.classList.toggle("show-chats");
  document.body.classList.remove("show-dashboard");
  $("toggle-chats").setAttribute("aria-expanded", String(document.body.classList.contains("show-chats")));
}

function closeDrawers() {
  document.body.classList.remove("show-chats", "show-dashboard");
  $("toggle-chats").setAttribute("aria-expanded", "false");
  if (!wide()) $("toggle-dashboard").setAttribute("aria-expanded", "false");
}

// --- wiring -------------------------------------------------------------------------------------

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
$("new-chat").addEventListener("click", () => { closeDrawers(); newChat().catch(report); });
$("new-chat-on").addEventListener("click", () => { closeDrawers(); openPicker(); });
$("toggle-dashboard").addEventListener("click", toggleDashboard);
$("close-dashboard").addEventListener("click", closeDrawers);
$("backdrop").addEventListener("click", closeDrawers);  // a tap beside an open drawer closes it
$("toggle-chats").addEventListener("click", toggleChats);
$("show-replaced-box").addEventListener("change", () => loadChats().catch((error) => showError(error.message)));
$("key-form").addEventListener("submit", submitKey);
$("key-forget").addEventListener("click", forgetKey);
$("key-button").addEventListener("click", () => askKey(storedKey() ? "A key is saved in this browser; enter another to replace it." : ""));
$("notice-close").addEventListener("click", () => notice(""));
onDashboardError(report);

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
initPicker(startOn, () => Boolean(state.opening));

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || $("picker").open) return;
  if (event.key === "Escape" && state.running) stop();
  else if (event.key === "Escape") closeDrawers();
  if (event.key === "F2" && state.chat) { event.preventDefault(); startRename(); }
  if (event.altKey && event.key.toLowerCase() === "n") { event.preventDefault(); newChat().catch(report); }
  if (event.altKey && event.key.toLowerCase() === "p") { event.preventDefault(); openPicker(); }
  if (event.altKey && event.key.toLowerCase() === "d") { event.preventDefault(); toggleDashboard(); }
});

// The chats, once the server lets us in (with a key if it needs one).
async function start() {
  let chats;
  try {
    chats = await loadChats();
  } catch (error) {
    report(error);
    return;  // a 401 has asked for a key; saving one starts again
  }
  state.started = true;
  const wanted = location.hash.slice(1);
  if (wanted && chats.some((c) => c.id === wanted)) await openChat(wanted);
  else if (wanted) await openChat(wanted).catch(showEmpty);  // e.g. a replaced API session, not listed
  else if (chats.length) await openChat(chats[0].id);
  else showEmpty();
  refreshMonth().catch(report);
  focusInput();
}

(async () => {
  const info = await loadInfo();
  if (info && info.requireKey && !storedKey()) { askKey(); return; }
  await start();
})();
