/*
 * Older messages: scrolling to the top of the list loads the page of messages before the oldest
 * one shown, until the beginning of the conversation; a search hit further back is loaded with
 * everything between it and the list. Shared through window.Mimikit.history.
 *
 * GET /api/messages?before=T is inclusive: it also returns the messages at time T itself, among
 * them those already shown. So a page asks for PAGE_SIZE more than the number shown at T; the
 * answer's newest messages are then exactly those already shown (the server orders messages
 * of equal time the same way every time), and none is skipped or shown twice.
 */
'use strict';

(() => {
  const { $, notice, api } = window.Mimikit;
  const PAGE_SIZE = 100;
  const MAX_LIMIT = 1000; // the API's bound for `limit`
  const LOAD_WITHIN_PX = 240; // start loading this close to the top

  const state = { ready: false, busy: null, atStart: false };
  const messages = () => window.Mimikit.messages;

  function showStart() {
    $('#history-start').hidden = !state.atStart || messages().count() === 0;
  }

  function setAtStart() {
    state.atStart = true;
    showStart();
  }

  function nearTop() {
    const scroller = $('#scroller');
    const overflows = scroller.scrollHeight > scroller.clientHeight + 1;
    return !overflows || scroller.scrollTop < LOAD_WITHIN_PX;
  }

  /** Run ``work`` when no other load runs; the list changes in one place at a time. */
  function exclusive(work) {
    const run = (state.busy || Promise.resolve()).then(work);
    const settled = run.catch(() => {}).finally(() => {
      if (state.busy === settled) state.busy = null;
    });
    state.busy = settled;
    return run;
  }

  async function loadPage() {
    const oldest = messages().oldest();
    if (!oldest) {
      setAtStart();
      return;
    }
    const limit = Math.min(PAGE_SIZE + oldest.sameTime, MAX_LIMIT);
    const before = encodeURIComponent(oldest.createdAt);
    const data = await api(`/api/messages?limit=${limit}&before=${before}`);
    const list = data.messages || [];
    // Marker first: putting older messages above keeps the view on what the reader sees.
    if (list.length < limit) setAtStart();
    const added = messages().prependOlder(list);
    if (!added && !state.atStart) {
      state.atStart = true; // paging by time cannot get past this many equal times
      notice(`Older messages could not be loaded: more than ${MAX_LIMIT} share one time.`);
    }
  }

  /** Load the page before the oldest shown message, and more while the top stays in view. */
  function loadOlder() {
    if (!state.ready || state.atStart || state.busy) return state.busy;
    $('#history-loading').hidden = false;
    return exclusive(loadPage)
      .catch((err) => notice(`Could not load older messages: ${err.message}`))
      .finally(() => {
        $('#history-loading').hidden = true;
        if (!state.atStart && nearTop()) requestAnimationFrame(loadOlder);
      });
  }

  /**
   * Show the message ``hit`` in the list: load it and everything between it and the oldest
   * shown message when that is at most MAX_LIMIT messages. False when it cannot be shown there.
   */
  function reach(hit) {
    return exclusive(async () => {
      if (messages().has(hit.id)) return messages().reveal(hit.id);
      const oldest = messages().oldest();
      if (!oldest) return false;
      const range = `after=${encodeURIComponent(hit.createdAt)}&before=${encodeURIComponent(oldest.createdAt)}`;
      const data = await api(`/api/messages?${range}&limit=${MAX_LIMIT}`);
      const list = data.messages || [];
      if (!list.some((m) => m.id === hit.id)) return false;
      messages().prependOlder(list);
      return messages().reveal(hit.id);
    });
  }

  function onRecent(reachedStart) {
    state.ready = true;
    if (reachedStart) setAtStart();
    else if (nearTop()) loadOlder();
  }

  function onScroll() {
    if ($('#scroller').scrollTop < LOAD_WITHIN_PX) loadOlder();
  }

  function setup() {
    messages().onRecent(onRecent);
    messages().onAdded(showStart);
    $('#scroller').addEventListener('scroll', onScroll, { passive: true });
  }

  window.Mimikit.history = {
    setup,
    loadOlder,
    reach,
  };
})();
