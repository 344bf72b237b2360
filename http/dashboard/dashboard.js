// The copy button next to a secret shown once: copies the text of the element it names.
document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-copy]');
  if (!button) return;
  const target = document.getElementById(button.getAttribute('data-copy'));
  if (!target) return;
  const done = () => { button.textContent = 'Copied'; };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(target.textContent).then(done, () => select(target));
  else { select(target); try { document.execCommand('copy'); done(); } catch (_) { /* selected for a manual copy */ } }
});
function select(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

// A form that changes something for good (revoke a key, cancel a campaign) asks first.
document.addEventListener('submit', (event) => {
  const form = event.target.closest('form[data-confirm]');
  if (form && !window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
});

// A file upload shows its progress: the form (which works without script) is sent by
// XMLHttpRequest, whose upload events move the bar. Success goes where the server sent the page;
// a refusal's reason (wrong type, quota) is shown under the form; a cut connection says so.
document.addEventListener('submit', (event) => {
  const form = event.target.closest('form[data-upload]');
  if (!form || event.defaultPrevented || !window.FormData || !window.XMLHttpRequest) return;
  event.preventDefault();
  const box = form.querySelector('.upload-progress');
  const bar = box.querySelector('progress');
  const status = box.querySelector('.upload-status');
  const button = form.querySelector('button[type="submit"]');
  const say = (text, failed) => { status.textContent = text; status.setAttribute('role', failed ? 'alert' : 'status'); };
  const xhr = new XMLHttpRequest();
  xhr.open('POST', form.action);
  xhr.upload.addEventListener('progress', (e) => {
    if (!e.lengthComputable) return;
    const pct = Math.floor((e.loaded / e.total) * 100);
    bar.value = pct;
    bar.textContent = `${pct}%`;
    say(`${pct}% sent`);
  });
  xhr.upload.addEventListener('load', () => say('Sent; checking the file…'));
  const done = () => { button.disabled = false; };
  xhr.addEventListener('load', () => {
    if (xhr.status >= 200 && xhr.status < 300) { window.location.assign(xhr.responseURL); return; }
    done();
    const page = new DOMParser().parseFromString(xhr.responseText, 'text/html');
    const reason = page.querySelector('main .error');
    say(reason ? reason.textContent : `The upload was refused (${xhr.status}); nothing was stored.`, true);
    // The refused form's one-time token was released; a fresh one comes with the answer.
    const fresh = page.querySelector('form[data-upload] input[name="_once"]');
    if (fresh) form.querySelector('input[name="_once"]').value = fresh.value;
  });
  const cut = () => { done(); say('The upload was interrupted; nothing was stored. Send it again.', true); };
  xhr.addEventListener('error', cut);
  xhr.addEventListener('abort', cut);
  button.disabled = true;
  bar.value = 0;
  box.hidden = false;
  say('Starting…');
  xhr.send(new FormData(form));
});

// The live pages (issue 68): htmx swaps the parts their Server-Sent Events stream pushes
// (http/dashboard/live-stream.ts: the inbox's rows, chat, state line and counts; a campaign's
// progress, cost and actions; the bot log's new lines), and the inbox fetches its links and forms
// in place of <main> (hx-boost). What follows is the little htmx does not do itself.

// A part the person is working in (a focused row link) is not swapped under their hands: the
// newest one waits until the focus leaves it. The chat stays at its end when it was there.
(function livePartsKept() {
  const waiting = new Map();
  let chatAtEnd = true;
  document.addEventListener('htmx:oobBeforeSwap', (event) => {
    const target = event.detail.target;
    if (target.id === 'messages') chatAtEnd = target.scrollHeight - target.scrollTop - target.clientHeight < 40;
    if (!target.contains(document.activeElement) || target === document.activeElement || target.id === 'inbox-counts') return;
    event.detail.shouldSwap = false;
    if (!waiting.has(target)) target.addEventListener('focusout', () => setTimeout(() => {
      if (target.contains(document.activeElement) || !waiting.has(target)) return;
      target.replaceChildren(waiting.get(target));
      waiting.delete(target);
      if (window.htmx) window.htmx.process(target);
    }, 0));
    waiting.set(target, event.detail.fragment);
  });
  document.addEventListener('htmx:sseMessage', () => {
    const list = document.getElementById('messages');
    if (list && chatAtEnd) list.scrollTop = list.scrollHeight;
    const rows = document.querySelector('#conversations > tbody');
    const none = document.getElementById('no-conversations');
    if (rows && none && rows.children.length) none.hidden = true;
    const noMessages = document.getElementById('no-messages');
    if (list && noMessages) noMessages.hidden = list.children.length > 0;
  });
  // A stream whose page part is swapped away is closed at once (the service holds a place for each).
  const sources = new Map();
  document.addEventListener('htmx:sseOpen', (e) => { if (e.detail && e.detail.source) sources.set(e.target, e.detail.source); });
  const closeGone = () => { for (const [elt, source] of sources) if (!document.body.contains(elt)) { source.close(); sources.delete(elt); } };
  document.addEventListener('htmx:afterSwap', closeGone);
  window.addEventListener('pagehide', () => { for (const source of sources.values()) source.close(); });
  // A cut stream is said in the page's live line, and its own words come back when it reconnects.
  let liveWords = null;
  document.addEventListener('htmx:sseError', () => {
    const s = document.getElementById('live-status');
    if (!s) return;
    if (liveWords === null) liveWords = s.textContent;
    s.textContent = 'Live updates interrupted; reconnecting…';
  });
  document.addEventListener('htmx:sseOpen', () => {
    const s = document.getElementById('live-status');
    if (s && liveWords !== null) s.textContent = liveWords;
    liveWords = null;
  });
  let fetched = false;
  // On a wide screen a conversation takes the window (its panes scroll on their own): the window is
  // scrolled to it, unless the page says something went wrong above it.
  const toEnd = () => {
    const list = document.getElementById('messages');
    if (list) list.scrollTop = list.scrollHeight;
    const inbox = document.querySelector('.inbox.selected');
    if (inbox && window.matchMedia('(min-width: 1001px)').matches && !document.querySelector('#main .error')) inbox.scrollIntoView({ block: 'start' });
    else if (fetched) window.scrollTo(0, 0);
  };
  document.addEventListener('DOMContentLoaded', toEnd);
  // A page fetched in place (a link, a form) opens at the chat's end, else at its top; a pushed part moves nothing.
  document.addEventListener('htmx:beforeRequest', () => { fetched = true; });
  document.addEventListener('htmx:afterSettle', () => { if (fetched) { toEnd(); fetched = false; } });
})();

// An answer htmx could not swap (a server error, the network): said in words on the page.
(function failedRequests() {
  const say = (text) => {
    const main = document.getElementById('main');
    if (!main) return;
    let p = document.getElementById('request-failed');
    if (!p) { p = document.createElement('p'); p.id = 'request-failed'; p.className = 'error'; p.setAttribute('role', 'alert'); main.insertBefore(p, main.children[1] || null); }
    p.textContent = text;
  };
  document.addEventListener('htmx:responseError', (e) => say(`That did not work (the service answered ${e.detail.xhr.status}). Reload the page to see what was saved.`));
  document.addEventListener('htmx:sendError', () => say('The service could not be reached; nothing was sent. Try again.'));
})();

// The tab's title leads with who waits and what is unread ("(3 waiting, 5 unread) Inbox"), kept
// current by the pushed counts. A person who turned the alert on hears a short sound and gets the
// browser's notification when another customer starts waiting (opt-in, remembered in this browser).
(function inboxCounts() {
  let lastWaiting = null;
  const ALERT = 'inbox-alert';
  const enabled = () => { try { return localStorage.getItem(ALERT) === 'on'; } catch (_) { return false; } };
  const button = () => document.getElementById('alert-toggle');
  const showToggle = () => {
    const b = button();
    if (!b) return;
    b.hidden = false;
    b.setAttribute('aria-pressed', String(enabled()));
    b.textContent = enabled() ? 'Alert for new waiting customers: on' : 'Alert for new waiting customers: off';
  };
  const beep = () => {
    try {
      const Ctx = window.AudioContext || window.webkitAudioContext;
      if (!Ctx) return;
      const ctx = new Ctx();
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      osc.frequency.value = 880;
      gain.gain.value = 0.08;
      osc.connect(gain).connect(ctx.destination);
      osc.start();
      osc.stop(ctx.currentTime + 0.18);
      osc.onended = () => ctx.close();
    } catch (_) { /* no sound here */ }
  };
  const apply = () => {
    const counts = document.getElementById('inbox-counts');
    if (!counts) return;
    const waiting = Number(counts.getAttribute('data-waiting')) || 0;
    const unread = Number(counts.getAttribute('data-unread')) || 0;
    const mentions = Number(counts.getAttribute('data-mentions')) || 0;
    const n = (x) => (x >= 100 ? '99+' : String(x));
    const parts = [waiting ? `${n(waiting)} waiting` : '', unread ? `${n(unread)} unread` : '', mentions ? `${n(mentions)} mentioning you` : ''].filter(Boolean);
    document.title = (parts.length ? `(${parts.join(', ')}) ` : '') + document.title.replace(/^\([^)]*\) /, '');
    if (lastWaiting !== null && waiting > lastWaiting && enabled()) {
      beep();
      if (window.Notification && Notification.permission === 'granted' && document.visibilityState !== 'visible') {
        new Notification('A customer is waiting', { body: `${n(waiting)} waiting for a reply`, tag: 'inbox-waiting' });
      }
    }
    lastWaiting = waiting;
  };
  document.addEventListener('click', (event) => {
    if (!event.target.closest('#alert-toggle')) return;
    const on = !enabled();
    try { localStorage.setItem(ALERT, on ? 'on' : 'off'); } catch (_) { /* not remembered */ }
    if (on && window.Notification && Notification.permission === 'default') Notification.requestPermission();
    showToggle();
  });
  document.addEventListener('DOMContentLoaded', () => { showToggle(); apply(); });
  document.addEventListener('htmx:afterSettle', () => { showToggle(); apply(); });
  document.addEventListener('htmx:sseMessage', apply);
})();

// The inbox's keyboard: j/k next and previous conversation, r reply, a assign to me, e resolve,
// / search, ? the list of shortcuts (a <dialog> the page carries). Never while typing in a field.
(function inboxKeys() {
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  // A part the live stream has just swapped in is boosted by htmx only once it settles; a click
  // before then would load the whole page. So what a key clicks is processed first (idempotent).
  const boosted = (el) => { if (window.htmx) window.htmx.process(el); return el; };
  // The buttons a key presses carry it (data-key), whatever their words.
  const press = (key) => { const b = document.querySelector(`#main button[data-key="${key}"]`); if (b) { boosted(b.form || b); b.click(); } };
  const move = (step) => {
    const rows = [...document.querySelectorAll('#conversations tbody tr')];
    if (!rows.length) return;
    const at = rows.findIndex((r) => r.classList.contains('selected'));
    const next = rows[at === -1 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step))];
    const link = next && next.querySelector('a');
    if (link && next !== rows[at]) boosted(link).click();
  };
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    const dialog = document.getElementById('shortcuts');
    if (!dialog || typing(event.target)) return;
    if (dialog.open && event.key !== '?') return;
    const act = {
      '?': () => (dialog.open ? dialog.close() : dialog.showModal()),
      j: () => move(1),
      k: () => move(-1),
      r: () => { const t = document.getElementById('reply-text') || document.getElementById('note-text'); if (t) t.focus(); },
      a: () => press('a'),
      e: () => press('e'),
      '/': () => { const q = document.getElementById('customer-q'); if (q) q.focus(); },
    }[event.key];
    if (!act) return;
    event.preventDefault();
    act();
  });
})();

