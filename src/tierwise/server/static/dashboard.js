// The context dashboard: budget, seed 004's tiers 1–4 and the strategy in force, the chat's usage
// (with its one prompt-cache figure), what the last prompt held in words, tokens per turn, the last
// pack and the compactions that changed something; each section says what will appear while empty.
// Refreshed once a second while a turn runs (this page's, or one the server reports running), and
// the month's usage. Plain words first; the technical terms are in title attributes.

import { api } from "./api.js";
import { cacheWords, renderTurnChart } from "./chart.js";
import { escapeHtml } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const COLORS = ["#3d6f8e", "#7a9e7e", "#c9962b", "#8e5b7a", "#b5523b", "#5b7f8e", "#9a8b5b", "#6b6b9e", "#4f8a5b", "#aa7755"];
const NUMBER = new Intl.NumberFormat();
export const count = (n) => NUMBER.format(n || 0);
const KINDS = { project: "Project", task: "Task", calendar: "Calendar", global: "Everything", api: "API session" };
// A layer kind in plain words (the kind itself stays beside it, dim, and in titles).
const PARTS = {
  system: "instructions", tools: "tool definitions", input: "this turn: your question, its tool calls", task: "the task step in progress",
  narrative: "the story so far", headers: "an index of earlier conversation", profile: "your profile",
  location: "workspace context", related: "related workspace items", history: "earlier messages",
  summaries: "summaries of older messages", retrieved: "recalled earlier turns", tool_results: "earlier tool results",
};
const part = (kind) => PARTS[kind] || kind;
const STATUS = { kept: "kept", truncated: "shortened", dropped: "left out" };
// What each empty section will show, and when.
const EMPTY = {
  tiers: "How the prompt's tokens split into four tiers (always sent, workspace, recalled on request, the conversation) will appear here after your first message.",
  usage: "Tokens, cost and prompt caching for this chat will appear here after the first answer.",
  breakdown: "What the prompt sent to the model held (your question, instructions, tool definitions, workspace context, earlier messages) will appear here after your first message.",
  turns: "A bar per turn will appear here after each answer: the tokens sent to the model and the tokens of the answer.",
  layers: "Each part of the last prompt will appear here after your first message, with its tokens and whether it was kept, shortened or left out.",
  compactions: "Nothing compacted yet. When the conversation outgrows its budget, older messages are summarised; each time that saves tokens, it will appear here.",
};
const TIER_NOTE = "Tier 1 is always sent (instructions, tool definitions, this turn); 2 is workspace context; 3 what was recalled on request; 4 the earlier conversation.";

const live = { chat: null, streaming: false, timer: null, seq: 0, onError: null };

// Where a dashboard refresh's failure is shown (the page's notice).
export function onDashboardError(callback) {
  live.onError = callback;
}

// This page's turn started (true) or ended (false): refresh each second meanwhile.
export function setStreaming(chatId, streaming) {
  live.streaming = streaming;
  if (streaming) { live.chat = chatId; schedule(); }
}

function schedule() {
  clearTimeout(live.timer);
  live.timer = setTimeout(() => {
    if (live.chat) refreshDashboard(live.chat).catch((error) => live.onError && live.onError(error));
  }, 1000);
}

function setLive(on) {
  $("live").hidden = !on;
}

export async function refreshDashboard(chatId) {
  if (!chatId) return;
  live.chat = chatId;
  const seq = ++live.seq;
  const id = encodeURIComponent(chatId);
  const [status, detail, usage] = await Promise.all([
    api(`/api/context/status?sessionId=${id}`),
    api(`/api/chats/${id}/context`),
    api(`/api/chats/${id}/usage`),
  ]);
  if (seq !== live.seq || live.chat !== chatId) return;  // a newer refresh, or another chat, meanwhile
  setLive(Boolean(status.running));  // the server says a turn runs: this refresh came from the poll
  if (live.streaming || status.running) schedule();
  renderStatus(status);
  renderUsage(usage);
  renderTurns(detail.turns || [], usage && usage.cache ? usage.cache.source : null);
  renderBreakdown(detail.pack);
  renderPack(detail.pack);
  renderCompactions(detail.compactions || []);
}

