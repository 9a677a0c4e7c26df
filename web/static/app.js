/*
 * Mimikit chat page: status bar, composer, pending question, live updates over SSE, and the
 * wiring of the other parts. Loaded last, after markdown.js, core.js (helpers, API client),
 * messages.js (message list), history.js (older messages), tasks.js (task panel and detail),
 * search.js (history and memory search), export.js (downloads) and failed.js (the items the
 * Teller gave up on, with "Try again" and "Dismiss").
 *
 * Stable hooks for browser tests:
 *   #status                          status bar; #status-conn, #status-redis, #status-workers,
 *                                    #status-llm, #status-sandbox pills carry
 *                                    data-state="ok|warn|down|unknown"; #status-mcp (hidden
 *                                    without MCP servers) names them
 *   #llm-banner                      shown when no LLM is configured
 *   #messages                        message list (role="log"); children .msg.user | .msg.assistant
 *                                    | .msg.system with data-id, .msg-text (rendered text) and
 *                                    .msg-meta (time, tokens, elapsed); code blocks are
 *                                    .code-block with a .code-copy button
 *   #history-start, #history-loading beginning-of-conversation marker, older-messages spinner
 *   #search-open, #search            search button and dialog (#search-input, #search-history
 *                                    .search-hit, #search-memory .memory-hit)
 *   #export-menu                     export menu (.export-markdown, .export-json)
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
  const {
    $, h, numberFormat, parseDate, showText, notice, getToken, api,
  } = window.Mimikit;
  const { tasks, messages } = window.Mimikit;
  const MAX_INPUT_CHARS = 32768;
  const COUNTER_FROM_CHARS = 30000;
  const TASK_REFRESH_MS = 10000;
  const STATUS_REFRESH_MS = 15000;
  const IDLE_GRACE_MS = 8000; // an idle status this soon after sending may predate the wake-up
  const AWAIT_GIVE_UP_MS = 600000;
  const BUSY_STATES = new Set(['queued', 'running']);

  const state = {
    question: null,
    tellerBusy: false,
    statusAt: 0, // when the last status arrived (ms)
    awaiting: null, // {since, sawBusy} after the user sent something
    sending: false,
    es: null,
    sseFailed: false,
    reconnectDelay: 1000,
  };

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
      const reading = llm.readingPrompts && llm.readingPrompts.role;
      setPill('#status-llm', 'ok', (llm.model ? `LLM · ${llm.model}` : 'LLM')
        + (reading ? ' · reading its prompts' : ''), [llm.baseUrl, reading &&
        `reading the ${reading} prompt into the server's cache: a message sent now waits for it`]
        .filter(Boolean).join('\n'));
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
    if (!state.tellerBusy) window.Mimikit.live.settle(); // a reply that streamed but was not kept
    if (state.tellerBusy && state.awaiting) state.awaiting.sawBusy = true;
    renderSandbox(status.sandbox);
    renderMcp(status.mcp);
    renderSpending(status.usage);
    updateThinking();
    if ('pendingQuestion' in status) applyStatusQuestion(status.pendingQuestion);
  }

  // Where Worker shell commands run: the sandbox of the host serving the page.
  function renderSandbox(sandbox) {
    if (!sandbox || typeof sandbox !== 'object') return;
    const network = sandbox.network === true ? ' · network on'
      : sandbox.network === false ? ' · network off' : '';
    // The label names it exactly ("bubblewrap", "Landlock ABI 7"); the title says its limits.
    const text = { off: 'No sandbox (off)', none: 'No sandbox' }[sandbox.kind]
      || `Sandbox · ${sandbox.label || sandbox.kind}${network}`;
    const pillState = { ok: 'ok', off: 'warn', warn: 'warn', fail: 'down' }[sandbox.state];
    setPill('#status-sandbox', pillState || 'unknown', text,
      [sandbox.detail, sandbox.fix && `fix: ${sandbox.fix}`].filter(Boolean).join('\n'));
  }

  // The MCP servers whose tools Workers can be given (listed, not started: doctor checks them).
  function renderMcp(mcp) {
    const pill = $('#status-mcp');
    if (!mcp || typeof mcp !== 'object') return;
    const servers = Array.isArray(mcp.servers) ? mcp.servers : [];
    pill.hidden = !mcp.error && !servers.length;
    if (pill.hidden) return;
    if (mcp.error) {
      setPill('#status-mcp', 'down', 'MCP config invalid', mcp.error);
      return;
    }
    const lines = servers.map((s) => `${s.name} (${s.kind} ${s.target})${s.description ? `: ${s.description}` : ''}`);
    setPill('#status-mcp', 'ok', `MCP · ${servers.map((s) => s.name).join(', ')}`,
      [...lines, `config: ${mcp.config}`].join('\n'));
  }

  function renderSpending(usage) {
    const pill = $('#status-spend');
    if (!usage || (!usage.spentToday && usage.dayCap == null)) {
      pill.hidden = true;
      return;
    }
    pill.hidden = false;
    const spent = Number(usage.spentToday || 0).toFixed(4);
    const cap = usage.dayCap != null ? ` / ${usage.dayCap}` : '';
    const full = usage.dayCap != null && usage.spentToday >= usage.dayCap;
    setPill('#status-spend', full ? 'down' : 'ok', `today ${spent}${cap}`,
      full ? 'The daily budget is reached: only the Teller answers, from its reserve'
        : 'Spent today on LLM calls (MIMIKIT_PRICES), and the daily budget');
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

  // ---- messages ------------------------------------------------------------------------------

  function onMessageAdded(m) {
    if (m.role === 'assistant') setTimeout(window.Mimikit.live.refreshBills, 300);
    // A reply, or the note that the message could not be answered, ends the wait.
    if ((m.role === 'assistant' || m.failedItem) && state.awaiting) {
      state.awaiting = null;
      updateThinking();
    }
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
      if (on && messages.isStuck()) messages.scrollToBottom();
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
      messages.follow();
      // Without live updates the new message would not show: fetch it if SSE did not bring it.
      setTimeout(() => {
        if (data.id && !messages.has(data.id)) messages.loadRecent().catch((err) => notice(err.message));
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
      // The Teller asked instead of replying: stop waiting for a reply.
      state.awaiting = null;
      updateThinking();
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
    es.addEventListener('message', onJson((d) => {
      const message = d && !d.id && d.message ? d.message : d;
      if (message && message.role === 'assistant') window.Mimikit.live.settle(message.traceId);
      messages.add(message);
    }));
    es.addEventListener('reply', onJson(window.Mimikit.live.onReply));
    es.addEventListener('run', onJson(window.Mimikit.live.onRun));
    es.addEventListener('task', onJson((d) => tasks.onEvent(d && !d.id && d.task ? d.task : d)));
    es.addEventListener('question', onJson((data) => setQuestion(data ? data.question : null)));
    es.addEventListener('backlog', onJson((data) => tasks.onBacklog((data && data.items) || [])));
    es.addEventListener('status', onJson(renderStatus));
    es.addEventListener('failed', () => window.Mimikit.failed.refresh());
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
      messages.loadRecent().catch((err) => notice(`Could not load messages: ${err.message}`)),
      refreshStatus(), tasks.refresh(), refreshQuestion(), window.Mimikit.live.refreshBills(),
      window.Mimikit.failed.refresh(),
    ]);
  }

  // ---- wiring ---------------------------------------------------------------------------------

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
    $('#question-form').addEventListener('submit', (event) => {
      event.preventDefault();
      answerQuestion($('#question-answer').value);
    });
    $('#auth-button').addEventListener('click', () => {
      window.Mimikit.promptToken().then(resync, () => {});
    });
    window.Mimikit.onToken(connectEvents);
    messages.setup();
    messages.onAdded(onMessageAdded);
    messages.onAdded(window.Mimikit.failed.onAdded);
    tasks.setup();
    window.Mimikit.history.setup();
    window.Mimikit.search.setup();
    window.Mimikit.exporter.setup();
  }

  function boot() {
    bind();
    connectEvents();
    resync();
    setInterval(tasks.refresh, TASK_REFRESH_MS);
    setInterval(refreshStatus, STATUS_REFRESH_MS);
    setInterval(window.Mimikit.live.refreshBills, STATUS_REFRESH_MS);
    setInterval(() => {
      tickExpiry();
      updateThinking();
    }, 1000);
    $('#input').focus();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
