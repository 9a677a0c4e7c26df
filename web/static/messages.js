/*
 * Mimikit message list: building messages, keeping them in time order, following the newest one
 * at the bottom, and putting older ones above without moving what the reader sees.
 * Shared through window.Mimikit.messages.
 */
'use strict';

(() => {
  const { $, h, parseDate, whenEl, usageText, notice, api } = window.Mimikit;
  const RECENT_LIMIT = 100;
  const NEAR_BOTTOM_PX = 48;
  const FOUND_HIGHLIGHT_MS = 2500;

  const state = {
    elements: new Map(), // id -> element
    records: new Map(), // id -> message as last shown
    signatures: new Map(), // id -> JSON of the last rendered version
    stick: true,
    autoTop: 0, // scrollTop after the last scroll to the bottom done by the page
    listeners: { added: [], recent: [] },
  };

  function buildMessage(m) {
    const role = ['user', 'assistant', 'system'].includes(m.role) ? m.role : 'system';
    const text = h('div', { class: 'msg-text' });
    if (role === 'user') text.textContent = m.text || '';
    else text.innerHTML = window.MimikitMarkdown.render(m.text || '');
    const meta = h('div', { class: 'msg-meta' }, whenEl(m.createdAt));
    const usage = role === 'assistant' ? usageText(m.usage, m.elapsedMs) : '';
    if (usage) meta.append(h('span', { class: 'msg-usage' }, usage));
    if (m.taskId) {
      meta.append(h('button', {
        type: 'button', class: 'link-button msg-task', onclick: () => window.Mimikit.tasks.open(m.taskId),
      }, 'view task'));
    }
    const el = h('article', { class: `msg ${role}`, 'data-id': m.id }, text, meta);
    const date = parseDate(m.createdAt);
    el.dataset.sort = String(date ? date.getTime() : Date.now());
    return el;
  }

  function insertSorted(el) {
    const list = $('#messages');
    const key = Number(el.dataset.sort);
    let after = list.lastElementChild;
    while (after && Number(after.dataset.sort) > key) after = after.previousElementSibling;
    if (after) after.after(el);
    else list.prepend(el);
  }

  /** Remember ``m`` as shown; false when it is already shown exactly as it is. */
  function remember(m) {
    const signature = JSON.stringify(m);
    if (state.signatures.get(m.id) === signature) return false;
    state.signatures.set(m.id, signature);
    state.records.set(m.id, m);
    return true;
  }

  /** Show a message (new or changed) in time order; ``live`` ones offer the jump button. */
  function add(m, { live = true } = {}) {
    if (!m || !m.id || !remember(m)) return;
    const el = buildMessage(m);
    const old = state.elements.get(m.id);
    if (old) old.replaceWith(el);
    else insertSorted(el);
    state.elements.set(m.id, el);
    $('#empty').hidden = true;
    if (!old) state.listeners.added.forEach((fn) => fn(m));
    if (state.stick) scrollToBottom();
    else if (live && !old) $('#jump').hidden = false;
  }

  /**
   * Put messages older than all shown ones (oldest first) above the list, skipping those
   * already shown, without moving what the reader sees. Returns how many were new.
   */
  function prependOlder(list) {
    const fresh = list.filter((m) => m && m.id && !state.elements.has(m.id));
    if (!fresh.length) return 0;
    fresh.forEach(remember);
    const scroller = $('#scroller');
    const fromBottom = scroller.scrollHeight - scroller.scrollTop;
    const built = fresh.map((m) => {
      const el = buildMessage(m);
      state.elements.set(m.id, el);
      return el;
    });
    $('#messages').prepend(...built);
    $('#empty').hidden = true;
    scroller.scrollTop = scroller.scrollHeight - fromBottom;
    return fresh.length;
  }

  /** The oldest shown message's time as the server wrote it, and how many share it. */
  function oldest() {
    const first = $('#messages').firstElementChild;
    const record = first && state.records.get(first.dataset.id);
    if (!record) return null;
    let sameTime = 0;
    for (const m of state.records.values()) if (m.createdAt === record.createdAt) sameTime += 1;
    return { createdAt: record.createdAt, sameTime };
  }

  async function loadRecent() {
    const data = await api(`/api/messages?limit=${RECENT_LIMIT}`);
    const list = data.messages || [];
    for (const m of list) add(m, { live: false });
    notice('');
    $('#empty').hidden = state.elements.size > 0;
    state.listeners.recent.forEach((fn) => fn(list.length < RECENT_LIMIT));
  }

  /** Scroll a shown message into the middle of the view and mark it for a moment. */
  function reveal(id) {
    const el = state.elements.get(id);
    if (!el) return false;
    state.stick = false;
    el.scrollIntoView({ block: 'center' });
    el.classList.add('found');
    setTimeout(() => el.classList.remove('found'), FOUND_HIGHLIGHT_MS);
    return true;
  }

  // ---- following the bottom -------------------------------------------------------------------

  function scrollToBottom() {
    const scroller = $('#scroller');
    scroller.scrollTop = scroller.scrollHeight;
    state.autoTop = scroller.scrollTop;
    $('#jump').hidden = true;
  }

  function onScroll() {
    const s = $('#scroller');
    if (s.scrollHeight - s.scrollTop - s.clientHeight < NEAR_BOTTOM_PX) {
      state.stick = true;
      $('#jump').hidden = true;
    } else if (s.scrollTop < state.autoTop - 4) {
      // Only a scroll up by the reader unsticks: the list growing or the question card
      // shrinking the view also moves the bottom away, and must not stop following it.
      state.stick = false;
    }
  }

  function follow() {
    state.stick = true;
    scrollToBottom();
  }

  function setup() {
    $('#scroller').addEventListener('scroll', onScroll, { passive: true });
    // The question card or a taller composer shrinks the list: keep the newest message in view.
    const keepBottom = new ResizeObserver(() => {
      if (state.stick) scrollToBottom();
    });
    keepBottom.observe($('#scroller'));
    keepBottom.observe($('#messages'));
    $('#jump').addEventListener('click', follow);
  }

  window.Mimikit.messages = {
    setup,
    add,
    prependOlder,
    oldest,
    loadRecent,
    reveal,
    follow,
    scrollToBottom,
    has: (id) => state.elements.has(id),
    count: () => state.elements.size,
    isStuck: () => state.stick,
    /** Call ``fn(message)`` for each message shown for the first time. */
    onAdded: (fn) => state.listeners.added.push(fn),
    /** Call ``fn(reachedStart)`` after each load of the newest messages. */
    onRecent: (fn) => state.listeners.recent.push(fn),
  };
})();