function renderStatus(status) {
  const snapshot = status.snapshot;
  const available = (status.budget && status.budget.available) || status.tokenLimit || 1;
  // the stored snapshot comes after the answer; while a turn runs the tiers already tell the pack's size
  const tiered = Array.isArray(status.tierBreakdown) ? status.tierBreakdown.reduce((sum, t) => sum + (t.tokens || 0), 0) : 0;
  const used = snapshot ? snapshot.total_tokens : tiered;
  const packed = Boolean(snapshot) || tiered > 0;
  const percent = status.budgetPercent != null ? status.budgetPercent : packed ? (100 * used) / available : null;
  const health = status.budgetHealth;
  const fill = $("budget-fill");
  fill.style.width = `${Math.min(100, percent || 0)}%`;
  fill.className = health != null ? (health < 0.4 ? "critical" : health < 0.8 ? "caution" : "") : percent > 95 ? "critical" : percent > 80 ? "caution" : "";
  $("budget-text").textContent = packed
    ? `${count(used)} of ${count(available)} tokens in the last pack (${Math.round(percent)}%): the prompt last sent to the model, within this chat's budget.`
      + (health != null ? ` ${Math.round(100 * health)}% of the spending limit is left.` : "")
    : "No pack yet. The prompt built for your next message will fill this bar.";
  $("budget-text").title = health != null ? `budget health ${Math.round(100 * health)}%` : "";
  $("current-context").textContent = currentContext(status.currentContext);
  renderTiers(status.tierBreakdown, snapshot);
  renderStrategy(status.strategy, status.budgetHealth, status.pruningBand);
}

function currentContext(context) {
  if (!context) return "";
  const kind = KINDS[context.type] || context.type;
  const name = context.name ? ` · ${context.name}` : "";
  return `Context: ${kind}${name}${context.tokens ? ` (${count(context.tokens)} tokens)` : ""}`;
}

// Seed 004's four tiers: what the last pack spent on each.
function renderTiers(tiers, snapshot) {
  const body = $("tiers").querySelector("tbody");
  const filled = Array.isArray(tiers) && tiers.some((t) => t.tokens);
  $("tiers").hidden = !filled;
  if (!filled) {
    body.replaceChildren();
    $("tiers-note").textContent = snapshot && !Array.isArray(tiers) ? "This server does not report tiers yet." : EMPTY.tiers;
    return;
  }
  $("tiers-note").textContent = TIER_NOTE;
  body.replaceChildren(...tiers.map((tier) => {
    const row = document.createElement("tr");
    row.title = `Tier ${tier.tier}: ${(tier.layers || []).map((kind) => `${part(kind)} (${kind})`).join(", ") || "nothing in the last pack"}`;
    const share = Math.max(0, Math.min(100, Number(tier.percent) || 0));
    row.innerHTML = `<td>${escapeHtml(String(tier.tier))}</td><td>${escapeHtml(tier.name || "")}</td>`
      + `<td class="num">${count(tier.tokens)}</td><td class="num">${count(tier.items)}</td>`
      + `<td><span class="meter"><span style="width:${share}%;background:${COLORS[(tier.tier - 1) % COLORS.length]}"></span></span> ${share.toFixed(0)}%</td>`;
    return row;
  }));
}

// The pruning band in force, in plain words; the band's name and settings and the server's reason as a title.
function renderStrategy(strategy, health, band) {
  const out = $("strategy");
  if (!strategy) {
    out.textContent = band ? `Cost saving is on (${band.name || "a spending limit is near"}).` : "Cost saving is off: no spending limit is set.";
    out.title = band ? `pruning band: ${band.name || JSON.stringify(band)}` : "pruning band: none";
    return;
  }
  const technical = [`pruning band: ${strategy.band || "none"}`];
  if (strategy.historyMessages != null) technical.push(`history_messages ${strategy.historyMessages}`);
  if (strategy.relatedItems != null) technical.push(`related_items ${strategy.relatedItems}`);
  if (strategy.references) technical.push(`references ${strategy.references}`);
  out.title = `${technical.join(" · ")}${strategy.reason ? `\n${strategy.reason}` : ""}`;
  if (!strategy.band) {
    out.textContent = "Cost saving is off: no spending limit is set, so every part of the prompt gets what this chat's token budget allows.";
    return;
  }
  const keeps = [
    strategy.historyMessages != null ? `at most the last ${count(strategy.historyMessages)} messages` : "all recent messages that fit",
    strategy.relatedItems != null ? `at most ${count(strategy.relatedItems)} related items` : "all related items",
    { full: "recalled turns in full", summary: "recalled turns as summaries", none: "no recalled turns" }[strategy.references] || "recalled turns",
  ];
  const left = health != null ? `${Math.round(100 * health)}% of the spending limit is left, so ` : "to stay within the spending limit, ";
  out.textContent = `Cost saving is on (${strategy.band}): ${left}the prompt keeps ${keeps[0]}, ${keeps[1]} and ${keeps[2]}.`;
}

