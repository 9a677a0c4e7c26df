/*
 * Steering a trigger from its detail dialog: run it now, pause or resume it, and edit its
 * prompt, schedule or condition, cooldown, budget and notify choice (PATCH /api/tasks/ID, with
 * the server's reason shown when it refuses). Shared through window.Mimikit.triggerEdit.
 */
'use strict';

(() => {
  const { h, api, pretty, showText } = window.Mimikit;
  const NOTIFY = ['', 'always', 'on_change', 'on_failure', 'never'];

  function field(label, input) {
    return h('label', { class: 'edit-field' }, h('span', {}, label), input);
  }

  function timingFields(task) {
    const schedule = task.schedule || {};
    if (task.type === 'recurring') {
      return [
        field('Every (seconds, or 5m, 2h)', h('input', { name: 'interval', value: schedule.interval ?? '' })),
        field('or cron (five fields)', h('input', { name: 'cron', value: schedule.cron ?? '', placeholder: '0 9 * * 1-5' })),
      ];
    }
    if (task.type === 'scheduled') {
      const at = schedule.runAt ? schedule.runAt.slice(0, 16) : '';
      return [field('Run at (server time zone if no offset)', h('input', { name: 'runAt', value: at }))];
    }
    return [
      field('Condition (JSON)', h('textarea', { name: 'condition', rows: 5 }, pretty(task.condition || {}))),
      field('Cooldown (seconds)', h('input', { name: 'cooldown', value: task.cooldown ?? 0 })),
    ];
  }

  /** The changes the form makes: only the fields that differ from the trigger as it is. */
  function changes(form, task) {
    const data = Object.fromEntries(new FormData(form).entries());
    const schedule = task.schedule || {};
    const was = {
      prompt: task.prompt, title: task.title ?? '', interval: schedule.interval ?? '',
      cron: schedule.cron ?? '', runAt: (schedule.runAt || '').slice(0, 16),
      condition: pretty(task.condition || {}), cooldown: task.cooldown ?? 0,
      budget: task.budget ?? '', notify: task.notify ?? '',
    };
    const out = {};
    for (const [name, value] of Object.entries(data)) {
      if (String(value) === String(was[name] ?? '')) continue;
      if (name === 'condition') out.condition = JSON.parse(value);
      else if (name === 'budget') out.budget = value === '' ? null : Number(value);
      else if (name === 'notify') out.notify = value || null;
      else if (name === 'interval' && value !== '') out.interval = /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
      else if (name === 'cooldown') out.cooldown = /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
      else if (value !== '') out[name] = value;
    }
    return out;
  }

  function form(task, onSaved) {
    const error = h('p', { class: 'error', role: 'alert', hidden: true });
    const el = h('form', { class: 'trigger-edit' },
      field('Prompt', h('textarea', { name: 'prompt', rows: 3 }, task.prompt || '')),
      field('Title', h('input', { name: 'title', value: task.title ?? '' })),
      ...timingFields(task),
      field('Budget', h('input', { name: 'budget', value: task.budget ?? '', inputmode: 'decimal' })),
      field('Notify', h('select', { name: 'notify' }, NOTIFY.map((n) => h('option', {
        value: n, selected: (task.notify ?? '') === n,
      }, n || 'default')))),
      error,
      h('div', { class: 'dialog-actions' }, h('button', { type: 'submit', class: 'button edit-save' }, 'Save')));
    el.addEventListener('submit', async (event) => {
      event.preventDefault();
      let body;
      try {
        body = changes(el, task);
      } catch (err) {
        showText(error, `The condition is not JSON: ${err.message}`);
        return;
      }
      if (!Object.keys(body).length) {
        showText(error, 'Nothing changed.');
        return;
      }
      try {
        await api(`/api/tasks/${encodeURIComponent(task.id)}`, { method: 'PATCH', body });
        showText(error, '');
        onSaved();
      } catch (err) {
        showText(error, err.message);
      }
    });
    return el;
  }

  /** The buttons of an active trigger's detail: run now, pause or resume, edit. */
  function actions(task, reload) {
    const act = async (path, button) => {
      button.disabled = true;
      try {
        await api(`/api/tasks/${encodeURIComponent(task.id)}/${path}`, { method: 'POST' });
      } finally {
        reload();
      }
    };
    const editBox = h('div', { class: 'edit-box', hidden: true });
    const switcher = task.status === 'paused' ? ['resume', 'Resume'] : ['pause', 'Pause'];
    return [h('div', { class: 'dialog-actions trigger-actions' },
      h('button', { type: 'button', class: 'button secondary detail-run', onclick: (e) => act('run', e.currentTarget) }, 'Run now'),
      h('button', { type: 'button', class: `button secondary detail-${switcher[0]}`, onclick: (e) => act(switcher[0], e.currentTarget) }, switcher[1]),
      h('button', { type: 'button', class: 'button secondary detail-edit', onclick: () => {
        editBox.replaceChildren(form(task, reload));
        editBox.hidden = false;
      } }, 'Edit')), editBox];
  }

  window.Mimikit.triggerEdit = { actions, form };
})();
