/*
 * Small, safe markdown renderer for chat messages.
 *
 * Safety comes from the order of work: the whole text is HTML-escaped FIRST, and only then are
 * markdown constructs turned into a fixed set of tags (p, br, h1-h6, strong, em, del, code, pre,
 * ul, ol, li, blockquote, hr, table, a). No attribute is ever copied from the input except a link
 * href, and only when it starts with http://, https:// or mailto:. So `<script>` or
 * `<img src=x onerror=...>` in a message shows as text.
 *
 * API: MimikitMarkdown.render(text) -> HTML string; MimikitMarkdown.escapeHtml(text) -> string.
 */
(function (root) {
  'use strict';

  const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  const SAFE_HREF = /^(https?:\/\/|mailto:)/i;
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]{0,30})/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}&gt;\s?/;
  const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const TABLE_SEPARATOR = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;
  // Placeholders keep finished HTML (code spans, links) away from later inline rules.
  const TOKEN = /\u0000(\d+)\u0000/g;

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
  }

  /** Inline rules on already-escaped text: code, links, autolinks, emphasis. */
  function renderInline(text) {
    const stash = [];
    const keep = (html) => `\u0000${stash.push(html) - 1}\u0000`;
    let out = text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g,
      (_, ticks, code) => keep(`<code>${code.trim() || code}</code>`));
    out = out.replace(/\[([^\]\n]+)\]\(\s*([^()\s]+(?:\([^()\s]*\)[^()\s]*)*)\s*\)/g,
      (match, label, href) => (SAFE_HREF.test(href) ? keep(link(href, emphasis(label))) : match));
    out = out.replace(/\b(?:https?:\/\/|mailto:)[^\s\u0000]+/g, (match) => {
      const cut = match.search(/&(?:lt|gt|quot|#39);/);
      let url = cut >= 0 ? match.slice(0, cut) : match;
      const rest = match.slice(url.length);
      const trail = /[.,;:!?)\]]+$/.exec(url);
      const tail = trail ? trail[0] : '';
      url = url.slice(0, url.length - tail.length);
      if (!SAFE_HREF.test(url) || /^(https?:\/\/|mailto:)$/i.test(url)) return match;
      return keep(link(url, url)) + tail + rest;
    });
    out = emphasis(out).replace(/\n/g, '<br>');
    const restore = (s) => s.replace(TOKEN, (_, i) => restore(stash[Number(i)]));
    return restore(out);
  }

  function link(href, label) {
    return `<a href="${href}" target="_blank" rel="noopener noreferrer">${label}</a>`;
  }

  function emphasis(text) {
    return text
      .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
      .replace(/(^|[^*\w])\*([^\s*](?:[^*\n]*[^\s*])?)\*(?!\*)/g, '$1<em>$2</em>')
      .replace(/(^|[^\w])_([^\s_](?:[^_\n]*[^\s_])?)_(?!\w)/g, '$1<em>$2</em>')
      .replace(/~~(?=\S)([^~\n]*?\S)~~/g, '<del>$1</del>');
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
      LIST_ITEM.test(line);
  }

  function parseFence(lines, i) {
    const [, marker, lang] = FENCE.exec(lines[i]);
    const body = [];
    let j = i + 1;
    while (j < lines.length && !new RegExp(`^ {0,3}${marker[0]}{${marker.length},}\\s*$`).test(lines[j])) {
      body.push(lines[j]);
      j += 1;
    }
    const cls = lang ? ` class="language-${lang.replace(/[^\w+-]/g, '')}"` : '';
    return [`<pre><code${cls}>${body.join('\n')}</code></pre>`, j + 1];
  }

  function parseQuote(lines, i) {
    const inner = [];
    let j = i;
    while (j < lines.length && QUOTE.test(lines[j])) {
      inner.push(lines[j].replace(QUOTE, ''));
      j += 1;
    }
    return [`<blockquote>${renderBlocks(inner)}</blockquote>`, j];
  }

  function parseList(lines, i) {
    const items = [];
    let j = i;
    while (j < lines.length) {
      const m = LIST_ITEM.exec(lines[j]);
      if (m) {
        items.push({ indent: m[1].length, ordered: /\d/.test(m[2]), start: parseInt(m[2], 10), text: m[3] });
      } else if (lines[j].trim() === '') {
        if (!(j + 1 < lines.length && LIST_ITEM.test(lines[j + 1]))) break;
      } else if (/^\s+\S/.test(lines[j])) {
        items[items.length - 1].text += `\n${lines[j].trim()}`;
      } else {
        break;
      }
      j += 1;
    }
    return [buildList(items), j];
  }

  function buildList(items) {
    let html = '';
    const stack = [];
    for (const item of items) {
      const tag = item.ordered ? 'ol' : 'ul';
      while (stack.length && item.indent < stack[stack.length - 1].indent) {
        html += `</li></${stack.pop().tag}>`;
      }
      const top = stack[stack.length - 1];
      if (!top || item.indent > top.indent) {
        const start = item.ordered && item.start !== 1 ? ` start="${item.start}"` : '';
        html += `<${tag}${start}>`;
        stack.push({ indent: item.indent, tag });
      } else {
        html += '</li>';
        if (top.tag !== tag) {
          html += `</${top.tag}><${tag}>`;
          top.tag = tag;
        }
      }
      const text = item.text.replace(/^\[( |x|X)\]\s+/, (_, c) => (c === ' ' ? '\u2610 ' : '\u2611 '));
      html += `<li>${renderInline(text)}`;
    }
    while (stack.length) html += `</li></${stack.pop().tag}>`;
    return html;
  }

  function splitRow(line) {
    return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
  }

  function parseTable(lines, i) {
    const head = splitRow(lines[i]);
    const rows = [];
    let j = i + 2;
    while (j < lines.length && lines[j].includes('|') && lines[j].trim() !== '') {
      rows.push(splitRow(lines[j]));
      j += 1;
    }
    const cells = (row, tag) => head.map((_, k) => `<${tag}>${renderInline(row[k] || '')}</${tag}>`).join('');
    const body = rows.map((row) => `<tr>${cells(row, 'td')}</tr>`).join('');
    return [`<table><thead><tr>${cells(head, 'th')}</tr></thead><tbody>${body}</tbody></table>`, j];
  }

  function isTableStart(lines, i) {
    return lines[i].includes('|') && i + 1 < lines.length && lines[i + 1].includes('-') &&
      TABLE_SEPARATOR.test(lines[i + 1]);
  }

  function parseParagraph(lines, i) {
    const para = [lines[i]];
    let j = i + 1;
    while (j < lines.length && lines[j].trim() !== '' && !startsBlock(lines[j]) && !isTableStart(lines, j)) {
      para.push(lines[j]);
      j += 1;
    }
    return [`<p>${renderInline(para.join('\n').trim())}</p>`, j];
  }

  /** Block structure over escaped lines. */
  function renderBlocks(lines) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let step = null;
      if (line.trim() === '') {
        i += 1;
        continue;
      }
      const heading = HEADING.exec(line);
      if (FENCE.test(line)) step = parseFence(lines, i);
      else if (heading) step = [`<h${heading[1].length}>${renderInline(heading[2])}</h${heading[1].length}>`, i + 1];
      else if (RULE.test(line)) step = ['<hr>', i + 1];
      else if (QUOTE.test(line)) step = parseQuote(lines, i);
      else if (LIST_ITEM.test(line)) step = parseList(lines, i);
      else if (isTableStart(lines, i)) step = parseTable(lines, i);
      else step = parseParagraph(lines, i);
      out.push(step[0]);
      i = step[1];
    }
    return out.join('\n');
  }

  /**
   * Render markdown text as safe HTML.
   * @param {string} text - untrusted markdown
   * @returns {string} HTML built only from escaped text and a fixed set of tags
   */
  function render(text) {
    const clean = String(text == null ? '' : text).replace(/\r\n?/g, '\n').replace(/\u0000/g, '\uFFFD');
    return renderBlocks(escapeHtml(clean).split('\n'));
  }

  const api = { render, escapeHtml };
  if (typeof module !== 'undefined' && module.exports) module.exports = api;
  root.MimikitMarkdown = api;
})(typeof window !== 'undefined' ? window : globalThis);