// The last pack's tokens by part, in words and as a bar: the turn's input split into the question
// and the turn's tool calls with their results (the server counts the question).
function packParts(pack) {
  const byKind = new Map();
  for (const layer of pack.layers) {
    if (layer.tokens > 0) byKind.set(layer.kind || layer.id, (byKind.get(layer.kind || layer.id) || 0) + layer.tokens);
  }
  const parts = [];
  const input = byKind.get("input") || 0;
  byKind.delete("input");
  if (input && pack.input) {
    const question = Math.min(input, pack.input.question_tokens || 0);
    const calls = [...new Set(pack.input.tool_calls || [])];
    parts.push({ text: "your question", kind: "input", tokens: question });
    if (input > question) {
      const what = calls.length ? `this turn's tool call${(pack.input.tool_calls || []).length > 1 ? "s" : ""} and results (${calls.join(", ")})` : "message formatting";
      parts.push({ text: what, kind: "input", tokens: input - question });
    }
  } else if (input) {
    parts.push({ text: "this turn (your question, and any tool calls and results so far)", kind: "input", tokens: input });
  }
  for (const [kind, tokens] of byKind) parts.push({ text: part(kind), kind, tokens });
  return parts.filter((p) => p.tokens > 0);
}

function renderBreakdown(pack) {
  const parts = pack ? packParts(pack) : [];
  if (!parts.length) {
    $("breakdown").innerHTML = `<p class="empty-state">${escapeHtml(EMPTY.breakdown)}</p>`;
    return;
  }
  const total = parts.reduce((sum, p) => sum + p.tokens, 0);
  const sentence = `${count(pack.total_tokens || total)} tokens sent to the model in the last prompt: ${parts.map((p) => `${count(p.tokens)} ${p.text}`).join(", ")}.`;
  const color = (i) => COLORS[i % COLORS.length];
  const bar = parts.map((p, i) => `<span title="${escapeHtml(p.text)} (${escapeHtml(p.kind)}): ${count(p.tokens)} tokens" style="width:${(100 * p.tokens) / total}%;background:${color(i)}"></span>`).join("");
  const legend = parts.map((p, i) => `<span class="swatch" style="background:${color(i)}"></span><span>${escapeHtml(p.text)} <span class="kind" title="the layer's kind">${escapeHtml(p.kind)}</span></span><span class="num">${count(p.tokens)}</span>`).join("");
  $("breakdown").innerHTML = `<p class="sentence">${escapeHtml(sentence)}</p><div class="bar">${bar}</div><div class="legend">${legend}</div>`;
}

function renderTurns(turns, source) {
  renderTurnChart($("turns"), $("turns-legend"), turns, source);
  $("turns-empty").hidden = turns.length > 0;
  $("turns-empty").textContent = EMPTY.turns;
}

function renderPack(pack) {
  const body = $("layers").querySelector("tbody");
  const rows = pack ? pack.layers : [];
  $("layers").hidden = !rows.length;
  $("layers-empty").hidden = rows.length > 0;
  $("layers-empty").textContent = EMPTY.layers;
  body.innerHTML = rows.map((l) => `<tr><td title="layer ${escapeHtml(l.id)}">${escapeHtml(part(l.kind || l.id))}${l.id !== (l.kind || l.id) ? ` <span class="kind">${escapeHtml(l.id)}</span>` : ""}</td><td class="num">${count(l.tokens)}${l.tokens_full > l.tokens ? ` of ${count(l.tokens_full)}` : ""}</td><td class="status-${escapeHtml(l.status)}" title="${escapeHtml(l.status)}">${escapeHtml(STATUS[l.status] || l.status)}</td></tr>${l.reason ? `<tr><td colspan="3" class="reason">${escapeHtml(l.reason)}</td></tr>` : ""}`).join("");
}

// Only compactions that changed the tokens; the server's label if it sends one.
export function compactionLines(compactions) {
  return compactions
    .filter((c) => c.tokens_before == null || c.tokens_after == null || c.tokens_before !== c.tokens_after)
    .map((c) => c.label || `${c.action} at ${c.threshold}: ${count(c.tokens_before)} → ${count(c.tokens_after)} tokens`);
}

