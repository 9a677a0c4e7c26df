/*
 * Mimikit page core: DOM and time helpers, and the JSON API client with the token prompt.
 * Loaded first; everything is shared through window.Mimikit.
 */
'use strict';

(() => {
  const TOKEN_KEY = 'mimikitToken';
  const $ = (sel) => document.querySelector(sel);
  const numberFormat = new Intl.NumberFormat();
  const tokenState = { prompt: null, declined: false, listeners: [] };

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

  /** A <time> saying when(value): the clock today, the day and clock for another day. */
  function whenEl(value) {
    const date = parseDate(value);
    if (!date) return null;
    return h('time', { datetime: date.toISOString(), title: date.toLocaleString() }, when(value));
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
      // estimated: the server sent no token counts; Mimikit counted them itself
      const about = usage.estimated ? '≈' : '';
      parts.push(`${about}${numberFormat.format(usage.totalTokens)} tokens${usage.estimated ? ' (estimated)' : ''}`);
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
    if (tokenState.declined) return Promise.reject(new ApiError('An API token is required.', 401));
    if (tokenState.prompt) return tokenState.prompt;
    const dialog = $('#token-dialog');
    const input = $('#token-input');
    tokenState.prompt = new Promise((resolve, reject) => {
      $('#token-error').hidden = !rejected;
      input.value = '';
      dialog.returnValue = '';
      dialog.addEventListener('close', () => {
        tokenState.prompt = null;
        const token = dialog.returnValue === 'ok' ? input.value.trim() : '';
        if (!token) {
          tokenState.declined = true;
          $('#auth-button').hidden = false;
          reject(new ApiError('An API token is required: use "Enter token" in the status bar.', 401));
          return;
        }
        setToken(token);
        $('#auth-button').hidden = true;
        tokenState.listeners.forEach((fn) => fn());
        resolve();
      }, { once: true });
      dialog.showModal();
    });
    return tokenState.prompt;
  }

  /** fetch() an API path with the stored token; on 401 ask for the token and retry. */
  async function request(path, { method = 'GET', body, accept = 'application/json' } = {}) {
    for (let attempt = 0; ; attempt += 1) {
      const headers = { Accept: accept };
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
      return res;
    }
  }

  async function jsonOf(res) {
    try {
      return await res.json();
    } catch (err) {
      return null; // empty or non-JSON body: the status code says enough
    }
  }

  /** An ApiError with the server's own words for a response that is not ok. */
  async function failure(res) {
    const data = await jsonOf(res);
    const reason = (data && (data.error || data.message)) || `HTTP ${res.status}`;
    return new ApiError(String(reason), res.status, data);
  }

  /** Call a JSON API path (see request) and return its JSON body; throws ApiError if not ok. */
  async function api(path, options = {}) {
    const res = await request(path, options);
    if (!res.ok) throw await failure(res);
    return (await jsonOf(res)) || {};
  }

  /** Call ``fn`` after the user saved a new token (e.g. to reconnect the event stream). */
  function onToken(fn) {
    tokenState.listeners.push(fn);
  }

  /** Ask for the token again after the user declined once (the "Enter token" button). */
  function promptToken() {
    tokenState.declined = false;
    return askToken(false);
  }

  window.Mimikit = {
    $, h, numberFormat, parseDate, clock, timeEl, when, whenEl, duration, usageText, cut, pretty,
    showText, notice, ApiError, getToken, request, failure, api, onToken, promptToken,
  };
})();
