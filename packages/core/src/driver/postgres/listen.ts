import pg from 'pg';
import type { WakeListener } from '../backend.ts';
import { connectFailure } from './errors.ts';
import { WAKE_CHANNEL } from './statements.ts';
import { connectionSettings, describeTarget } from './url.ts';

/** How long a probe notification may take to come back before LISTEN counts as deaf, ms. */
const PROBE_TIMEOUT_MS = 2000;
/** Waits between attempts to re-establish a lost LISTEN connection, ms (the last repeats). */
const RECONNECT_DELAYS_MS = [200, 500, 1000, 2000, 5000];

/**
 * A dedicated connection (outside the pool: a pooled client would go back to the pool and
 * stop hearing) that LISTENs on {@link WAKE_CHANNEL}. Enqueue and redrive NOTIFY it in
 * their transaction with the schema as payload; notifications of other schemas in the
 * same database are ignored.
 *
 * - **Proved, not assumed**: once listening it sends itself a probe through the store's
 *   pool (`notify`). A pooler in transaction mode runs the LISTEN on a server connection
 *   it then hands to others, so the probe never comes back: the listener reports that
 *   once through `onError` (the worker polls) and closes, and `?listen_url=` should name
 *   a direct connection.
 * - **Re-established**: a connection that drops (server restart, terminated backend) is
 *   reported once through `onError` (never as an uncaught 'error' event), then
 *   reconnected with backoff until it works again; `onWake` then fires once, for what
 *   was enqueued meanwhile. {@link WakeListener.live} says whether notifications arrive.
 */
export async function listenForWake(
  listenUrl: string,
  schema: string,
  notify: (payload: string) => Promise<void>,
  onWake: () => void,
  onError: (error: Error) => void,
): Promise<WakeListener> {
  let closing = false;
  let live = false;
  let client: pg.Client | undefined;
  let probe: { payload: string; heard: () => void } | undefined;
  let reconnects = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const where = describeTarget(listenUrl);

  const connect = async (): Promise<pg.Client> => {
    const next = new pg.Client({
      ...connectionSettings(listenUrl).driver,
      application_name: 'onceq-listen',
    });
    next.on('error', () => lost(next, 'the connection broke'));
    next.on('end', () => lost(next, 'the connection closed'));
    next.on('notification', (message) => {
      if (message.channel !== WAKE_CHANNEL) return;
      if (message.payload === schema) onWake();
      else if (probe !== undefined && message.payload === probe.payload) probe.heard();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${WAKE_CHANNEL}`);
    } catch (error) {
      next.removeAllListeners('end');
      await next.end().catch(() => {});
      throw connectFailure(error, listenUrl);
    }
    return next;
  };

  /** Sends a probe through the pool; true when it came back on the LISTEN connection. */
  const hears = async (): Promise<boolean> => {
    const payload = `probe:${process.pid}:${crypto.randomUUID()}`;
    let heard!: () => void;
    const back = new Promise<boolean>((resolve) => {
      heard = () => resolve(true);
      setTimeout(() => resolve(false), PROBE_TIMEOUT_MS).unref?.();
    });
    probe = { payload, heard };
    try {
      await notify(payload);
      return await back;
    } finally {
      probe = undefined;
    }
  };

  const lost = (which: pg.Client, why: string) => {
    if (closing || which !== client) return;
    client = undefined;
    live = false;
    onError(
      new Error(
        `LISTEN connection to PostgreSQL at ${where} lost (${why}); polling until it is back`,
      ),
    );
    which.end().catch(() => {});
    schedule();
  };

  const schedule = () => {
    const delay = RECONNECT_DELAYS_MS[Math.min(reconnects, RECONNECT_DELAYS_MS.length - 1)];
    reconnects++;
    timer = setTimeout(async () => {
      timer = undefined;
      if (closing) return;
      try {
        const next = await connect();
        if (closing) {
          await next.end().catch(() => {});
          return;
        }
        client = next;
        live = true;
        reconnects = 0;
        onWake();
      } catch {
        schedule();
      }
    }, delay);
  };

  client = await connect();
  const first = client;
  const proved = await hears().catch(() => false);
  if (!proved) {
    closing = true;
    await first.end().catch(() => {});
    throw new Error(
      `LISTEN on PostgreSQL at ${where} hears no notifications (a pooler in transaction mode?); set ?listen_url= to a direct connection for instant wake-up`,
    );
  }
  live = true;
  return {
    live: () => live,
    close: async () => {
      closing = true;
      clearTimeout(timer);
      const current = client;
      client = undefined;
      live = false;
      await current?.end().catch(() => {});
    },
  };
}
