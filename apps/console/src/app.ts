/**
 * The router: one function from a request to a response. Every route, the checks in
 * front of them (Host, sign-in where reads need it) and the mapping of refusals to
 * status codes live here; the pages only render.
 */
import { OnceqError } from '@onceq/core';
import { printable } from '@onceq/core/internal';
import { CLIENT_SCRIPT } from './assets/client.ts';
import { ICON, STYLE } from './assets/style.ts';
import type { ConsoleState, Request0 } from './context.ts';
import { badParam, ConsoleRequestError } from './errors.ts';
import { errorPage, redirect, SECURITY_HEADERS } from './layout.ts';
import { deliveriesPage, deliveriesRedriveAction } from './pages/deliveries.ts';
import { keysPage } from './pages/keys.ts';
import { loginAction, loginPage, logoutAction } from './pages/login.ts';
import { messagePage } from './pages/message.ts';
import { listPage } from './pages/messages.ts';
import { overviewLive, overviewPage } from './pages/overview.ts';
import { previewPage, redriveAction } from './pages/redrive.ts';
import { checkHost } from './security.ts';

type Route = (state: ConsoleState, r: Request0, match: string) => Promise<Response> | Response;

const ASSETS: Record<string, [string, string]> = {
  '/assets/style.css': ['text/css; charset=utf-8', STYLE],
  '/assets/console.js': ['text/javascript; charset=utf-8', CLIENT_SCRIPT],
  '/favicon.svg': ['image/svg+xml', ICON],
};

const GET: [RegExp, Route][] = [
  [/^\/$/, overviewPage],
  [/^\/overview\/live$/, overviewLive],
  [/^\/messages$/, (s, r) => listPage(s, r, 'messages')],
  [/^\/messages\/([^/]+)$/, (s, r, id) => messagePage(s, r, pathId(id))],
  [/^\/dlq$/, (s, r) => listPage(s, r, 'dlq')],
  [/^\/dlq\/preview$/, previewPage],
  [/^\/deliveries$/, deliveriesPage],
  [/^\/keys$/, keysPage],
  [/^\/login$/, loginPage],
];

const POST: [RegExp, Route][] = [
  [/^\/dlq\/preview$/, previewPage],
  [/^\/dlq\/redrive$/, redriveAction],
  [/^\/deliveries\/redrive$/, deliveriesRedriveAction],
  [/^\/login$/, loginAction],
  [/^\/logout$/, logoutAction],
];

/** Paths a visitor may open before signing in on a console whose reads need the token. */
const OPEN_PATHS = new Set(['/login', '/favicon.ico', ...Object.keys(ASSETS)]);

/** The id in a `/messages/<id>` path; a bad percent-encoding is a 400, not a 500. */
function pathId(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw badParam('id', 'the message id in the address is not valid percent-encoding');
  }
}

function find(routes: [RegExp, Route][], path: string): [Route, string] | null {
  for (const [pattern, route] of routes) {
    const match = pattern.exec(path);
    if (match !== null) return [route, match[1] ?? ''];
  }
  return null;
}

/**
 * The answer to a request that cannot be read at all (no Host, a Host that is not a
 * host) or that the Host check refuses: plain text, nothing of the store, no layout.
 */
export function bareRefusal(status: number, message: string): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' },
  });
}

/** The console's request handler (`Bun.serve`'s `fetch`). */
export function consoleFetch(state: ConsoleState) {
  return async (req: Request, client: string): Promise<Response> => {
    let url: URL;
    try {
      url = new URL(req.url);
      checkHost(req, state.hostNames);
    } catch (error) {
      if (error instanceof ConsoleRequestError) return bareRefusal(error.status, error.message);
      return bareRefusal(400, 'malformed request: it names no valid Host');
    }
    const r: Request0 = {
      req,
      url,
      session: state.sessions.fromRequest(req),
      client,
      showStore: false,
    };
    try {
      const asset = ASSETS[url.pathname];
      if (asset !== undefined && (req.method === 'GET' || req.method === 'HEAD')) {
        return new Response(asset[1], {
          headers: { ...SECURITY_HEADERS, 'content-type': asset[0], 'cache-control': 'no-cache' },
        });
      }
      if (url.pathname === '/favicon.ico') return new Response(null, { status: 204 });
      if (state.tokenForReads && r.session === null && !OPEN_PATHS.has(url.pathname)) {
        if (req.method === 'GET')
          return redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}`);
        throw new ConsoleRequestError(403, 'not_signed_in', 'sign in with the console token first');
      }
      r.showStore = !state.tokenForReads || r.session !== null;
      const table =
        req.method === 'GET' || req.method === 'HEAD' ? GET : req.method === 'POST' ? POST : null;
      const found = table === null ? null : find(table, url.pathname);
      if (found === null) {
        const other = find(GET, url.pathname) ?? find(POST, url.pathname);
        if (other !== null) {
          return errorPage(state, r, 405, `${req.method} is not allowed here`);
        }
        return errorPage(state, r, 404, 'There is no page at this address.');
      }
      return await found[0](state, r, found[1]);
    } catch (error) {
      if (error instanceof ConsoleRequestError) {
        return errorPage(state, r, error.status, error.message, error.headers);
      }
      if (error instanceof OnceqError)
        return errorPage(state, r, 500, `the store refused: ${error.message}`);
      state.log(
        `onceq console: internal error on ${req.method} ${printable(url.pathname)}: ${printable((error as Error).message)}`,
      );
      return errorPage(
        state,
        r,
        500,
        'Internal error: the console logged it on its standard error.',
      );
    }
  };
}
