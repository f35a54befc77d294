/**
 * The console's only script, as a string module (embedded in a compiled binary, served
 * from /assets/console.js so the Content-Security-Policy can forbid inline script).
 * It only enhances: every page works without it.
 * - live overview: re-fetches `[data-live-src]` every 2 s (one cheap request), with a
 *   pause button, and stops while the tab is hidden;
 * - "select all on this page" for the DLQ checkboxes;
 * - `<time data-local>` shown in the browser's own time zone.
 */
export const CLIENT_SCRIPT = `
(() => {
  const localize = (root) => {
    for (const t of root.querySelectorAll('time[data-local]')) {
      const d = new Date(t.getAttribute('datetime'));
      if (!Number.isNaN(d.getTime())) t.textContent = d.toLocaleString();
    }
  };
  localize(document);

  const live = document.querySelector('[data-live-src]');
  const pause = document.getElementById('pause');
  const stamp = document.getElementById('live-status');
  if (live && pause) {
    let paused = false;
    let busy = false;
    pause.addEventListener('click', () => {
      paused = !paused;
      pause.setAttribute('aria-pressed', String(paused));
      pause.textContent = paused ? 'Resume live updates' : 'Pause live updates';
      if (stamp) stamp.textContent = paused ? 'paused' : 'live';
    });
    const tick = async () => {
      if (paused || busy || document.hidden) return;
      busy = true;
      try {
        const res = await fetch(live.getAttribute('data-live-src'), { headers: { accept: 'text/html' } });
        if (!res.ok) throw new Error('HTTP ' + res.status);
        live.innerHTML = await res.text();
        localize(live);
        if (stamp) stamp.textContent = 'live, updated ' + new Date().toLocaleTimeString();
      } catch (e) {
        if (stamp) stamp.textContent = 'could not refresh (' + e.message + '), retrying';
      } finally {
        busy = false;
      }
    };
    setInterval(tick, 2000);
  }

  const all = document.getElementById('select-page');
  if (all) {
    all.addEventListener('change', () => {
      for (const box of document.querySelectorAll('input[name=ids]')) box.checked = all.checked;
    });
  }
})();
`;
