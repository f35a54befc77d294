/**
 * Who may do what. Reading needs nothing on a loopback console unless an operator set a
 * token; writing needs `--allow-writes`, a signed-in session (the token, once) and, on
 * every write, the session's CSRF token in the form plus an `Origin` equal to the page's
 * own. The session cookie is HttpOnly and SameSite=Strict. The Host header is checked
 * on a loopback console so a DNS-rebinding page cannot read it from another origin.
 * Failed sign-ins are limited per client address; an operator token must be hard to guess.
 */
import { timingSafeEqual } from 'node:crypto';
import { forbidden } from './errors.ts';

export const SESSION_COOKIE = 'onceq_console';
/** Sessions expire after this long, seconds. Default 12 h. */
export const SESSION_SECONDS = 12 * 3600;

export interface Session {
  id: string;
  csrf: string;
  /** The client address that signed in, for the write log. */
  client: string;
  /** Unix ms. */
  createdAt: number;
}

/** A random token: 24 bytes, base64url (the printed start-up token, session ids, CSRF tokens). */
export function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url');
}

/** Constant-time comparison of two secrets. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** In-memory sessions of this console process (a restart signs everyone out). */
export class Sessions {
  readonly #byId = new Map<string, Session>();

  create(client: string): Session {
    const session = { id: randomToken(), csrf: randomToken(), client, createdAt: Date.now() };
    this.#byId.set(session.id, session);
    return session;
  }

  /** The session named by the request's cookie, if it exists and has not expired. */
  fromRequest(req: Request): Session | null {
    const id = cookie(req, SESSION_COOKIE);
    if (id === null) return null;
    const session = this.#byId.get(id);
    if (session === undefined) return null;
    if (Date.now() - session.createdAt > SESSION_SECONDS * 1000) {
      this.#byId.delete(id);
      return null;
    }
    return session;
  }

  end(session: Session): void {
    this.#byId.delete(session.id);
  }
}

