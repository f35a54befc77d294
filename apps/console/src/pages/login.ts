/** Sign-in with the console token, and sign-out. Both are posts checked for their Origin. */
import type { ConsoleState, Request0 } from '../context.ts';
import { ConsoleRequestError, forbidden } from '../errors.ts';
import { html } from '../html.ts';
import { page, redirect } from '../layout.ts';
import { readForm } from '../params.ts';
import { checkOrigin, clearedCookie, sameSecret, sessionCookie } from '../security.ts';

/**
 * Only a local path of this console (never `//other.host`), in printable ASCII (a CR,
 * LF or NUL could not go into the Location header) and of a sane length; else `/`.
 */
function safeNext(next: unknown): string {
  return typeof next === 'string' && next.length <= 2000 && /^\/(?![/\\])[\x21-\x7e]*$/.test(next)
    ? next
    : '/';
}

function loginForm(
  state: ConsoleState,
  r: Request0,
  next: string,
  error: string | null,
  status: number,
): Response {
  return page(
    state,
    r,
    'login',
    'Sign in',
    html`<h1>Sign in</h1>
<p class="muted">${state.allowWrites ? 'Redriving needs the token the console printed when it started (or ONCEQ_CONSOLE_TOKEN).' : 'This console was started with a token: every page needs it.'}</p>
<form method="post" action="/login" class="filters"><input type="hidden" name="next" value="${next}">
<div class="field"><label for="f-token">Console token</label>
<input id="f-token" name="token" type="password" autocomplete="current-password" required${error === null ? '' : html` aria-invalid="true" aria-describedby="err-token"`}>
${error === null ? '' : html`<p class="error" id="err-token" role="alert">${error}</p>`}</div>
<div class="field"><button type="submit">Sign in</button></div></form>`,
    status,
  );
}

export function loginPage(state: ConsoleState, r: Request0): Response {
  if (state.token === null) {
    return page(
      state,
      r,
      'login',
      'Sign in',
      html`<h1>Sign in</h1><p class="notice">Nothing to sign in to: this console is read-only and has no token. Start it with <code>onceq console --allow-writes</code> to redrive.</p>`,
    );
  }
  return loginForm(state, r, safeNext(r.url.searchParams.get('next')), null, 200);
}

export async function loginAction(state: ConsoleState, r: Request0): Promise<Response> {
  if (state.token === null)
    throw forbidden('no_token', 'this console is read-only and has no token to sign in with');
  checkOrigin(r.req);
  const wait = state.signIns.waitFor(r.client);
  if (wait > 0) {
    throw new ConsoleRequestError(
      429,
      'too_many_sign_ins',
      `too many failed sign-ins from this address: try again in ${wait} s`,
      null,
      { 'retry-after': String(wait) },
    );
  }
  const form = await readForm(r.req);
  const token = form.get('token');
  const next = safeNext(form.get('next'));
  if (typeof token !== 'string' || !sameSecret(token, state.token)) {
    state.signIns.failed(r.client);
    state.log(`onceq console: failed sign-in from ${r.client}`);
    return loginForm(state, r, next, 'That is not the token this console printed at start.', 403);
  }
  state.signIns.succeeded(r.client);
  const session = state.sessions.create(r.client);
  state.log(`onceq console: signed in: session ${session.id.slice(0, 6)} from ${r.client}`);
  return redirect(next, { 'set-cookie': sessionCookie(session) });
}

export async function logoutAction(state: ConsoleState, r: Request0): Promise<Response> {
  checkOrigin(r.req);
  const form = await readForm(r.req);
  const csrf = form.get('csrf');
  if (r.session !== null) {
    if (typeof csrf !== 'string' || !sameSecret(csrf, r.session.csrf)) {
      throw forbidden('bad_csrf', 'the form did not come from this console (CSRF check failed)');
    }
    state.sessions.end(r.session);
  }
  return redirect('/', { 'set-cookie': clearedCookie() });
}
