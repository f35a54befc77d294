import type { ConsoleState, Request0 } from './context.ts';
import { type Html, html } from './html.ts';

export type Section = 'overview' | 'messages' | 'dlq' | 'keys' | 'deliveries' | 'login' | 'none';

const NAV: [Section, string, string][] = [
  ['overview', '/', 'Overview'],
  ['messages', '/messages', 'Messages'],
  ['dlq', '/dlq', 'Dead letters'],
  ['keys', '/keys', 'Blocked keys'],
  ['deliveries', '/deliveries', 'Deliveries'],
];

/** Headers every answer carries: no caching, no framing, scripts and styles from here only. */
export const SECURITY_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

function modeBadge(state: ConsoleState, r: Request0): Html {
  const mode = !state.allowWrites
    ? html`<span class="mode">read-only</span>`
    : r.session === null
      ? html`<span class="mode writes">writes allowed after <a href="/login">sign-in</a></span>`
      : html`<span class="mode writes">signed in: writes allowed</span>`;
  if (r.session === null) return mode;
  return html`${mode}<form method="post" action="/logout"><input type="hidden" name="csrf" value="${r.session.csrf}"><button class="secondary" type="submit">Sign out</button></form>`;
}

/** A whole page: header with navigation, store and mode, then `body`. */
export function page(
  state: ConsoleState,
  r: Request0,
  section: Section,
  title: string,
  body: Html,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  const doc = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · onceq console</title>
<link rel="stylesheet" href="/assets/style.css">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<script src="/assets/console.js" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a>
<header><span class="brand">onceq console</span>
<nav aria-label="Main">${NAV.map(([key, href, label]) => html`<a href="${href}"${key === section ? html` aria-current="page"` : ''}>${label}</a>`)}</nav>
${r.showStore ? html`<span class="store" title="the store">${state.store.location} (${state.store.kind})</span>` : ''}
${modeBadge(state, r)}</header>
<main id="main">${body}</main></body></html>`;
  return htmlResponse(doc.text, status, headers);
}

export function htmlResponse(
  text: string,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(text, {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS, ...headers },
  });
}

/** A 303 to `location` (after a form post, or to the sign-in page). */
export function redirect(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, {
    status: 303,
    headers: { location, ...SECURITY_HEADERS, ...headers },
  });
}

/** A page that says what went wrong, in plain words, with the status it deserves. */
export function errorPage(
  state: ConsoleState,
  r: Request0,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  const title =
    status === 404
      ? 'Not found'
      : status === 403 || status === 409
        ? 'Refused'
        : status === 429
          ? 'Too many attempts'
          : 'Problem';
  return page(
    state,
    r,
    'none',
    title,
    html`<h1>${title}</h1><p class="notice bad" role="alert">${message}</p><p><a href="/">Back to the overview</a></p>`,
    status,
    headers,
  );
}
