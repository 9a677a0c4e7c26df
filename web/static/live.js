/*
 * Mimikit live work: the Teller's reply growing as it streams (a `reply` event carries the text
 * so far; the stored message replaces it), and each step of a running task as it happens (a
 * `run` event) in the task panel and the open task detail. Shared through window.Mimikit.live.
 */
'use strict';

(() => {
  const { $, h, cut, usageText } = window.Mimikit;
  const STEP_CUT_CHARS = 120;
  const state = {
    streams: new Map(), // stream id -> bubble element
    steps: new Map(), // task id -> live steps, oldest first
    listeners: [],
  };

  // ---- streamed replies -----------------------------------------------------------------------

  function onReply(data) {
    if (!data || !data.id || typeof data.text !== 'string') return;
    let bubble = state.streams.get(data.id);
    if (!bubble) {
      bubble = h('article', { class: 'msg assistant streaming', 'data-stream': data.id,
        'data-trace': data.traceId || '', 'aria-busy': 'true' },
      h('div', { class: 'msg-text' }), h('div', { class: 'msg-meta' }, 'writing…'));
      state.streams.set(data.id, bubble);
      $('#messages').append(bubble);
      $('#empty').hidden = true;
    }
    bubble.querySelector('.msg-text').innerHTML = window.MimikitMarkdown.render(data.text);
    if (window.Mimikit.messages.isStuck()) window.Mimikit.messages.scrollToBottom();
  }

  /** The stored reply arrived (or the Teller went idle): the growing copy goes away. */
  function settle(traceId) {
    for (const [id, bubble] of state.streams) {
      if (traceId === undefined || bubble.dataset.trace === (traceId || '')) {
        bubble.remove();
        state.streams.delete(id);
      }
    }
  }

  // ---- steps of running tasks -----------------------------------------------------------------

  function stepText(step) {
    if (step.kind === 'tool') {
      const outcome = step.ok === false ? 'failed' : 'ok';
      return `${step.name}(${cut(step.arguments || '', 60)}) → ${outcome}`;
    }
    const calls = (step.calls || []).join(', ');
    const said = step.text ? `“${cut(step.text, 60)}”` : '';
    return ['LLM', said, calls ? `calls ${calls}` : '', usageText(step.usage, step.elapsedMs)]
      .filter(Boolean).join(' · ');
  }

  function onRun(data) {
    if (!data || !data.taskId || !data.step) return;
    const steps = state.steps.get(data.taskId) || [];
    if (steps.length && steps[0].runId !== data.step.runId) steps.length = 0; // a new attempt
    steps.push(data.step);
    state.steps.set(data.taskId, steps);
    showLastStep(data.taskId);
    state.listeners.forEach((fn) => fn(data.taskId, data.step));
  }

  function showLastStep(taskId) {
    const steps = state.steps.get(taskId);
    const item = document.querySelector(`.task[data-id="${CSS.escape(taskId)}"]`);
    if (!steps || !steps.length || !item || item.dataset.status !== 'running') return;
    let line = item.querySelector('.task-step');
    if (!line) {
      line = h('span', { class: 'task-step' });
      item.querySelector('.task-open').append(line);
    }
    const last = steps[steps.length - 1];
    line.textContent = cut(`step ${last.step}: ${stepText(last)}`, STEP_CUT_CHARS);
  }

  /** The live steps of a task as a list (the detail dialog's "Now" section). */
  function stepsView(steps) {
    return h('ol', { class: 'live-steps' }, steps.map((step) => h('li', {
      class: `live-step step-${step.kind}`, 'data-kind': step.kind,
    }, h('span', { class: 'step-no' }, `${step.step}`), h('span', {}, stepText(step)),
    step.kind === 'tool' && step.output ? h('pre', { class: 'block' }, cut(step.output, 600)) : null,
    step.kind === 'llm' && step.text ? h('pre', { class: 'block' }, cut(step.text, 600)) : null)));
  }

  function remember(taskId, steps) {
    if (steps && steps.length) state.steps.set(taskId, [...steps]);
    else state.steps.delete(taskId);
  }

  function onStep(fn) {
    state.listeners.push(fn);
  }

  // ---- one bill per request --------------------------------------------------------------------

  /** Each user message (its id is its trace) shows what everything it caused cost so far. */
  async function refreshBills() {
    let data;
    try {
      data = await window.Mimikit.api('/api/usage?by=trace&limit=100');
    } catch (err) {
      return; // the next refresh tries again; the chat itself is unaffected
    }
    for (const row of data.usage || []) {
      const msg = document.querySelector(`.msg.user[data-id="${CSS.escape(row.id)}"] .msg-meta`);
      if (!msg) continue;
      let bill = msg.querySelector('.msg-bill');
      if (!bill) {
        bill = h('span', { class: 'msg-bill', title: 'Everything this message caused: Teller, Planner, Workers' });
        msg.append(bill);
      }
      const cost = row.cost !== null && row.cost !== undefined ? ` · ${row.cost.toFixed(4)}` : '';
      bill.textContent = `request: ${row.calls} calls · ${row.totalTokens} tokens${cost}`;
    }
  }

  function steps(taskId) {
    return state.steps.get(taskId) || [];
  }

  window.Mimikit.live = {
    onReply, settle, onRun, stepsView, remember, onStep, showLastStep, steps, refreshBills,
  };
})();
