/*
 * Mimikit task panel (running / queued / triggers / recent, with cancel, pause and resume
 * buttons) and the task detail dialog (prompt, result, spending, the steps of a run in progress,
 * status history, run transcripts) from GET /api/tasks/ID.
 * Shared through window.Mimikit.tasks.
 */
'use strict';

(() => {
  const {
    $, h, parseDate, timeEl, when, usageText, cut, pretty, showText, api,
  } = window.Mimikit;
  const RECENT_TASKS_SHOWN = 12;
  const PROMPT_CUT_CHARS = 90;
  const CANCELABLE = new Set(['queued', 'running', 'trigger', 'paused', 'deferred']);
  const SWITCHES = { trigger: ['pause', 'Pause'], paused: ['resume', 'Resume'] };
  const FINISHED = new Set(['done', 'failed', 'canceled', 'needs_input']);
  const TASK_GROUPS = [
    { key: 'running', label: 'Running', statuses: ['running'], empty: 'Nothing running' },
    { key: 'queued', label: 'Queued', statuses: ['queued', 'deferred'], empty: 'Queue is empty' },
    { key: 'triggers', label: 'Triggers', statuses: ['trigger', 'paused'], empty: 'No triggers' },
    { key: 'recent', label: 'Recent', statuses: ['done', 'failed', 'canceled', 'needs_input'], empty: 'Nothing finished yet' },
  ];
  const state = {
    tasks: new Map(), // id -> TaskSummary
    detailId: null,
  };

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
    if (task.pausedReason) meta.append(h('span', { class: 'task-paused' }, cut(task.pausedReason, 80)));
    if (task.waitingFor === 'model') {
      meta.append(h('span', { class: 'task-waiting', title: parseDate(task.since)?.toLocaleString() },
        `waiting for the model since ${when(task.since)}`));
    }
    if (task.reason) meta.append(h('span', { class: 'task-reason' }, cut(task.reason, 80)));
    const switcher = SWITCHES[task.status];
    if (switcher) {
      const [action, label] = switcher;
      li.append(h('button', {
        type: 'button', class: `task-${action}`, 'aria-label': `${label} trigger: ${taskLabel(task)}`,
        title: label, onclick: (event) => switchTrigger(task.id, action, event.currentTarget),
      }, label));
    }
    if (CANCELABLE.has(task.status)) {
      li.append(h('button', {
        type: 'button', class: 'task-cancel', 'aria-label': `Cancel task: ${taskLabel(task)}`,
        title: 'Cancel', onclick: (event) => cancelTask(task.id, event.currentTarget),
      }, 'Cancel'));
    }
    return li;
  }

  async function switchTrigger(id, action, button) {
    button.disabled = true;
    try {
      const data = await api(`/api/tasks/${encodeURIComponent(id)}/${action}`, { method: 'POST' });
      if (!data.success) showText($('#tasks-error'), data.message || `Could not ${action} ${id}.`);
    } catch (err) {
      showText($('#tasks-error'), `${action} failed: ${err.message}`);
    }
    refreshTasks();
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
    for (const task of all) if (task.status === 'running') window.Mimikit.live.showLastStep(task.id);
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
      const [data, backlog] = await Promise.all([
        api('/api/tasks?scope=all'), api('/api/backlog').catch(() => null)]);
      state.tasks = new Map((data.tasks || []).map((t) => [t.id, t]));
      showText($('#tasks-error'), '');
      renderTasks();
      if (backlog) renderBacklog(backlog.items || []);
    } catch (err) {
      showText($('#tasks-error'), `Could not load tasks: ${err.message}`);
    }
  }

  function renderBacklog(items) {
    const open = items.filter((item) => !item.done).length;
    $('#backlog').hidden = items.length === 0;
    $('#backlog-count').textContent = String(open);
    $('#backlog-items').replaceChildren(...items.map((item) => h('li', {
      class: item.done ? 'done' : '', 'data-done': String(Boolean(item.done)),
    }, `${item.done ? '☑' : '☐'} ${item.item}`)));
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

  function spendingView(usage) {
    if (!usage || !usage.calls) return null;
    const cost = usage.cost !== null && usage.cost !== undefined ? ` · cost ${usage.cost.toFixed(4)}` : '';
    const estimated = usage.estimated ? ' (estimated: the server sent no token counts)' : '';
    return section('Spent', h('p', { class: 'detail-spent' },
      `${usage.calls} LLM calls · ${usage.totalTokens} tokens${estimated}${cost}`));
  }

  function renderDetail(data) {
    const task = data.task || {};
    $('#task-detail-title').textContent = cut(task.title || task.prompt || task.id || 'Task', 80);
    const body = [h('p', { class: 'detail-status' }, badge(task.status || 'unknown')), detailMeta(task),
      section('Prompt', pre(task.prompt || ''))];
    if (task.condition) body.push(section('Condition', pre(pretty(task.condition))));
    if (task.schedule) body.push(section('Schedule', pre(pretty(task.schedule))));
    if (task.mcp?.length) {
      body.push(section('MCP servers', h('p', { class: 'detail-mcp' }, task.mcp.join(', '))));
    }
    if (task.error) body.push(section('Error', pre(task.error, 'error-block')));
    if (data.result) body.push(section('Result', ...resultView(data.result)));
    const spent = spendingView(data.usage);
    if (spent) body.push(spent);
    if (data.live?.length || task.status === 'running') {
      window.Mimikit.live.remember(task.id, data.live);
      body.push(section('Now', h('div', { id: 'task-live' },
        data.live?.length ? window.Mimikit.live.stepsView(data.live) : h('p', { class: 'muted' }, 'Starting…'))));
    }
    if (data.events?.length) body.push(section('History', eventsView(data.events)));
    if (data.runs?.length) body.push(section('Runs', ...runsView(data.runs)));
    const activeTrigger = task.type && task.type !== 'oneshot' && !FINISHED.has(task.status);
    if (activeTrigger) {
      body.push(...window.Mimikit.triggerEdit.actions({ ...task, status: task.paused ? 'paused' : 'trigger' },
        () => { loadTaskDetail(task.id); refreshTasks(); }));
    }
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

  function onLiveStep(taskId) {
    const box = document.getElementById('task-live');
    if (state.detailId !== taskId || !box || !$('#task-detail').open) return;
    const steps = window.Mimikit.live.steps(taskId);
    box.replaceChildren(window.Mimikit.live.stepsView(steps));
  }

  function setup() {
    window.Mimikit.live.onStep(onLiveStep);
    $('#task-detail-close').addEventListener('click', () => $('#task-detail').close());
    $('#task-detail').addEventListener('close', () => {
      state.detailId = null;
    });
    $('#task-detail').addEventListener('click', (event) => {
      if (event.target === event.currentTarget) event.currentTarget.close(); // backdrop click
    });
    setupTasksToggle();
  }

  window.Mimikit.tasks = {
    setup, refresh: refreshTasks, onEvent: onTaskEvent, open: openTask, onBacklog: renderBacklog,
  };
})();
