/*
 * Export of the whole conversation as a file: Markdown (a readable transcript) or JSON, from
 * GET /api/messages/export?format=... . Fetched with the API token, then saved from a blob, so
 * it works when the instance needs a token. Shared through window.Mimikit.exporter.
 */
'use strict';

(() => {
  const { $, h, notice, request, failure } = window.Mimikit;
  const FORMATS = {
    markdown: { accept: 'text/markdown', extension: 'md' },
    json: { accept: 'application/json', extension: 'json' },
  };

  /** The file name the server suggests in Content-Disposition, or one of our own. */
  function fileName(res, extension) {
    const header = res.headers.get('Content-Disposition') || '';
    const match = /filename="([^"]+)"/.exec(header);
    const today = new Date().toISOString().slice(0, 10);
    return match ? match[1] : `mimikit-conversation-${today}.${extension}`;
  }

  function save(blob, name) {
    const url = URL.createObjectURL(blob);
    const link = h('a', { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  }

  async function download(format) {
    const { accept, extension } = FORMATS[format];
    $('#export-menu').open = false;
    try {
      const res = await request(`/api/messages/export?format=${format}`, { accept });
      if (!res.ok) throw await failure(res);
      save(await res.blob(), fileName(res, extension));
    } catch (err) {
      notice(`Export failed: ${err.message}`);
    }
  }

  function setup() {
    const menu = $('#export-menu');
    for (const format of Object.keys(FORMATS)) {
      menu.querySelector(`.export-${format}`).addEventListener('click', () => download(format));
    }
    // Close the menu on a click elsewhere, as menus do.
    document.addEventListener('click', (event) => {
      if (menu.open && !menu.contains(event.target)) menu.open = false;
    });
  }

  window.Mimikit.exporter = { setup, download };
})();