// Canned replies typed with "/": a reply starting with "/" offers the canned replies whose
// shortcut begins with what follows; arrows move, Enter or Tab takes one (the text stays editable).
(function cannedSlash() {
  const state = { i: 0, shown: [] };
  const box = () => document.getElementById('canned-suggest');
  const hide = () => { const b = box(); if (b) b.hidden = true; state.shown = []; };
  const mark = (b) => b.querySelectorAll('[role="option"]').forEach((o) => o.setAttribute('aria-selected', String(state.shown[state.i] === o)));
  document.addEventListener('input', (event) => {
    if (event.target.id !== 'reply-text') return;
    const b = box();
    if (!b) return;
    const m = /^\/([a-z0-9_-]*)$/.exec(event.target.value);
    if (!m) return hide();
    const opts = [...b.querySelectorAll('[role="option"]')];
    opts.forEach((o) => { o.hidden = !o.getAttribute('data-shortcut').startsWith(m[1]); });
    state.shown = opts.filter((o) => !o.hidden);
    state.i = 0;
    b.hidden = state.shown.length === 0;
    mark(b);
  });
  const take = (textarea, option) => { textarea.value = option.getAttribute('data-text'); hide(); textarea.focus(); };
  document.addEventListener('keydown', (event) => {
    if (event.target.id !== 'reply-text' || !state.shown.length) return;
    const b = box();
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      state.i = (state.i + (event.key === 'ArrowDown' ? 1 : state.shown.length - 1)) % state.shown.length;
      mark(b);
      event.preventDefault();
    } else if (event.key === 'Enter' || event.key === 'Tab') {
      take(event.target, state.shown[state.i]);
      event.preventDefault();
    } else if (event.key === 'Escape') hide();
  });
  document.addEventListener('click', (event) => {
    const option = event.target.closest('#canned-suggest [role="option"]');
    const t = document.getElementById('reply-text');
    if (option && t) take(t, option);
  });
})();

// On a phone the list comes first: its filters start folded (the search stays open).
document.addEventListener('DOMContentLoaded', () => {
  const more = document.querySelector('details.filters-more');
  if (more && window.matchMedia('(max-width: 600px)').matches && !more.hasAttribute('data-chosen')) more.open = false;
});
document.addEventListener('htmx:afterSettle', () => {
  const more = document.querySelector('details.filters-more');
  if (more && window.matchMedia('(max-width: 600px)').matches && !more.hasAttribute('data-chosen')) more.open = false;
});

// A canned reply chosen in the reply form fills the message (the person may still edit it).
document.addEventListener('change', (event) => {
  const select = event.target.closest('select[data-fills]');
  if (!select || !select.value) return;
  const target = document.getElementById(select.getAttribute('data-fills'));
  if (target) { target.value = select.value; target.focus(); }
});

// The shortcuts' list, opened with its button as well as with "?".
document.addEventListener('click', (event) => {
  if (!event.target.closest('#shortcuts-open')) return;
  const dialog = document.getElementById('shortcuts');
  if (dialog && !dialog.open) dialog.showModal();
});
