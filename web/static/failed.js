/*
 * Mimikit items the Teller gave up on (a message, an answer or a task result it could not
 * answer after its bounded tries): listed in the side panel with the reason, and each one's
 * system message in the chat, both with "Try again" and "Dismiss" buttons. Shared through
 * window.Mimikit.failed; refreshed on the `failed` live event.
 *
 * Stable hooks for browser tests:
 *   #failed                     panel section (hidden when none); .failed-item[data-id] with
 *                               .failed-reason, .failed-retry and .failed-dismiss buttons
 *   .msg.system[data-failed]    the system message of an item that gave up; while it waits for
 *                               a decision it has .failed-retry and .failed-dismiss buttons
 */
'use strict';

(() => {
  const { $, h, cut, showText, api } = window.Mimikit;
  const PREVIEW_CHARS = 80;
  const state = { failed: new Map() }; // id -> item that waits for a decision

  async function act(id, action, button) {
    button.disabled = true;
    try {
      await api(`/api/inbox/failed/${encodeURIComponent(id)}/${action}`, { method: 'POST' });
      showText($('#failed-error'), '');
    } catch (err) {
      showText($('#failed-error'), `Could not ${action === 'retry' ? 'try it again' : 'dismiss it'}: ${err.message}`);
    }
    refresh();
  }

  function buttons(id) {
    return h('span', { class: 'failed-actions' },
      h('button', { type: 'button', class: 'link-button failed-retry', onclick: (e) => act(id, 'retry', e.target) }, 'Try again'),
      h('button', { type: 'button', class: 'link-button failed-dismiss', onclick: (e) => act(id, 'dismiss', e.target) }, 'Dismiss'));
  }

  function renderPanel() {
    const items = [...state.failed.values()];
    $('#failed').hidden = items.length === 0;
    $('#failed-count').textContent = String(items.length);
    $('#failed-items').replaceChildren(...items.map((item) => h('li', {
      class: 'failed-item', 'data-id': item.id, 'data-kind': item.kind,
    }, h('span', { class: 'failed-preview' }, `“${cut(item.preview, PREVIEW_CHARS)}”`),
    h('span', { class: 'failed-reason' }, item.reason), buttons(item.id))));
  }

  /** Give the system message of an item that gave up its buttons while it waits. */
  function decorate(el, id) {
    el.dataset.failed = id;
    const old = el.querySelector('.failed-actions');
    if (old) old.remove();
    if (state.failed.has(id)) el.querySelector('.msg-meta').append(buttons(id));
  }

  function decorateAll() {
    document.querySelectorAll('.msg.system[data-failed]').forEach((el) => decorate(el, el.dataset.failed));
  }

  function onAdded(message) {
    if (!message || !message.failedItem) return;
    const el = document.querySelector(`.msg.system[data-id="${CSS.escape(message.id)}"]`);
    if (el) decorate(el, message.failedItem);
  }

  async function refresh() {
    let data;
    try {
      data = await api('/api/inbox/failed');
    } catch (err) {
      return; // the next event or resync tries again; the chat itself is unaffected
    }
    state.failed = new Map((data.failed || []).map((item) => [item.id, item]));
    renderPanel();
    decorateAll();
  }

  window.Mimikit.failed = { refresh, onAdded };
})();
