import type { Handler, Store } from '@onceq/core';
import type { Session, Sessions, SignInLimiter } from './security.ts';
import type { Throughput } from './throughput.ts';

/** Everything the routes share: the store, the safety settings, the sessions. */
export interface ConsoleState {
  store: Store;
  /** Writes (redrive) are possible at all. */
  allowWrites: boolean;
  /** The sign-in token; null when nothing needs signing in (read-only, no token set). */
  token: string | null;
  /** The operator set the token: every page, not only writes, needs a session. */
  tokenForReads: boolean;
  /** Payload field names shown as "(hidden)". */
  hideFields: ReadonlySet<string>;
  /** Handlers a preview can run, by name (built-in v1/v2 plus any configured module). */
  handlers: Readonly<Record<string, Handler>>;
  /** The handler the preview form selects first. */
  defaultHandler: string;
  /** The Host names a loopback console answers to; null when bound beyond this machine. */
  hostNames: ReadonlySet<string> | null;
  signIns: SignInLimiter;
  sessions: Sessions;
  throughput: Throughput;
  /** One line per write, to the operator's log (stderr for `onceq console`). */
  log: (line: string) => void;
}

/** One request as the pages see it. */
export interface Request0 {
  req: Request;
  url: URL;
  session: Session | null;
  /** The client's address, for the write log. */
  client: string;
  /**
   * The page header may name the store: the request passed the Host check and may read
   * (a refusal or a sign-in page before a token shows nothing of it).
   */
  showStore: boolean;
}