function cookie(req: Request, name: string): string | null {
  const header = req.headers.get('cookie');
  if (header === null) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The Set-Cookie value of a new session. */
export function sessionCookie(session: Session): string {
  return `${SESSION_COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_SECONDS}`;
}

/** The Set-Cookie value that ends a session in the browser. */
export function clearedCookie(): string {
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
}

/**
 * `host` as a URL carries it: lower case, IPv4 in dotted decimal, IPv6 in brackets
 * (`::1` → `[::1]`); null when it is not a host name or an IP literal.
 */
export function canonicalHost(host: string): string | null {
  const literal = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  if (!/^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/.test(literal)) return null;
  try {
    return new URL(`http://${literal}/`).hostname;
  } catch {
    return null;
  }
}

/**
 * True for a bind address only this machine can reach: `localhost`, an IPv4 literal in
 * 127.0.0.0/8, or `::1`. A name that merely starts with `127.` is a name like any other.
 */
export function isLoopback(host: string): boolean {
  const name = canonicalHost(host);
  if (name === null) return false;
  if (name === 'localhost' || name === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/**
 * The Host names a loopback console answers to: `localhost`, `127.0.0.1`, `[::1]` and
 * the address it is bound to (as a URL spells it). Nothing else: a DNS-rebinding page
 * sends its own name, whatever that name resolves to.
 */
export function hostNamesOf(bindHost: string): ReadonlySet<string> {
  const names = new Set(['localhost', '127.0.0.1', '[::1]']);
  const bound = canonicalHost(bindHost);
  if (bound !== null) names.add(bound);
  return names;
}

/** The name part of a Host header, lower-cased; null when the header is malformed. */
function hostName(hostHeader: string): string | null {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?$/.exec(hostHeader);
  return match === null ? null : (match[1] as string).toLowerCase();
}

/**
 * Refuses (403) a request to a loopback console whose Host header is not one of
 * `allowed` exactly: that is what a DNS-rebinding page sends. `allowed` null: the
 * console is bound beyond this machine and answers to any name.
 */
export function checkHost(req: Request, allowed: ReadonlySet<string> | null): void {
  if (allowed === null) return;
  const header = req.headers.get('host');
  const name = header === null ? null : hostName(header);
  if (name === null || !allowed.has(name)) {
    throw forbidden('bad_host', 'the Host header does not name this console');
  }
}

/**
 * Refuses (403) a state-changing request whose Origin is missing or is not this page's
 * own origin (`http://<Host>`): a form posted from another site.
 */
export function checkOrigin(req: Request): void {
  const origin = req.headers.get('origin');
  const host = req.headers.get('host');
  if (origin === null || host === null || origin !== `http://${host}`) {
    throw forbidden(
      'bad_origin',
      `write refused: the request came from ${origin === null ? 'an unknown origin' : JSON.stringify(origin)}, not from this console`,
    );
  }
}

/** Failed sign-ins one client address may make within {@link SIGN_IN_WINDOW} seconds. */
export const SIGN_IN_FAILURES = 10;
/** The window of {@link SIGN_IN_FAILURES}, seconds. Default 60. */
export const SIGN_IN_WINDOW = 60;
/** Past this many tracked addresses, the ones whose window has passed are forgotten. */
const TRACKED_CLIENTS = 10_000;

/**
 * Failed sign-ins by client address, on the console's clock (Unix seconds). A client
 * with {@link SIGN_IN_FAILURES} failures in the last {@link SIGN_IN_WINDOW} seconds is
 * refused (429) until the oldest of them leaves the window, whatever token it sends.
 */
export class SignInLimiter {
  readonly #failures = new Map<string, number[]>();
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** Seconds until `client` may try again; 0 when it may now. */
  waitFor(client: string): number {
    const recent = this.#recent(client);
    if (recent.length < SIGN_IN_FAILURES) return 0;
    return Math.max(1, (recent[0] as number) + SIGN_IN_WINDOW - this.#clock());
  }

  failed(client: string): void {
    if (this.#failures.size >= TRACKED_CLIENTS) {
      for (const known of [...this.#failures.keys()]) {
        if (this.#recent(known).length === 0) this.#failures.delete(known);
      }
    }
    this.#failures.set(client, [...this.#recent(client), this.#clock()]);
  }

  succeeded(client: string): void {
    this.#failures.delete(client);
  }

  #recent(client: string): number[] {
    const since = this.#clock() - SIGN_IN_WINDOW;
    return (this.#failures.get(client) ?? []).filter((at) => at > since);
  }
}

/** The shortest operator token accepted. */
export const MIN_TOKEN = 16;
/** The fewest different characters an operator token must hold. */
const MIN_DISTINCT = 8;

/**
 * Why `token` is no protection, as the end of a sentence naming the flag; null when it
 * will do. Refused: shorter than {@link MIN_TOKEN}, a space in it, fewer than 8 different
 * characters (`aaaaaaaaaaaaaaaa`, `abababab…`), one unit repeated (`qwertyuiqwertyui`), or mostly the same step from one
 * character to the next (`abcdefghijklmnop`, `0123456789abcdef`, `abcdabcdabcdabcd`).
 */
export function tokenProblem(token: string): string | null {
  const chars = [...token];
  const advice = 'use at least 16 random characters, e.g. the output of openssl rand -base64 24';
  if (chars.length < MIN_TOKEN || /\s/.test(token)) {
    return `must be at least ${MIN_TOKEN} characters without spaces: ${advice}`;
  }
  // A random token changes direction at almost every character; a run (`abcdefgh…`) or
  // a cycle (`abcdabcd…`) repeats the same step from one character to the next.
  const points = chars.map((c) => c.codePointAt(0) as number);
  const steps = points.slice(1).map((p, i) => p - (points[i] as number));
  const turns = steps.slice(1).filter((step, i) => step !== steps[i]).length;
  const cycle = /^(.+)\1+$/su.test(token);
  if (new Set(chars).size < MIN_DISTINCT || cycle || turns < steps.length / 2) {
    return `is too easy to guess (it repeats a few characters or runs in order): ${advice}`;
  }
  return null;
}
