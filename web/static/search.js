/*
 * Search over the conversation (GET /api/messages/search, case-insensitive text, newest first)
 * and memory (GET /api/memory/search, BM25 over the memory files), in one dialog. A history hit
 * opens in the conversation, loading the messages in between when needed; one too far back is
 * shown in the dialog instead. Shared through window.Mimikit.search.
 */
'use strict';

(() => {
  const { $, h, whenEl, when, cut, showText, api } = window.Mimikit;
  const HISTORY_LIMIT = 30;
  const MEMORY_LIMIT = 10;
  const CONTEXT_CHARS = 70; // text shown on each side of a match
  const state = { seq: 0 };

  // ---- history hits ---------------------------------------------------------------------------

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }

  /** A one-line extract of ``text`` around the first match of ``query``, the match marked. */
  function snippet(text, query) {
    const flat = String(text || '').replace(/\s+/g, ' ').trim();
    const match = new RegExp(escapeRegExp(query), 'iu').exec(flat);
    if (!match) return [cut(flat, CONTEXT_CHARS * 2)];
    const start = Math.max(0, match.index - CONTEXT_CHARS);
    const end = Math.min(flat.length, match.index + match[0].length + CONTEXT_CHARS);
    return [start > 0 ? '…' : '', flat.slice(start, match.index), h('mark', {}, match[0]),
      flat.slice(match.index + match[0].length, end), end < flat.length ? '…' : ''];
  }

  function fullText(hit) {
    const body = h('div', { class: 'search-hit-full msg-text' });
    if (hit.role === 'user') body.textContent = hit.text;
    else body.innerHTML = window.MimikitMarkdown.render(hit.text);
    return body;
  }

  /** Open a hit in the conversation; one that cannot be shown there opens in place. */
  async function openHit(hit, item) {
    const note = item.querySelector('.search-hit-note');
    showText(note, 'Loading…');
    try {
      if (await window.Mimikit.history.reach(hit)) {
        showText(note, '');
        $('#search').close();
        return;
      }
      showText(note, `Too far back to show in the conversation; written ${when(hit.createdAt)}:`);
    } catch (err) {
      showText(note, `Could not load it in the conversation (${err.message}); here it is:`);
    }
    if (!item.querySelector('.search-hit-full')) item.append(fullText(hit));
  }

  function historyHit(hit, query) {
    const item = h('li', { class: 'search-hit', 'data-id': hit.id });
    item.append(
      h('button', { type: 'button', class: 'search-hit-open', onclick: () => openHit(hit, item) },
        h('span', { class: 'search-hit-meta' }, h('span', { class: `role role-${hit.role}` }, hit.role),
          whenEl(hit.createdAt)),
        h('span', { class: 'search-hit-text' }, snippet(hit.text, query))),
      h('p', { class: 'search-hit-note', hidden: true }));
    return item;
  }

  function renderHistory(data, query) {
    const hits = data.messages || [];
    $('#search-history').replaceChildren(...hits.map((hit) => historyHit(hit, query)));
    let note = hits.length ? '' : `No message contains “${query}”.`;
    if (data.truncated) note += ` Only the newest ${data.scanned} messages were searched.`;
    showText($('#search-history-note'), note.trim());
  }

  // ---- memory hits ----------------------------------------------------------------------------

  function memoryHit(hit) {
    return h('li', { class: 'memory-hit' },
      h('div', { class: 'memory-hit-head' }, h('span', { class: 'memory-source' }, hit.source),
        h('span', { class: 'memory-score', title: 'BM25 score' }, `score ${Number(hit.score).toFixed(2)}`)),
      h('div', { class: 'memory-hit-text' }, hit.content));
  }

  function renderMemory(data) {
    const hits = data.hits || [];
    $('#search-memory').replaceChildren(...hits.map(memoryHit));
    showText($('#search-memory-note'), hits.length ? '' : 'Nothing in memory matches.');
  }

  // ---- the dialog -----------------------------------------------------------------------------

  function settle(outcome, render, list, note) {
    if (outcome.status === 'fulfilled') render(outcome.value);
    else {
      $(list).replaceChildren();
      showText($(note), `Search failed: ${outcome.reason.message}`);
    }
  }

  async function run(query) {
    const seq = ++state.seq;
    const q = encodeURIComponent(query);
    $('#search-results').hidden = false;
    $('#search-form').setAttribute('aria-busy', 'true');
    const [history, memory] = await Promise.allSettled([
      api(`/api/messages/search?q=${q}&limit=${HISTORY_LIMIT}`),
      api(`/api/memory/search?q=${q}&limit=${MEMORY_LIMIT}`),
    ]);
    if (seq !== state.seq) return; // a newer search has started
    $('#search-form').removeAttribute('aria-busy');
    settle(history, (data) => renderHistory(data, query), '#search-history', '#search-history-note');
    settle(memory, renderMemory, '#search-memory', '#search-memory-note');
  }

  function onSubmit(event) {
    event.preventDefault();
    const query = $('#search-input').value.trim();
    showText($('#search-error'), query ? '' : 'Type the words to search for.');
    if (query) run(query);
  }

  function open() {
    const dialog = $('#search');
    if (!dialog.open) dialog.showModal();
    $('#search-input').select();
  }

  function setup() {
    $('#search-open').addEventListener('click', open);
    $('#search-close').addEventListener('click', () => $('#search').close());
    $('#search-form').addEventListener('submit', onSubmit);
    $('#search').addEventListener('click', (event) => {
      if (event.target === event.currentTarget) event.currentTarget.close(); // backdrop click
    });
  }

  window.Mimikit.search = { setup, open, run };
})();
