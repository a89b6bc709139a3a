// The context dashboard: budget, seed 004's tiers 1–4 and the strategy in force, the chat's usage,
// layers, tokens per turn, the last pack and the compactions that changed something. Refreshed once
// a second while a turn runs (this page's, or one the server reports running), and the month's usage.

import { api } from "./api.js";
import { escapeHtml } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const COLORS = ["#3d6f8e", "#7a9e7e", "#c9962b", "#8e5b7a", "#b5523b", "#5b7f8e", "#9a8b5b", "#6b6b9e", "#4f8a5b", "#aa7755"];
const NUMBER = new Intl.NumberFormat();
export const count = (n) => NUMBER.format(n || 0);
const KINDS = { project: "Project", task: "Task", calendar: "Calendar", global: "Everything", api: "API session" };

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
  renderTurns(detail.turns || []);
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
    ? `${count(used)} of ${count(available)} tokens in the last pack (${Math.round(percent)}%)` + (health != null ? ` · budget health ${Math.round(100 * health)}%` : "")
    : "No pack yet.";
  $("current-context").textContent = currentContext(status.currentContext);
  renderTiers(status.tierBreakdown, snapshot);
  renderStrategy(status.strategy, status.pruningBand);
  renderBreakdown(snapshot ? snapshot.tier_breakdown : {});
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
  if (!Array.isArray(tiers)) {
    body.replaceChildren();
    $("tiers-note").textContent = snapshot ? "This server does not report tiers yet." : "No pack yet.";
    return;
  }
  $("tiers-note").textContent = tiers.some((t) => t.tokens) ? "" : "No pack yet.";
  body.replaceChildren(...tiers.map((tier) => {
    const row = document.createElement("tr");
    row.title = (tier.layers || []).join(", ");
    const share = Math.max(0, Math.min(100, Number(tier.percent) || 0));
    row.innerHTML = `<td>${escapeHtml(String(tier.tier))}</td><td>${escapeHtml(tier.name || "")}</td>`
      + `<td class="num">${count(tier.tokens)}</td><td class="num">${count(tier.items)}</td>`
      + `<td><span class="meter"><span style="width:${share}%;background:${COLORS[(tier.tier - 1) % COLORS.length]}"></span></span> ${share.toFixed(0)}%</td>`;
    return row;
  }));
}

function renderStrategy(strategy, band) {
  const out = $("strategy");
  if (!strategy) {
    out.textContent = band ? `Pruning band: ${band.name || JSON.stringify(band)}` : "Pruning band: none (no spending limit set)";
    return;
  }
  const parts = [`band ${strategy.band || "none"}`];
  if (strategy.historyMessages != null) parts.push(`history ${strategy.historyMessages} messages`);
  if (strategy.relatedItems != null) parts.push(`related ${strategy.relatedItems} items`);
  if (strategy.references) parts.push(`references ${strategy.references}`);
  out.textContent = `Strategy: ${parts.join(" · ")}${strategy.reason ? ` — ${strategy.reason}` : ""}`;
}

function renderBreakdown(breakdown) {
  const kinds = Object.entries(breakdown || {}).filter(([kind, v]) => kind !== "total" && v && v.tokens > 0);
  const total = kinds.reduce((sum, [, v]) => sum + v.tokens, 0) || 1;
  const bar = kinds.map(([kind, v], i) => `<span title="${escapeHtml(kind)}: ${count(v.tokens)}" style="width:${(100 * v.tokens) / total}%;background:${COLORS[i % COLORS.length]}"></span>`).join("");
  const legend = kinds.map(([kind, v], i) => `<span class="swatch" style="background:${COLORS[i % COLORS.length]}"></span><span>${escapeHtml(kind)}</span><span>${count(v.tokens)}</span>`).join("");
  $("breakdown").innerHTML = kinds.length ? `<div class="bar">${bar}</div><div class="legend">${legend}</div>` : `<p class="dim">nothing yet</p>`;
}

function renderTurns(turns) {
  const values = turns.map((t) => t.prompt_tokens || 0);
  const max = Math.max(1, ...values);
  const width = 300 / Math.max(values.length, 1);
  const cached = (t) => (t.cached_tokens ? ` (${count(t.cached_tokens)} cached)` : t.prefix_tokens ? ` (${count(t.prefix_tokens)} repeated)` : "");
  $("turns").innerHTML = values.map((v, i) => `<rect x="${i * width + 1}" y="${90 - (85 * v) / max}" width="${Math.max(width - 2, 1)}" height="${(85 * v) / max}" fill="${COLORS[0]}"><title>turn ${i + 1}: ${count(v)} prompt tokens${cached(turns[i])}</title></rect>`).join("");
}

function renderPack(pack) {
  const body = $("layers").querySelector("tbody");
  body.innerHTML = pack ? pack.layers.map((l) => `<tr><td>${escapeHtml(l.id)}</td><td>${count(l.tokens)}${l.tokens_full > l.tokens ? ` / ${count(l.tokens_full)}` : ""}</td><td class="status-${escapeHtml(l.status)}">${escapeHtml(l.status)}</td></tr>${l.reason ? `<tr><td colspan="3" class="reason">${escapeHtml(l.reason)}</td></tr>` : ""}`).join("") : "";
  $("pack-prefix").textContent = packPrefix(pack);
}

// Only compactions that changed the tokens; the server's label if it sends one.
export function compactionLines(compactions) {
  return compactions
    .filter((c) => c.tokens_before == null || c.tokens_after == null || c.tokens_before !== c.tokens_after)
    .map((c) => c.label || `${c.action} at ${c.threshold}: ${count(c.tokens_before)} → ${count(c.tokens_after)} tokens`);
}

function renderCompactions(compactions) {
  const lines = compactionLines(compactions);
  const items = (lines.length ? lines : ["none yet"]).map((text) => {
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
  $("budget-text").textContent = "No pack yet.";
  $("current-context").textContent = "";
  $("strategy").textContent = "";
  renderTiers([], null);
  $("tiers-note").textContent = "No pack yet.";
  renderBreakdown({});
  renderTurns([]);
  renderUsage(null);
  renderPack(null);
  renderCompactions([]);
}

// What the last pack repeats of the one before it: the part a provider's prompt cache can serve.
function packPrefix(pack) {
  if (!pack) return "";
  if (pack.prefix_tokens == null) return "No previous pack to compare with (the chat's first since the server started).";
  const share = pack.total_tokens ? Math.round((100 * pack.prefix_tokens) / pack.total_tokens) : 0;
  return `${count(pack.prefix_tokens)} of ${count(pack.total_tokens)} tokens (${share}%) repeat the previous pack: the expected cache hit.`;
}

// "$0.0012", "$1.35", "$0.0012 + unpriced tokens", or "unknown (no price for …)".
function dollars(usage) {
  if (usage.dollars == null) return `unknown${usage.unpriced_models.length ? ` (no price for ${usage.unpriced_models.join(", ")})` : ""}`;
  const d = usage.dollars;
  const text = d === 0 ? "$0" : d < 0.01 ? `$${d.toFixed(4)}` : `$${d.toFixed(2)}`;
  return usage.price_known ? text : `${text} + ${count(usage.unpriced_tokens)} unpriced tokens`;
}

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
  $("usage").replaceChildren(...rows.flatMap(([term, value]) => {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = term;
    dd.textContent = value;
    return [dt, dd];
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
