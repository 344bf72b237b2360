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

// A campaign's progress follows the sending without a reload: its page reads /progress every
// 3 s while the campaign is scheduled or sending, and stops when it is over.
(function liveProgress() {
  const section = document.querySelector('[data-progress-url][data-live="true"]');
  if (!section) return;
  const url = section.getAttribute('data-progress-url');
  const set = (id, text) => { const el = document.getElementById(id); if (el) el.textContent = text; };
  const tick = () => {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
      .then((p) => {
        const bar = document.getElementById('progress-bar');
        if (bar) { bar.max = Math.max(1, p.total); bar.value = p.done; bar.textContent = `${p.done} of ${p.total}`; }
        set('progress-text', p.text);
        set('broadcast-status', p.status_line);
        const reason = document.getElementById('progress-reason');
        if (reason) { reason.textContent = p.reason || ''; reason.hidden = !p.reason; }
        const hold = document.getElementById('progress-hold');
        if (hold) { hold.textContent = p.hold || ''; hold.hidden = !p.hold; }
        const pace = document.getElementById('progress-pace');
        if (pace) { pace.textContent = p.pace || ''; pace.hidden = !p.pace; }
        // The page's other live parts (facts, waves, failures, cancellations), rendered and escaped by the server.
        for (const [id, part] of Object.entries(p.parts || {})) { const el = document.getElementById(id); if (el) el.innerHTML = part; }
        if (p.counts) for (const [k, n] of Object.entries(p.counts)) {
          const cell = section.querySelector(`[data-count="${k}"]`);
          if (cell) cell.textContent = String(n);
        }
        section.setAttribute('data-live', p.live ? 'true' : 'false');
        if (p.live) setTimeout(tick, 3000);
      })
      .catch(() => setTimeout(tick, 10000));
  };
  setTimeout(tick, 3000);
})();

// The bot log follows the bot without a reload: its page asks the table's data-live-log URL for
// the lines after the newest shown, every data-every ms, and puts them on top (rows rendered and
// escaped by the server). A failed question waits longer and tries again.
(function liveBotLog() {
  const table = document.querySelector('table[data-live-log]');
  if (!table) return;
  const body = table.tBodies[0];
  const status = document.getElementById('live-status');
  const every = Number(table.getAttribute('data-every')) || 3000;
  let added = 0;
  const tick = () => {
    const url = `${table.getAttribute('data-live-log')}&after=${encodeURIComponent(table.getAttribute('data-after') || '0')}`;
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
      .then((p) => {
        if (p.count > 0) {
          body.insertAdjacentHTML('afterbegin', p.rows);
          table.setAttribute('data-after', p.last);
          added += p.count;
          const empty = document.getElementById('log-empty');
          if (empty) empty.hidden = true;
          if (status) status.textContent = `Live: ${added} new line${added === 1 ? '' : 's'} since the page opened.`;
        }
        setTimeout(tick, every);
      })
      .catch(() => setTimeout(tick, every * 3));
  };
  setTimeout(tick, every);
})();

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

