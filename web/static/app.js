/*
 * Mimikit chat page: messages, composer, pending question, task panel, live updates over SSE.
 *
 * Stable hooks for browser tests:
 *   #status                          status bar; #status-conn, #status-redis, #status-workers,
 *                                    #status-llm pills carry data-state="ok|warn|down|unknown"
 *   #llm-banner                      shown when no LLM is configured
 *   #messages                        message list (role="log"); children .msg.user | .msg.assistant
 *                                    | .msg.system with data-id, .msg-text (rendered text) and
 *                                    .msg-meta (time, tokens, elapsed)
 *   #thinking                        "thinking…" indicator; has the hidden attribute when idle
 *   #input, #send, #input-error      composer textarea, send button, inline error; #counter
 *   #question                        pending question card (hidden when none); .question-option
 *                                    buttons, #question-answer input, #question-send, #question-expiry
 *   #tasks                           task panel; .task[data-id][data-status] items with .task-open
 *                                    and .task-cancel buttons
 *   #task-detail                     task detail dialog (#task-detail-body)
 *   #token-dialog, #token-input      API token prompt shown after a 401
 */
'use strict';

(() => {
  const TOKEN_KEY = 'mimikitToken';
  const MAX_INPUT_CHARS = 32768;
  const COUNTER_FROM_CHARS = 30000;
  const MESSAGE_LOAD_LIMIT = 100;
  const TASK_REFRESH_MS = 10000;
  const STATUS_REFRESH_MS = 15000;
  const IDLE_GRACE_MS = 8000; // an idle status this soon after sending may predate the wake-up
  const AWAIT_GIVE_UP_MS = 600000;
  const RECENT_TASKS_SHOWN = 12;
  const PROMPT_CUT_CHARS = 90;
  const BUSY_STATES = new Set(['queued', 'running']);
  const CANCELABLE = new Set(['queued', 'running', 'trigger', 'deferred']);
  const TASK_GROUPS = [
    { key: 'running', label: 'Running', statuses: ['running'], empty: 'Nothing running' },
    { key: 'queued', label: 'Queued', statuses: ['queued', 'deferred'], empty: 'Queue is empty' },
    { key: 'triggers', label: 'Triggers', statuses: ['trigger'], empty: 'No triggers' },
    { key: 'recent', label: 'Recent', statuses: ['done', 'failed', 'canceled'], empty: 'Nothing finished yet' },
  ];

  const $ = (sel) => document.querySelector(sel);
  const numberFormat = new Intl.NumberFormat();
  const state = {
    messages: new Map(), // id -> element
    signatures: new Map(), // id -> JSON of the last rendered version
    tasks: new Map(), // id -> TaskSummary
    question: null,
    tellerBusy: false,
    statusAt: 0, // when the last status arrived (ms)
    awaiting: null, // {since, sawBusy} after the user sent something
    stick: true,
    sending: false,
    es: null,
    sseFailed: false,
    reconnectDelay: 1000,
    detailId: null,
    tokenPrompt: null,
    tokenDeclined: false,
  };

  // ---- small helpers --------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'text') el.textContent = value;
      else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? '' : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child !== null && child !== undefined && child !== false) el.append(child);
    }
    return el;
  }

  function parseDate(value) {
    const date = value ? new Date(value) : null;
    return date && !Number.isNaN(date.getTime()) ? date : null;
  }

  function clock(date, seconds = false) {
    const opts = { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
    if (seconds) opts.second = '2-digit';
    return date.toLocaleTimeString([], opts);
  }

  function timeEl(value, seconds = false) {
    const date = parseDate(value);
    if (!date) return null;
    return h('time', { datetime: date.toISOString(), title: date.toLocaleString() }, clock(date, seconds));
  }

  function when(value) {
    const date = parseDate(value);
    if (!date) return '';
    const sameDay = date.toDateString() === new Date().toDateString();
    return sameDay ? clock(date) : date.toLocaleString([], {
      month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
    });
  }

  function duration(ms) {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    const minutes = Math.floor(ms / 60000);
    return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
  }

  function usageText(usage, elapsedMs) {
    const parts = [];
    if (usage && typeof usage.totalTokens === 'number') {
      parts.push(`${numberFormat.format(usage.totalTokens)} tokens`);
    }
    if (typeof elapsedMs === 'number') parts.push(duration(elapsedMs));
    return parts.join(' · ');
  }

  function cut(text, max) {
    const flat = String(text || '').replace(/\s+/g, ' ').trim();
    return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  }

  function pretty(value) {
    if (typeof value === 'string') {
      try {
        return JSON.stringify(JSON.parse(value), null, 2);
      } catch (err) {
        return value; // not JSON: show as written
      }
    }
    return JSON.stringify(value, null, 2);
  }

  function showText(el, text) {
    el.textContent = text || '';
    el.hidden = !text;
  }

  function notice(text) {
    showText($('#notice'), text);
  }

  // ---- API and token --------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(message, status, data = null) {
      super(message);
      this.status = status;
      this.data = data;
    }
  }

  function getToken() {
    try {
      return localStorage.getItem(TOKEN_KEY) || '';
    } catch (err) {
      return ''; // storage blocked: behave as if no token is set
    }
  }

  function setToken(token) {
    try {
      localStorage.setItem(TOKEN_KEY, token);
    } catch (err) {
      notice(`Could not store the token in this browser: ${err.message}`);
    }
  }

  function askToken(rejected) {
    if (state.tokenDeclined) return Promise.reject(new ApiError('An API token is required.', 401));
    if (state.tokenPrompt) return state.tokenPrompt;
    const dialog = $('#token-dialog');
    const input = $('#token-input');
    state.tokenPrompt = new Promise((resolve, reject) => {
      $('#token-error').hidden = !rejected;
      input.value = '';
      dialog.returnValue = '';
      dialog.addEventListener('close', () => {
        state.tokenPrompt = null;
        const token = dialog.returnValue === 'ok' ? input.value.trim() : '';
        if (!token) {
          state.tokenDeclined = true;
          $('#auth-button').hidden = false;
          reject(new ApiError('An API token is required: use "Enter token" in the status bar.', 401));
          return;
        }
        setToken(token);
        $('#auth-button').hidden = true;
        connectEvents();
        resolve();
      }, { once: true });
      dialog.showModal();
    });
    return state.tokenPrompt;
  }

  /** fetch() a JSON API path with the stored token; on 401 ask for the token and retry. */
  async function api(path, { method = 'GET', body } = {}) {
    for (let attempt = 0; ; attempt += 1) {
      const headers = { Accept: 'application/json' };
      const token = getToken();
      if (token) headers.Authorization = `Bearer ${token}`;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      let res;
      try {
        res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      } catch (err) {
        throw new ApiError(`Cannot reach the Mimikit server (${err.message}).`, 0);
      }
      if (res.status === 401 && attempt < 3) {
        await askToken(attempt > 0 || Boolean(token));
        continue;
      }
      let data = null;
      try {
        data = await res.json();
      } catch (err) {
        data = null; // empty or non-JSON body: the status code says enough
      }
      if (!res.ok) {
        const reason = (data && (data.error || data.message)) || `HTTP ${res.status}`;
        throw new ApiError(String(reason), res.status, data);
      }
      return data || {};
    }
  }

  // ---- status bar -----------------------------------------------------------------------------

  function setPill(id, pillState, text, title) {
    const pill = $(id);
    pill.dataset.state = pillState;
    pill.querySelector('.pill-text').textContent = text;
    pill.title = title || '';
  }

  function renderStatus(status) {
    if (!status || typeof status !== 'object') return;
    const redis = status.redis || {};
    const redisState = redis.ok === true ? 'ok' : redis.ok === false ? 'down' : 'unknown';
    setPill('#status-redis', redisState, redis.ok === false ? 'Redis down' : 'Redis',
      [redis.url, redis.error].filter(Boolean).join(' — '));
    renderWorkers(status.workers, status.queues);
    const llm = status.llm || {};
    if (llm.configured === true) {
      setPill('#status-llm', 'ok', llm.model ? `LLM · ${llm.model}` : 'LLM', llm.baseUrl || '');
    } else if (llm.configured === false) {
      setPill('#status-llm', 'down', 'No LLM', llm.error || 'set MIMIKIT_LLM_BASE_URL');
    }
    $('#llm-banner').hidden = llm.configured !== false;
    // The banner already says what is missing; add the server's words only when they say more.
    const detail = llm.error && !/no llm is configured/i.test(llm.error) ? llm.error : '';
    showText($('#llm-banner-detail'), detail);
    const teller = status.teller || {};
    state.statusAt = Date.now();
    state.tellerBusy = BUSY_STATES.has(teller.state);
    if (state.tellerBusy && state.awaiting) state.awaiting.sawBusy = true;
    updateThinking();
    if ('pendingQuestion' in status) applyStatusQuestion(status.pendingQuestion);
  }

  function renderWorkers(workers, queues) {
    const list = Array.isArray(workers) ? workers : [];
    const count = typeof workers === 'number' ? workers : list.length;
    const lines = list.map((w) => {
      const names = Array.isArray(w.queues) ? w.queues.join(', ') : w.queues || '';
      return `${w.name || 'worker'}${names ? ` (${names})` : ''}${w.active ? ` · ${w.active} active` : ''}`;
    });
    if (queues && typeof queues === 'object') {
      lines.push(`queued: ${Object.entries(queues).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    }
    setPill('#status-workers', count > 0 ? 'ok' : 'warn', `${count} worker${count === 1 ? '' : 's'}`,
      lines.join('\n'));
  }

  function applyStatusQuestion(pending) {
    if (pending === null || pending === false) setQuestion(null);
    else if (pending && typeof pending === 'object' && pending.question) setQuestion(pending);
    else if (pending === true && !state.question) refreshQuestion();
  }

  async function refreshStatus() {
    try {
      renderStatus(await api('/api/status'));
    } catch (err) {
      if (err.data && typeof err.data === 'object' && 'redis' in err.data) {
        renderStatus(err.data); // an unhealthy instance still describes itself
        return;
      }
      setPill('#status-redis', 'unknown', 'Redis', err.message);
      if (err.status === 0) setPill('#status-conn', 'down', 'offline', err.message);
    }
  }

  // ---- messages -------------------------------------------------------------------------------

  function buildMessage(m) {
    const role = ['user', 'assistant', 'system'].includes(m.role) ? m.role : 'system';
    const text = h('div', { class: 'msg-text' });
    if (role === 'user') text.textContent = m.text || '';
    else text.innerHTML = window.MimikitMarkdown.render(m.text || '');
    const meta = h('div', { class: 'msg-meta' }, timeEl(m.createdAt));
    const usage = role === 'assistant' ? usageText(m.usage, m.elapsedMs) : '';
    if (usage) meta.append(h('span', { class: 'msg-usage' }, usage));
    if (m.taskId) {
      meta.append(h('button', {
        type: 'button', class: 'link-button msg-task', onclick: () => openTask(m.taskId),
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

  function addMessage(m, { live = true } = {}) {
    if (!m || !m.id) return;
    const signature = JSON.stringify(m);
    if (state.signatures.get(m.id) === signature) return; // already shown as is
    state.signatures.set(m.id, signature);
    const el = buildMessage(m);
    const old = state.messages.get(m.id);
    if (old) old.replaceWith(el);
    else insertSorted(el);
    state.messages.set(m.id, el);
    $('#empty').hidden = true;
    if (!old && m.role === 'assistant' && state.awaiting) {
      state.awaiting = null;
      updateThinking();
    }
    if (state.stick) scrollToBottom();
    else if (live && !old) $('#jump').hidden = false;
  }

  async function loadMessages() {
    const data = await api(`/api/messages?limit=${MESSAGE_LOAD_LIMIT}`);
    for (const m of data.messages || []) addMessage(m, { live: false });
    notice('');
    $('#empty').hidden = state.messages.size > 0;
  }

  function scrollToBottom() {
    const scroller = $('#scroller');
    scroller.scrollTop = scroller.scrollHeight;
    $('#jump').hidden = true;
  }

  function onScroll() {
    const s = $('#scroller');
    state.stick = s.scrollHeight - s.scrollTop - s.clientHeight < 48;
    if (state.stick) $('#jump').hidden = true;
  }

  // ---- thinking indicator ---------------------------------------------------------------------

  function startAwaiting() {
    state.awaiting = { since: Date.now(), sawBusy: state.tellerBusy };
    updateThinking();
  }

  function updateThinking() {
    const waiting = state.awaiting;
    const idleSaid = waiting && !state.tellerBusy && state.statusAt > waiting.since &&
      (waiting.sawBusy || state.statusAt - waiting.since > IDLE_GRACE_MS);
    if (idleSaid || (waiting && Date.now() - waiting.since > AWAIT_GIVE_UP_MS)) state.awaiting = null;
    const on = state.tellerBusy || Boolean(state.awaiting);
    const thinking = $('#thinking');
    if (thinking.hidden !== !on) {
      thinking.hidden = !on;
      if (on && state.stick) scrollToBottom();
    }
  }

  // ---- composer -------------------------------------------------------------------------------

  function autosize() {
    const input = $('#input');
    input.style.height = 'auto';
    input.style.height = `${Math.min(input.scrollHeight, window.innerHeight * 0.4)}px`;
  }

  function updateCounter() {
    const length = $('#input').value.length;
    const counter = $('#counter');
    counter.hidden = length < COUNTER_FROM_CHARS;
    counter.textContent = `${numberFormat.format(length)} / ${numberFormat.format(MAX_INPUT_CHARS)}`;
    counter.classList.toggle('at-limit', length >= MAX_INPUT_CHARS);
  }

  function setSending(on) {
    state.sending = on;
    $('#input').disabled = on;
    $('#send').disabled = on;
    $('#composer').setAttribute('aria-busy', String(on));
  }

  async function send() {
    const input = $('#input');
    const text = input.value;
    if (state.sending || !text.trim()) return;
    if (text.length > MAX_INPUT_CHARS) {
      showText($('#input-error'), `The message is ${text.length} characters; the limit is ${MAX_INPUT_CHARS}.`);
      return;
    }
    setSending(true);
    showText($('#input-error'), '');
    // Wait for the reply from now on: a fast reply may arrive before the POST returns.
    startAwaiting();
    try {
      const data = await api('/api/input', { method: 'POST', body: { text } });
      input.value = '';
      autosize();
      updateCounter();
      state.stick = true;
      scrollToBottom();
      // Without live updates the new message would not show: fetch it if SSE did not bring it.
      setTimeout(() => {
        if (data.id && !state.messages.has(data.id)) loadMessages().catch((err) => notice(err.message));
      }, 1500);
    } catch (err) {
      state.awaiting = null;
      updateThinking();
      showText($('#input-error'), err.message);
    } finally {
      setSending(false);
      input.focus();
    }
  }

  function onInputKey(event) {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  }

  // ---- pending question -----------------------------------------------------------------------

  function setQuestion(q) {
    const card = $('#question');
    if (!q || !q.question) {
      state.question = null;
      card.hidden = true;
      return;
    }
    const key = q.id || `${q.createdAt}|${q.question}`;
    const changed = !state.question || state.question.key !== key;
    state.question = { ...q, key };
    if (changed) {
      $('#question-text').innerHTML = window.MimikitMarkdown.render(q.question);
      const options = $('#question-options');
      options.replaceChildren(...(Array.isArray(q.options) ? q.options : []).map((option) => h('button', {
        type: 'button', class: 'question-option', onclick: () => answerQuestion(String(option)),
      }, String(option))));
      showText($('#question-default'), q.default ? `If no answer comes in time: “${q.default}”` : '');
      $('#question-answer').value = '';
      showText($('#question-error'), '');
    }
    card.hidden = false;
    tickExpiry();
  }

  function tickExpiry() {
    const q = state.question;
    if (!q) return;
    const expires = parseDate(q.expiresAt);
    const label = $('#question-expiry');
    if (!expires) {
      label.textContent = '';
      return;
    }
    const left = Math.max(0, Math.floor((expires.getTime() - Date.now()) / 1000));
    const hours = Math.floor(left / 3600);
    const mm = String(Math.floor((left % 3600) / 60)).padStart(hours ? 2 : 1, '0');
    const ss = String(left % 60).padStart(2, '0');
    label.textContent = left > 0 ? `expires in ${hours ? `${hours}:` : ''}${mm}:${ss}` : 'expired';
    label.title = expires.toLocaleString();
    $('#question').classList.toggle('expired', left === 0);
  }

  function setQuestionBusy(on) {
    for (const el of document.querySelectorAll('#question button, #question input')) el.disabled = on;
  }

  async function answerQuestion(answer) {
    if (!answer.trim()) {
      showText($('#question-error'), 'Pick an option or type an answer.');
      return;
    }
    setQuestionBusy(true);
    showText($('#question-error'), '');
    try {
      await api('/api/question/answer', { method: 'POST', body: { answer } });
      setQuestion(null);
      startAwaiting();
    } catch (err) {
      if (err.status === 409) setQuestion(null);
      else showText($('#question-error'), err.message);
    } finally {
      setQuestionBusy(false);
    }
  }

  async function refreshQuestion() {
    try {
      setQuestion((await api('/api/question')).question || null);
    } catch (err) {
      notice(`Could not load the pending question: ${err.message}`);
    }
  }

  // ---- task panel -----------------------------------------------------------------------------

  function taskLabel(task) {
    return cut(task.title || task.prompt || task.id, PROMPT_CUT_CHARS);
  }

  function badge(status) {
    return h('span', { class: `badge badge-${status}` }, status);
  }

  function buildTask(task) {
    const meta = h('span', { class: 'task-meta' }, badge(task.status),
      h('span', { title: 'priority (0-10, larger runs first)' }, `P${task.priority ?? 5}`),
      task.role ? h('span', {}, task.role) : null,
      task.type && task.type !== 'oneshot' ? h('span', {}, task.type) : null,
      task.nextRunAt ? h('span', { class: 'task-next', title: parseDate(task.nextRunAt)?.toLocaleString() },
        `next ${when(task.nextRunAt)}`) : null);
    const li = h('li', { class: 'task', 'data-id': task.id, 'data-status': task.status },
      h('button', { type: 'button', class: 'task-open', onclick: () => openTask(task.id) },
        h('span', { class: 'task-title' }, taskLabel(task)), meta));
    if (CANCELABLE.has(task.status)) {
      li.append(h('button', {
        type: 'button', class: 'task-cancel', 'aria-label': `Cancel task: ${taskLabel(task)}`,
        title: 'Cancel', onclick: (event) => cancelTask(task.id, event.currentTarget),
      }, 'Cancel'));
    }
    return li;
  }

  function sortTasks(key, tasks) {
    const time = (v) => parseDate(v)?.getTime() ?? 0;
    const oldestFirst = (a, b) => time(a.createdAt) - time(b.createdAt);
    if (key === 'queued') {
      return tasks.sort((a, b) => (b.priority ?? 5) - (a.priority ?? 5) || oldestFirst(a, b));
    }
    if (key === 'triggers') return tasks.sort((a, b) => time(a.nextRunAt) - time(b.nextRunAt));
    if (key === 'recent') return tasks.sort((a, b) => oldestFirst(b, a)).slice(0, RECENT_TASKS_SHOWN);
    return tasks.sort(oldestFirst);
  }

  function renderTasks() {
    const focused = document.activeElement;
    const focusId = focused?.closest?.('.task')?.dataset.id;
    const focusClass = focused?.classList?.contains('task-cancel') ? '.task-cancel' : '.task-open';
    const all = [...state.tasks.values()];
    const summary = [];
    const groups = TASK_GROUPS.map((group) => {
      const tasks = sortTasks(group.key, all.filter((t) => group.statuses.includes(t.status)));
      if (tasks.length && group.key !== 'recent') {
        const noun = group.key === 'triggers' && tasks.length === 1 ? 'trigger' : group.key;
        summary.push(`${tasks.length} ${noun}`);
      }
      return h('section', { class: `task-group group-${group.key}`, 'aria-label': group.label },
        h('h3', {}, group.label, h('span', { class: 'count' }, String(tasks.length))),
        tasks.length ? h('ul', { class: 'task-list' }, tasks.map(buildTask))
          : h('p', { class: 'task-empty' }, group.empty));
    });
    $('#task-groups').replaceChildren(...groups);
    $('#tasks-summary').textContent = summary.join(' · ');
    if (focusId) {
      const again = document.querySelector(`.task[data-id="${CSS.escape(focusId)}"] ${focusClass}`);
      if (again) again.focus();
    }
  }

  let taskRefreshTimer = null;

  function scheduleTaskRefresh() {
    clearTimeout(taskRefreshTimer);
    taskRefreshTimer = setTimeout(refreshTasks, 400);
  }

  async function refreshTasks() {
    try {
      const data = await api('/api/tasks?scope=all');
      state.tasks = new Map((data.tasks || []).map((t) => [t.id, t]));
      showText($('#tasks-error'), '');
      renderTasks();
    } catch (err) {
      showText($('#tasks-error'), `Could not load tasks: ${err.message}`);
    }
  }

  function onTaskEvent(task) {
    if (!task || !task.id) return;
    state.tasks.set(task.id, { ...state.tasks.get(task.id), ...task });
    renderTasks();
    scheduleTaskRefresh();
    if (state.detailId === task.id && $('#task-detail').open) loadTaskDetail(task.id);
  }

  async function cancelTask(id, button) {
    button.disabled = true;
    button.textContent = 'Canceling…';
    try {
      const data = await api(`/api/tasks/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      if (!data.success) {
        showText($('#tasks-error'), data.message || `Task ${id} could not be canceled (it may have finished).`);
      }
    } catch (err) {
      showText($('#tasks-error'), `Cancel failed: ${err.message}`);
    }
    refreshTasks();
  }

  // ---- task detail ----------------------------------------------------------------------------

  function section(title, ...children) {
    return h('section', { class: 'detail-section' }, h('h3', {}, title), ...children);
  }

  function pre(text, cls = '') {
    return h('pre', { class: `block ${cls}` }, text);
  }

  function detailMeta(task) {
    const rows = [
      ['ID', task.id], ['Type', task.type], ['Role', task.role], ['Priority', task.priority],
      ['Attempts', task.attempts], ['Timeout', task.timeout ? `${task.timeout} s` : null],
      ['Created', when(task.createdAt)], ['Started', when(task.startedAt)],
      ['Completed', when(task.completedAt)], ['Deferred until', when(task.deferUntil)],
      ['Next run', when(task.schedule?.nextRunAt || task.schedule?.runAt || task.nextRunAt)],
      ['Trace', task.traceId],
    ].filter(([, v]) => v !== null && v !== undefined && v !== '');
    return h('dl', { class: 'detail-meta' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]));
  }

  function resultView(result) {
    const body = result.result || {};
    const head = h('p', { class: 'result-head' }, badge(result.status), ` ${result.resultType || ''}`);
    const parts = [head];
    if (result.error) parts.push(pre(result.error, 'error-block'));
    if (result.question) parts.push(h('p', {}, `Question: ${result.question}`));
    if (result.resultType === 'text' && typeof body.text === 'string') {
      const text = h('div', { class: 'md' });
      text.innerHTML = window.MimikitMarkdown.render(body.text);
      parts.push(text);
    } else if (Object.keys(body).length) {
      parts.push(pre(pretty(body)));
    }
    return parts;
  }

  function eventsView(events) {
    return h('ol', { class: 'timeline' }, events.map((event) => {
      const rest = { ...event };
      for (const key of ['type', 'at', 'taskId', 'traceId']) delete rest[key];
      const extra = Object.keys(rest).length ? JSON.stringify(rest) : '';
      return h('li', {}, timeEl(event.at, true), h('strong', {}, ` ${event.type || 'event'}`),
        extra ? h('code', { class: 'event-extra' }, extra) : null);
    }));
  }

  function contentText(content) {
    if (content === null || content === undefined) return '';
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) return content.map((part) => part.text ?? JSON.stringify(part)).join('\n');
    return pretty(content);
  }

  function turnView(message) {
    const role = message.role || 'message';
    const calls = message.tool_calls || message.toolCalls || [];
    const toolId = message.tool_call_id || message.toolCallId;
    const label = role === 'tool' ? `tool result${message.name ? ` · ${message.name}` : ''}` : role;
    const text = contentText(message.content);
    return h('div', { class: `turn turn-${role}` },
      h('div', { class: 'turn-role', title: toolId || '' }, label),
      text ? pre(text) : null,
      calls.map((call) => {
        const fn = call.function || call;
        return h('div', { class: 'tool-call' },
          h('div', { class: 'tool-name' }, `→ ${fn.name || 'tool'}`), pre(pretty(fn.arguments ?? {})));
      }));
  }

  function toolRecordView(call) {
    return h('div', { class: 'turn turn-tool' },
      h('div', { class: 'turn-role' }, `tool · ${call.name || 'tool'}${call.ok === false ? ' · failed' : ''}`),
      pre(pretty(call.arguments ?? {})), call.content ? pre(contentText(call.content)) : null);
  }

  function runsView(runs) {
    return runs.map((run, i) => {
      const stats = usageText(run.usage, run.durationMs);
      const title = [`Run ${i + 1}`, run.role || run.agent, run.model, run.status].filter(Boolean).join(' · ');
      const messages = run.messages || [];
      // Older or partial records may hold the tool calls only in their own list.
      const turns = messages.length ? messages.map(turnView) : (run.toolCalls || []).map(toolRecordView);
      return h('details', { class: 'run', open: i === runs.length - 1 },
        h('summary', {}, h('span', {}, title), stats ? h('span', { class: 'muted' }, stats) : null),
        run.error ? pre(run.error, 'error-block run-error') : null, turns);
    });
  }

  function renderDetail(data) {
    const task = data.task || {};
    $('#task-detail-title').textContent = cut(task.title || task.prompt || task.id || 'Task', 80);
    const body = [h('p', { class: 'detail-status' }, badge(task.status || 'unknown')), detailMeta(task),
      section('Prompt', pre(task.prompt || ''))];
    if (task.condition) body.push(section('Condition', pre(pretty(task.condition))));
    if (task.schedule) body.push(section('Schedule', pre(pretty(task.schedule))));
    if (task.error) body.push(section('Error', pre(task.error, 'error-block')));
    if (data.result) body.push(section('Result', ...resultView(data.result)));
    if (data.events?.length) body.push(section('History', eventsView(data.events)));
    if (data.runs?.length) body.push(section('Runs', ...runsView(data.runs)));
    if (CANCELABLE.has(task.status)) {
      body.push(h('div', { class: 'dialog-actions' }, h('button', {
        type: 'button', class: 'button danger detail-cancel',
        onclick: (event) => cancelTask(task.id, event.currentTarget).then(() => loadTaskDetail(task.id)),
      }, 'Cancel task')));
    }
    $('#task-detail-body').replaceChildren(...body);
  }

  async function loadTaskDetail(id) {
    try {
      const data = await api(`/api/tasks/${encodeURIComponent(id)}`);
      if (state.detailId === id) renderDetail(data);
    } catch (err) {
      if (state.detailId === id) $('#task-detail-body').replaceChildren(h('p', { class: 'error' }, err.message));
    }
  }

  function openTask(id) {
    state.detailId = id;
    $('#task-detail-title').textContent = 'Task';
    $('#task-detail-body').replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    const dialog = $('#task-detail');
    if (!dialog.open) dialog.showModal();
    loadTaskDetail(id);
  }

  // ---- live updates ---------------------------------------------------------------------------

  function setConnected(on) {
    setPill('#status-conn', on ? 'ok' : 'warn', on ? 'live' : 'reconnecting…',
      on ? 'Live updates connected' : 'Live updates lost; reconnecting');
  }

  function onJson(handler) {
    return (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch (err) {
        console.warn('Ignoring an event that is not JSON:', event.type, event.data);
        return;
      }
      handler(data);
    };
  }

  function connectEvents() {
    if (state.es) state.es.close();
    const token = getToken();
    const es = new EventSource(token ? `/api/events?token=${encodeURIComponent(token)}` : '/api/events');
    state.es = es;
    es.addEventListener('open', () => {
      state.reconnectDelay = 1000;
      setConnected(true);
      if (state.sseFailed) {
        state.sseFailed = false;
        resync(); // catch up on anything sent while we were away
      }
    });
    es.addEventListener('error', () => {
      if (state.es !== es) return;
      state.sseFailed = true;
      setConnected(false);
      // The browser retries by itself unless the server refused (e.g. 401): then we retry.
      if (es.readyState === EventSource.CLOSED) setTimeout(() => reconnectAfterClose(es), state.reconnectDelay);
    });
    // Accept both the bare object and a {message}/{task} wrapper.
    es.addEventListener('message', onJson((d) => addMessage(d && !d.id && d.message ? d.message : d)));
    es.addEventListener('task', onJson((d) => onTaskEvent(d && !d.id && d.task ? d.task : d)));
    es.addEventListener('question', onJson((data) => setQuestion(data ? data.question : null)));
    es.addEventListener('status', onJson(renderStatus));
  }

  async function reconnectAfterClose(es) {
    if (state.es !== es) return;
    state.reconnectDelay = Math.min(state.reconnectDelay * 2, 30000);
    try {
      await api('/api/status'); // asks for the token if that is why the stream was refused
    } catch (err) {
      if (state.es === es) setTimeout(() => reconnectAfterClose(es), state.reconnectDelay);
      return;
    }
    if (state.es === es) connectEvents();
  }

  function resync() {
    return Promise.allSettled([
      loadMessages().catch((err) => notice(`Could not load messages: ${err.message}`)),
      refreshStatus(), refreshTasks(), refreshQuestion(),
    ]);
  }

  // ---- wiring ---------------------------------------------------------------------------------

  function setupTasksToggle() {
    const toggle = $('#tasks-toggle');
    const wide = window.matchMedia('(min-width: 900px)');
    const apply = () => {
      toggle.disabled = wide.matches;
      if (wide.matches) toggle.setAttribute('aria-expanded', 'true');
      $('#tasks').classList.toggle('collapsed', toggle.getAttribute('aria-expanded') !== 'true');
    };
    toggle.addEventListener('click', () => {
      toggle.setAttribute('aria-expanded', String(toggle.getAttribute('aria-expanded') !== 'true'));
      apply();
    });
    wide.addEventListener('change', () => {
      if (!wide.matches) toggle.setAttribute('aria-expanded', 'false');
      apply();
    });
    apply();
  }

  function bind() {
    $('#composer').addEventListener('submit', (event) => {
      event.preventDefault();
      send();
    });
    const input = $('#input');
    input.addEventListener('keydown', onInputKey);
    input.addEventListener('input', () => {
      autosize();
      updateCounter();
    });
    $('#scroller').addEventListener('scroll', onScroll, { passive: true });
    // The question card or a taller composer shrinks the list: keep the newest message in view.
    const keepBottom = new ResizeObserver(() => {
      if (state.stick) scrollToBottom();
    });
    keepBottom.observe($('#scroller'));
    keepBottom.observe($('#messages'));
    $('#jump').addEventListener('click', () => {
      state.stick = true;
      scrollToBottom();
    });
    $('#question-form').addEventListener('submit', (event) => {
      event.preventDefault();
      answerQuestion($('#question-answer').value);
    });
    $('#task-detail-close').addEventListener('click', () => $('#task-detail').close());
    $('#task-detail').addEventListener('close', () => {
      state.detailId = null;
    });
    $('#task-detail').addEventListener('click', (event) => {
      if (event.target === event.currentTarget) event.currentTarget.close(); // backdrop click
    });
    $('#auth-button').addEventListener('click', () => {
      state.tokenDeclined = false;
      askToken(false).then(resync, () => {});
    });
    setupTasksToggle();
  }

  function boot() {
    bind();
    connectEvents();
    resync();
    setInterval(refreshTasks, TASK_REFRESH_MS);
    setInterval(refreshStatus, STATUS_REFRESH_MS);
    setInterval(() => {
      tickExpiry();
      updateThinking();
    }, 1000);
    $('#input').focus();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
