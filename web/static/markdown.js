/*
 * Markdown for chat messages: markdown-it (CommonMark, vendor/markdown-it.min.js) set up so that
 * the model's text can never run in the page.
 *
 * - `html: false`: raw HTML in the text is escaped, so `<img src=x onerror=...>` shows as text.
 * - Links (written, autolinks and bare URLs found by linkify) are kept only for http, https and
 *   mailto; anything else (javascript:, data:, relative paths) stays plain text.
 * - Images are off: a remote image would load by itself and could carry data out in its URL.
 * - Fenced and indented code blocks get a copy button (one click handler for the whole page).
 *
 * API: MimikitMarkdown.render(text) -> HTML string.
 */
(function (root) {
  'use strict';

  const SAFE_LINK = /^(https?:|mailto:)/i;
  const COPIED_LABEL_MS = 1500;

  const md = root.markdownit({ html: false, linkify: true, breaks: true, typographer: false });
  md.validateLink = (url) => SAFE_LINK.test(String(url).trim());
  md.disable('image');

  const defaultLinkOpen = md.renderer.rules.link_open ||
    ((tokens, idx, options, env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    tokens[idx].attrSet('target', '_blank');
    tokens[idx].attrSet('rel', 'noopener noreferrer');
    return defaultLinkOpen(tokens, idx, options, env, self);
  };

  function withCopyButton(rule) {
    return (tokens, idx, options, env, self) => '<div class="code-block">' +
      '<button type="button" class="code-copy" aria-label="Copy code">Copy</button>' +
      `${rule(tokens, idx, options, env, self)}</div>\n`;
  }

  md.renderer.rules.fence = withCopyButton(md.renderer.rules.fence);
  md.renderer.rules.code_block = withCopyButton(md.renderer.rules.code_block);

  /**
   * Render markdown text as safe HTML.
   * @param {string} text - untrusted markdown
   * @returns {string} HTML without raw HTML from the text, links only http(s)/mailto, no images
   */
  function render(text) {
    return md.render(String(text == null ? '' : text));
  }

  // ---- copy buttons ---------------------------------------------------------------------------

  /** Copy with a hidden textarea and execCommand, for pages without navigator.clipboard. */
  function copyBySelection(text) {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    try {
      if (!document.execCommand('copy')) throw new Error('the browser refused to copy');
    } finally {
      area.remove();
    }
  }

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return;
      } catch (err) {
        // Permission denied or no focus: the selection way may still work.
      }
    }
    copyBySelection(text);
  }

  function flash(button, label) {
    button.textContent = label;
    clearTimeout(button.resetTimer);
    button.resetTimer = setTimeout(() => {
      button.textContent = 'Copy';
    }, COPIED_LABEL_MS);
  }

  async function onCopyClick(event) {
    const button = event.target.closest && event.target.closest('.code-copy');
    if (!button) return;
    const code = button.closest('.code-block').querySelector('pre code');
    try {
      await copyText(code ? code.textContent : '');
      flash(button, 'Copied');
    } catch (err) {
      flash(button, 'Copy failed');
    }
  }

  document.addEventListener('click', onCopyClick);

  root.MimikitMarkdown = { render };
})(window);