// A conversation's chat follows it without a reload: it reads /live every 3 s (same origin) and
// rebuilds the chat (oldest to newest: messages with their authors and statuses, and the team's
// notes), the state, the window, the assignee and the labels from its JSON, as text (textContent).
(function liveConversation() {
  const section = document.querySelector('#conversation-live[data-live-url]');
  if (!section) return;
  const url = section.getAttribute('data-live-url');
  const list = section.querySelector('#messages');
  const set = (id, text) => { const el = document.getElementById(id); if (el && el.textContent !== text) el.textContent = text; };
  const para = (cls, parts) => {
    const p = document.createElement('p');
    if (cls) p.className = cls;
    for (const [c, text] of parts) {
      const span = document.createElement('span');
      if (c) span.className = c;
      span.textContent = text;
      if (p.childNodes.length) p.appendChild(document.createTextNode(' '));
      p.appendChild(span);
    }
    return p;
  };
  // A message's media, as http/dashboard/inbox-media.ts mediaHtml draws it (every value set as text or an attribute).
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fileLink = (m) => {
    const p = el('p', { class: 'media-file' });
    if (m.link) p.appendChild(el('a', { href: m.link, target: '_blank', rel: 'noopener noreferrer' }, `${m.name} (sent by link)`));
    else { p.className = 'media-file muted'; p.textContent = `${m.name} (no copy the service can fetch)`; }
    return p;
  };
  const media = (m, by) => {
    if (m.kind === 'image' || m.kind === 'sticker') {
      if (!m.url) return fileLink(m);
      const a = el('a', { class: 'media-thumb', href: m.url, target: '_blank', rel: 'noopener' });
      a.appendChild(el('img', { src: m.url, alt: `${m.kind === 'sticker' ? 'Sticker' : 'Photo'} from ${by} (opens the full size)`, loading: 'lazy', class: m.kind }));
      return a;
    }
    if (m.kind === 'video' || m.kind === 'audio') {
      if (!m.url) return fileLink(m);
      return el(m.kind, { class: 'media-player', controls: '', preload: m.kind === 'video' ? 'metadata' : 'none', src: m.url, 'aria-label': `${m.kind === 'video' ? 'Video' : 'Audio'} from ${by}` });
    }
    if (m.kind === 'document') {
      if (!m.url) return fileLink(m);
      const p = el('p', { class: 'media-file' });
      p.appendChild(el('a', { href: m.url, download: m.name }, m.name));
      if (m.size) { p.appendChild(document.createTextNode(' ')); p.appendChild(el('span', { class: 'muted' }, `(${m.size})`)); }
      return p;
    }
    if (m.kind === 'location') {
      const p = el('p', { class: 'media-location' }, `Location: ${m.name} `);
      p.appendChild(el('a', { href: m.map, target: '_blank', rel: 'noopener noreferrer' }, 'map'));
      return p;
    }
    const ul = el('ul', { class: 'media-contacts' });
    for (const c of m.contacts || []) ul.appendChild(el('li', {}, c.phones.length ? `${c.name}: ${c.phones.join(', ')}` : c.name));
    return ul;
  };
  const bubble = (i) => {
    const li = document.createElement('li');
    li.className = `bubble ${i.kind}`;
    li.setAttribute('data-item', i.key);
    li.setAttribute('data-author', i.authorKind);
    li.appendChild(para('by', [['author', i.author], ['muted', i.when]]));
    if (i.media) li.appendChild(media(i.media, i.author));
    const text = document.createElement('p');
    text.className = 'message-text';
    text.textContent = i.text;
    li.appendChild(text);
    const meta = document.createElement('p');
    meta.className = 'meta muted';
    meta.textContent = i.meta;
    li.appendChild(meta);
    return li;
  };
  let last = '';
  const tick = () => {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
      .then((c) => {
        set('conversation-state', c.state);
        set('conversation-window', c.window);
        set('conversation-assignee', c.assignee);
        set('conversation-labels', c.labels);
        set('conversation-resolution', c.resolution);
        const seen = JSON.stringify(c.items);
        if (seen !== last) {
          const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
          last = seen;
          list.replaceChildren(...c.items.map(bubble));
          if (atEnd) list.scrollTop = list.scrollHeight;
          const none = document.getElementById('no-messages');
          if (none) none.hidden = c.items.length > 0;
        }
        setTimeout(tick, 3000);
      })
      .catch(() => setTimeout(tick, 10000));
  };
  list.scrollTop = list.scrollHeight;
  setTimeout(tick, 3000);
})();

// The inbox's list follows new conversations and marks without a reload (its first page only):
// rows rendered and escaped by the server for the same search and filters.
(function liveInboxList() {
  const table = document.querySelector('table#conversations[data-live-list]:not([data-paged])');
  if (!table) return;
  const body = table.tBodies[0];
  const selected = document.querySelector('#conversations tr.selected');
  const url = table.getAttribute('data-live-list') + (table.getAttribute('data-live-list').includes('?') ? '&' : '?') + 'selected=' + (selected ? selected.getAttribute('data-conversation') : '');
  let last = null;
  const tick = () => {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
      .then((p) => {
        if (p.rows !== last && !table.contains(document.activeElement)) {
          body.innerHTML = p.rows;
          const none = document.getElementById('no-conversations');
          if (none) none.hidden = p.count > 0;
        }
        if (!table.contains(document.activeElement)) last = p.rows;
        // The tab's title leads with how many customers wait ("(3) Inbox · Dashboard"), kept current.
        if (typeof p.tab === 'string') document.title = p.tab + document.title.replace(/^\(\d+\+?\) /, '');
        setTimeout(tick, 4000);
      })
      .catch(() => setTimeout(tick, 12000));
  };
  setTimeout(tick, 1000);
})();

// A canned reply chosen in the reply form fills the message (the person may still edit it).
document.addEventListener('change', (event) => {
  const select = event.target.closest('select[data-fills]');
  if (!select || !select.value) return;
  const target = document.getElementById(select.getAttribute('data-fills'));
  if (target) { target.value = select.value; target.focus(); }
});
