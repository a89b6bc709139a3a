// tierwise web chat: chats, streamed turns (server-sent events over fetch), stop, and the context dashboard.
"use strict";

const $ = (id) => document.getElementById(id);
const COLORS = ["#3d6f8e", "#7a9e7e", "#c9962b", "#8e5b7a", "#b5523b", "#5b7f8e", "#9a8b5b", "#6b6b9e", "#4f8a5b", "#aa7755"];
const state = { chat: null, controller: null, running: false, opening: null };

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

async function loadChats() {
  const { chats } = await api("/api/chats");
  const list = $("chat-list");
  list.innerHTML = "";
  for (const chat of chats) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `#${chat.id}`;
    a.textContent = chat.title;
    a.dataset.id = chat.id;
    if (state.chat && chat.id === state.chat.id) a.setAttribute("aria-current", "true");
    a.addEventListener("click", (event) => { event.preventDefault(); openChat(chat.id); });
    li.appendChild(a);
    list.appendChild(li);
  }
  return chats;
}

async function openChat(id) {
  state.chat = await api(`/api/chats/${id}`);
  location.hash = id;
  $("chat-title").textContent = state.chat.title;
  $("messages").innerHTML = "";
  const { messages } = await api(`/api/chats/${id}/messages`);
  for (const m of messages) {
    if (m.role === "user") addMessage("user", escapeHtml(m.content || ""));
    else if (m.role === "assistant") {
      for (const call of m.tool_executions || []) toolLine(call.tool_name, call.success, call.duration_ms);
      if (m.content) addMessage("assistant", markdown(m.content));
    }
  }
  await Promise.all([loadChats(), refreshDashboard()]);
  $("input").focus();
}

function newChat() {
  // Remember the opening, so a message typed meanwhile goes to this chat once it is open.
  state.opening = (async () => {
    const chat = await api("/api/chats", { method: "POST", body: "{}" });
    await openChat(chat.id);
  })().finally(() => { state.opening = null; });
  return state.opening;
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
          if (event.title) $("chat-title").textContent = event.title;
        }
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") addMessage("error", escapeHtml(error.message));
  } finally {
    if (!written) answer.remove();
    setRunning(false);
    state.controller = null;
    await Promise.all([loadChats(), refreshDashboard()]);
    $("input").focus();
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
  svg.innerHTML = values.map((v, i) => `<rect x="${i * width + 1}" y="${90 - (85 * v) / max}" width="${Math.max(width - 2, 1)}" height="${(85 * v) / max}" fill="${COLORS[0]}"><title>turn ${i + 1}: ${v.toLocaleString()} prompt tokens</title></rect>`).join("");
}

async function refreshDashboard() {
  if (!state.chat) return;
  const [status, detail] = await Promise.all([
    api(`/api/context/status?sessionId=${state.chat.id}`),
    api(`/api/chats/${state.chat.id}/context`),
  ]);
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
  $("compactions").innerHTML = detail.compactions.length
    ? detail.compactions.map((c) => `<li>${escapeHtml(c.action)} at ${c.threshold}: ${c.tokens_before} → ${c.tokens_after} tokens</li>`).join("")
    : "<li>none yet</li>";
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
$("new-chat").addEventListener("click", newChat);
$("toggle-dashboard").addEventListener("click", toggleDashboard);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && state.running) stop();
  if (event.altKey && event.key.toLowerCase() === "n") { event.preventDefault(); newChat(); }
  if (event.altKey && event.key.toLowerCase() === "d") { event.preventDefault(); toggleDashboard(); }
});

(async () => {
  const chats = await loadChats();
  const wanted = location.hash.slice(1);
  if (wanted && chats.some((c) => c.id === wanted)) await openChat(wanted);
  else if (chats.length) await openChat(chats[0].id);
  $("input").focus();
})();
