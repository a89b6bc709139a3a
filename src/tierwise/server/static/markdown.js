// A small, safe markdown for answers: every character is HTML-escaped first, then only the tags made
// here are added — paragraphs, headings, lists (nested by indent, ordered, checklists), quotes,
// fenced code, inline code, **strong**, *emphasis*, ~~strike~~ and links with an http(s)/mailto href.

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

const SAFE_HREF = /^(?:https?:\/\/|mailto:|\/(?!\/)|#)/i;

// One line of text (already escaped inside): code spans are set aside first so nothing in them is read.
export function inline(text) {
  const codes = [];
  let out = escapeHtml(text).replace(/`([^`]+)`/g, (_, code) => {
    codes.push(`<code>${code}</code>`);
    return `\u0000${codes.length - 1}\u0000`;
  });
  out = out.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label, href) => {
    const raw = href.replace(/&amp;/g, "&");
    return SAFE_HREF.test(raw) ? `<a href="${href}" target="_blank" rel="noopener noreferrer">${label}</a>` : whole;
  });
  out = out
    .replace(/\*\*(?=\S)(.+?)(?<=\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)(.+?)(?<=\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/(^|[^*\w])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?!\*)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)(.+?)(?<=\S)~~/g, "<del>$1</del>");
  return out.replace(/\u0000(\d+)\u0000/g, (_, i) => codes[Number(i)]);
}

const LIST = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
const CHECK = /^\[([ xX])\]\s+(.*)$/;

export function markdown(text) {
  const out = [];
  const lists = [];  // open lists: {tag, indent}
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    paragraph = [];
  };
  const closeLists = (indent = -1) => {
    while (lists.length && lists[lists.length - 1].indent > indent) out.push(`</li></${lists.pop().tag}>`);
  };
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      flush(); closeLists();
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const item = line.match(LIST);
    if (item) {
      flush();
      const indent = item[1].replace(/\t/g, "  ").length;
      const tag = /\d/.test(item[2]) ? "ol" : "ul";
      const top = lists[lists.length - 1];
      if (top && indent < top.indent) closeLists(indent);
      const open = lists[lists.length - 1];
      if (!open || indent > open.indent) { out.push(`<${tag}>`); lists.push({ tag, indent }); }
      else if (open.tag !== tag) { out.push(`</li></${lists.pop().tag}><${tag}>`); lists.push({ tag, indent }); }
      else out.push("</li>");
      const check = tag === "ul" && item[3].match(CHECK);
      if (check) {
        const done = check[1] !== " ";
        out.push(`<li class="check${done ? " done" : ""}"><input type="checkbox" disabled${done ? " checked" : ""} aria-label="${done ? "done" : "not done"}"> ${inline(check[2])}`);
      } else out.push(`<li>${inline(item[3])}`);
      continue;
    }
    if (!line.trim()) { flush(); closeLists(); continue; }
    if (lists.length && /^\s+\S/.test(line)) { out.push(`<br>${inline(line.trim())}`); continue; }
    closeLists();
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) { flush(); out.push(`<h4>${inline(heading[2])}</h4>`); continue; }
    const quote = line.match(/^>\s?(.*)$/);
    if (quote) { flush(); out.push(`<blockquote>${inline(quote[1])}</blockquote>`); continue; }
    if (/^\s*(?:---+|\*\*\*+)\s*$/.test(line)) { flush(); out.push("<hr>"); continue; }
    paragraph.push(line);
  }
  flush(); closeLists();
  return out.join("");
}
