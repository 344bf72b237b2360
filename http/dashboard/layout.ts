/** The page shell: head, the header with the person and logout, the project's tabs, a notice. */
import { html, type Html } from './html.js';
import type { Role } from '../../lib/accounts/roles.js';

export interface Shell {
  title: string;
  /** Put before the title in the browser's tab only (the inbox's waiting count, "(3)"). */
  tabPrefix?: string;
  /** The signed-in person (absent on the sign-in and setup pages). */
  person?: { email: string; csrf: string };
  /** The project whose tabs are shown. */
  project?: { id: string; name: string; role: Role; tab: string };
  notice?: string;
  error?: string;
}

const TABS: Array<{ tab: string; label: string; roles?: Role[] }> = [
  { tab: 'overview', label: 'Overview' },
  { tab: 'conversations', label: 'Inbox' },
  { tab: 'broadcasts', label: 'Broadcasts' },
  { tab: 'contacts', label: 'Contacts' },
  { tab: 'groups', label: 'Groups' },
  { tab: 'keys', label: 'API keys', roles: ['owner', 'admin'] },
  { tab: 'webhooks', label: 'Webhooks' },
  { tab: 'templates', label: 'Templates' },
  { tab: 'bot', label: 'Bot' },
  { tab: 'schedules', label: 'Scheduled tasks' },
  { tab: 'database', label: 'Database' },
  { tab: 'secrets', label: 'Secrets' },
  { tab: 'files', label: 'Files and media' },
  { tab: 'flows', label: 'Flows' },
  { tab: 'logs', label: 'Logs' },
  { tab: 'billing', label: 'Billing' },
  { tab: 'people', label: 'People' },
  { tab: 'audit', label: 'Audit trail', roles: ['owner'] },
];

/**
 * htmx's settings (docs/dashboard.md): no inline style or eval (the CSP forbids both), no page
 * snapshots in the browser's storage (back reloads), a refusal's page (4xx, its reason in words)
 * swapped in like any answer (a 5xx is shown by dashboard.js, which also places the window).
 */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false, allowEval: false, allowScriptTags: false, historyCacheSize: 0, refreshOnHistoryMiss: true, scrollIntoViewOnBoost: false,
  responseHandling: [{ code: '204', swap: false }, { code: '[23]..', swap: true }, { code: '4..', swap: true, error: false }, { code: '...', swap: false, error: true }],
});

export function projectPath(projectId: string, rest = ''): string {
  return `/dashboard/projects/${encodeURIComponent(projectId)}${rest}`;
}

export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}

export function layout(shell: Shell, body: Html): Html {
  const p = shell.project;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${shell.tabPrefix ?? ''}${shell.title} · Dashboard</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
<meta name="htmx-config" content='${HTMX_CONFIG}'>
<script src="/dashboard/assets/htmx.min.js" defer></script>
<script src="/dashboard/assets/htmx-ext-sse.min.js" defer></script>
<script src="/dashboard/assets/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/dashboard">Dashboard</a>
  ${shell.person ? html`<form method="post" action="/dashboard/logout" class="logout">
    ${csrfField(shell.person.csrf)}
    <span class="who">${shell.person.email}</span>
    <button type="submit">Sign out</button>
  </form>` : ''}
</header>
${p ? html`<nav class="tabs" aria-label="Project sections">
  <span class="project-name">${p.name} <small>(${p.role})</small></span>
  <ul>${TABS.filter((t) => !t.roles || t.roles.includes(p.role)).map((t) => html`<li><a href="${projectPath(p.id, '/' + t.tab)}"${t.tab === p.tab ? html` aria-current="page"` : ''}>${t.label}</a></li>`)}</ul>
</nav>` : ''}
<main id="main">
<h1>${shell.title}</h1>
${shell.notice ? html`<p class="notice" role="status">${shell.notice}</p>` : ''}
${shell.error ? html`<p class="error" role="alert">${shell.error}</p>` : ''}
${body}
</main>
</body>
</html>`;
}
