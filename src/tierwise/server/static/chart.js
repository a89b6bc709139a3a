// The dashboard's "Tokens per turn" chart: a stacked bar per turn (prompt tokens the cache served or
// could serve, the rest of the prompt, the answer) over a token axis with gridlines, each bar's total
// above it, the turn's number below, a title per bar with every figure, and a legend.

const SVG = "http://www.w3.org/2000/svg";
const NUMBER = new Intl.NumberFormat();
const count = (n) => NUMBER.format(n || 0);
const W = 320, H = 172, LEFT = 38, RIGHT = 6, TOP = 16, BOTTOM = 20;
export const PARTS_COLORS = { cache: "#7a9e7e", prompt: "#3d6f8e", answer: "#c9962b" };

// A round step for about four gridlines: 1, 2 or 5 times a power of ten.
function step(max) {
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) || power * 10;
}

const tick = (v, s) => (v && s >= 1000 ? `${v / 1000}k` : count(v));

function node(tag, attributes, text) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes || {})) element.setAttribute(name, value);
  if (text != null) element.textContent = text;
  return element;
}

// What part of a turn's prompt the cache served (source "provider") or could serve ("expected").
function cachedPart(turn, source) {
  const prompt = turn.prompt_tokens || 0;
  const part = source === "provider" ? turn.cached_tokens : source === "expected" ? turn.prefix_tokens : 0;
  return Math.max(0, Math.min(prompt, part || 0));
}

// Words for the cache part: the same source as the chat's one cache figure.
export function cacheWords(source) {
  if (source === "provider") return { part: "read from the cache", how: "reported by the model" };
  if (source === "expected") return { part: "repeated from the previous prompt", how: "expected, from the shared prefix" };
  return null;
}

function barTitle(turn, i, source) {
  const prompt = turn.prompt_tokens || 0;
  const cached = cachedPart(turn, source);
  const words = cacheWords(source);
  const split = words && cached ? ` (${count(cached)} ${words.part}, ${words.how}; ${count(prompt - cached)} new)` : "";
  const calls = turn.steps > 1 ? ` · ${turn.steps} calls to the model (each tool call takes one more)` : "";
  return `Turn ${i + 1}: ${count(prompt)} sent to the model${split} + ${count(turn.completion_tokens)} in the answer = ${count(prompt + (turn.completion_tokens || 0))} tokens${calls}`;
}

// Draws `turns` (the context route's per-turn usage) into the <svg> `svg` and its legend into `legend`.
export function renderTurnChart(svg, legend, turns, source) {
  const totals = turns.map((t) => (t.prompt_tokens || 0) + (t.completion_tokens || 0));
  svg.replaceChildren();
  legend.replaceChildren();
  svg.toggleAttribute("hidden", !turns.length);  // an SVG element has no .hidden
  legend.hidden = !turns.length;
  if (!turns.length) return;
  const s = step(Math.max(1, ...totals));
  const top = Math.max(s, Math.ceil(Math.max(1, ...totals) / s) * s);
  const plot = H - TOP - BOTTOM;
  const y = (v) => TOP + plot - (plot * v) / top;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("aria-label", `Tokens per turn, ${turns.length} turn${turns.length === 1 ? "" : "s"}: ${totals.map(count).join(", ")}`);
  const axis = node("g", { class: "axis" });
  for (let v = 0; v <= top; v += s) {
    axis.append(node("line", { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v), class: v ? "grid" : "base" }));
    axis.append(node("text", { x: LEFT - 5, y: y(v) + 3.5, class: "tick", "text-anchor": "end" }, tick(v, s)));
  }
  axis.append(node("text", { x: 2, y: 9, class: "unit" }, "tokens"));
  axis.append(node("text", { x: W - RIGHT, y: H - 2, class: "unit", "text-anchor": "end" }, "turn"));
  svg.append(axis);
  const slot = (W - LEFT - RIGHT) / turns.length;
  const width = Math.max(2, Math.min(40, slot * 0.7));
  const every = Math.ceil(16 / slot);  // turn numbers that do not collide
  turns.forEach((turn, i) => {
    const x = LEFT + slot * i + (slot - width) / 2;
    const cached = cachedPart(turn, source);
    const parts = [["cache", cached], ["prompt", (turn.prompt_tokens || 0) - cached], ["answer", turn.completion_tokens || 0]];
    const bar = node("g", { class: "bar", tabindex: "0" });
    bar.append(node("title", {}, barTitle(turn, i, source)));
    let base = 0;
    for (const [part, value] of parts) {
      if (value <= 0) continue;
      bar.append(node("rect", { x, width, y: y(base + value), height: y(base) - y(base + value), fill: PARTS_COLORS[part], class: part }));
      base += value;
    }
    svg.append(bar);
    const last = i === turns.length - 1;
    if (slot >= 34 || last) {
      svg.append(node("text", { x: x + width / 2, y: y(totals[i]) - 3, class: "value", "text-anchor": last && slot < 34 ? "end" : "middle" }, count(totals[i])));
    }
    if (i % every === 0 || last) {
      svg.append(node("text", { x: x + width / 2, y: H - 6, class: "turn-label", "text-anchor": "middle" }, String(i + 1)));
    }
  });
  const words = cacheWords(source);
  const entries = [
    ...(words && turns.some((t) => cachedPart(t, source)) ? [["cache", `prompt tokens ${words.part} (${words.how})`]] : []),
    ["prompt", words ? "other prompt tokens sent to the model" : "prompt tokens sent to the model"],
    ["answer", "tokens in the answer"],
  ];
  for (const [part, text] of entries) {
    const item = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = PARTS_COLORS[part];
    item.append(swatch, text);
    legend.append(item);
  }
}