function renderCompactions(compactions) {
  const lines = compactionLines(compactions);
  $("compactions").classList.toggle("empty-state", !lines.length);
  const items = (lines.length ? lines : [EMPTY.compactions]).map((text) => {
    const li = document.createElement("li");
    li.textContent = text;
    return li;
  });
  $("compactions").replaceChildren(...items);
}

export function clearDashboard() {
  live.chat = null;
  live.seq++;
  clearTimeout(live.timer);
  setLive(false);
  $("budget-fill").style.width = "0";
  $("budget-text").textContent = "No pack yet. The prompt built for your next message will fill this bar.";
  $("current-context").textContent = "";
  $("strategy").textContent = "";
  renderTiers([], null);
  renderBreakdown(null);
  renderTurns([], null);
  renderUsage(null);
  renderPack(null);
  renderCompactions([]);
}

// "$0.0012", "$1.35", "$0.0012 + unpriced tokens", or "unknown (no price for …)".
function dollars(usage) {
  if (usage.dollars == null) return `unknown${usage.unpriced_models.length ? ` (no price for ${usage.unpriced_models.join(", ")})` : ""}`;
  const d = usage.dollars;
  const text = d === 0 ? "$0" : d < 0.01 ? `$${d.toFixed(4)}` : `$${d.toFixed(2)}`;
  return usage.price_known ? text : `${text} + ${count(usage.unpriced_tokens)} unpriced tokens`;
}

const saved = (d) => (d >= 0.01 ? `$${d.toFixed(2)}` : d >= 0.0001 ? `$${d.toFixed(4)}` : "< $0.0001");

// The chat's one prompt-cache figure: the cached tokens the model reported, else the expected reuse
// (what each prompt shared with the previous one), labelled which it is.
function cacheText(cache) {
  const words = cache && cache.hit_share != null ? cacheWords(cache.source) : null;
  if (!words) return ["nothing yet: no prompt has repeated the start of an earlier one", ""];
  const hits = cache.source === "provider" ? cache.cached_tokens : cache.expected_tokens;
  const of = `(${count(hits)} of ${count(cache.prompt_tokens)})`;
  const share = `${Math.round(100 * cache.hit_share)}% of prompt tokens`;
  if (cache.source === "expected") {
    return [`${share} could come from the cache ${of}, ${words.how}`, CACHE_EXPECTED];
  }
  const money = cache.saved_dollars > 0 ? ` · saved ${saved(cache.saved_dollars)}` : "";
  return [`${share} came from the cache ${of}, ${words.how}${money}`, CACHE_REPORTED];
}

const CACHE_EXPECTED = "The model reports no cached tokens, so this is what a prompt cache could serve: the tokens at the start of each prompt that repeat the prompt before it (the shared prefix).";
const CACHE_REPORTED = "The prompt tokens the model said it read from its prompt cache (cheaper, and faster to answer).";

function renderUsage(usage) {
  const rows = !usage || !usage.tokens
    ? [["", EMPTY.usage]]
    : [
        ["Tokens", `${count(usage.tokens)} in all: ${count(usage.prompt_tokens)} sent to the model (prompts) · ${count(usage.completion_tokens)} in its answers${usage.unrecorded_tokens ? ` · ${count(usage.unrecorded_tokens)} counted without a per-turn record` : ""}`],
        ["Cost", dollars(usage)],
        ["Prompt cache", cacheText(usage.cache)],
        ["Turns", `${count(usage.turns)}, with ${count(usage.model_calls)} model call${usage.model_calls === 1 ? "" : "s"}${usage.model_calls > usage.turns ? " (a tool call takes one more)" : ""}`],
        ["Models", usage.models.join(", ") || "—"],
        ["Updated", usage.last_updated ? new Date(usage.last_updated).toLocaleString() : "—"],
      ];
  $("usage").replaceChildren(...rows.flatMap(([term, value]) => {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = term;
    [dd.textContent, dd.title] = Array.isArray(value) ? value : [value, ""];
    if (term) return [dt, dd];
    dd.className = "empty-state";
    return [dd];
  }));
  $("usage-note").textContent = usage ? usage.notes.join(" ") : "";
}

export async function refreshMonth() {
  const usage = await api("/api/usage");
  const month = usage.month;
  const footer = $("month-usage");
  footer.textContent = `This month: ${count(month.tokens)} tokens · ${dollars(month)}`;
  const all = usage.all_time;
  footer.title = [`All time: ${count(all.tokens)} tokens · ${dollars(all)} · ${count(all.turns)} turns`, ...usage.notes].join("\n");
}
