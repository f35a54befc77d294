import type { WakeListener } from '../backend.ts';
import type { ConnectionPool } from './pool.ts';
import { WAKE_CHANNEL } from './statements.ts';

/** How long a probe notification may take to come back before LISTEN counts as deaf, ms. */
const PROBE_TIMEOUT_MS = 2000;
/** Waits between attempts to listen again after the listening connection was lost, ms (the last repeats). */
const RECONNECT_DELAYS_MS = [200, 500, 1000, 2000, 5000];

/**
 * LISTENs on {@link WAKE_CHANNEL} on one connection of `pool` ({@link ConnectionPool.listen}):
 * the store's own pool, so LISTEN costs no connection of its own, or, with
 * `?listen_url=`, a pool of one connection to that URL. Enqueue and redrive NOTIFY in
 * their transaction with the schema as payload; notifications of other schemas in the
 * same database are ignored.
 *
 * - **Proved, not assumed**: once listening it sends itself a probe through another
 *   connection (`probe`). A pooler in transaction mode runs the LISTEN on a server
 *   connection it then hands to others, so the probe never comes back: the listener
 *   reports that once (it rejects; the worker polls), and `?listen_url=` should name a
 *   direct connection.
 * - **Re-established**: a listening connection that drops (server restart, terminated
 *   backend) is reported once through `onError` (never as an uncaught 'error' event);
 *   the pool's next free connection listens again, tried with backoff until it works;
 *   `onWake` then fires once, for what was enqueued meanwhile.
 *   {@link WakeListener.live} says whether notifications arrive.
 */
export async function listenForWake(
  pool: ConnectionPool,
  schema: string,
  where: string,
  probe: (payload: string) => Promise<void>,
  onWake: () => void,
  onError: (error: Error) => void,
): Promise<WakeListener> {
  let closing = false;
  let pending: { payload: string; heard: () => void } | undefined;
  let reconnects = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Asks the pool for a connection and gives it back: a free connection listens again. */
  const retry = () => {
    const delay = RECONNECT_DELAYS_MS[Math.min(reconnects, RECONNECT_DELAYS_MS.length - 1)];
    reconnects++;
    timer = setTimeout(async () => {
      timer = undefined;
      if (closing || pool.listening()) return;
      await pool.query('SELECT 1').catch(() => {});
      if (!closing && !pool.listening()) retry();
    }, delay);
    timer.unref?.();
  };

  await pool.listen({
    channel: WAKE_CHANNEL,
    onNotification: (payload) => {
      if (payload === schema) onWake();
      else if (pending !== undefined && payload === pending.payload) pending.heard();
    },
    onLost: () => {
      if (closing) return;
      onError(
        new Error(
          `LISTEN connection to PostgreSQL at ${where} lost; polling until a connection listens again`,
        ),
      );
      retry();
    },
    onBack: () => {
      clearTimeout(timer);
      timer = undefined;
      reconnects = 0;
      onWake();
    },
  });

  const payload = `probe:${process.pid}:${crypto.randomUUID()}`;
  const heard = new Promise<boolean>((resolve) => {
    pending = { payload, heard: () => resolve(true) };
    setTimeout(() => resolve(false), PROBE_TIMEOUT_MS).unref?.();
  });
  const proved = await probe(payload).then(
    () => heard,
    () => false,
  );
  pending = undefined;
  if (!proved) {
    closing = true;
    pool.unlisten();
    throw new Error(
      `LISTEN on PostgreSQL at ${where} hears no notifications (a pooler in transaction mode?); set ?listen_url= to a direct connection for instant wake-up`,
    );
  }
  return {
    live: () => pool.listening(),
    close: async () => {
      closing = true;
      clearTimeout(timer);
      pool.unlisten();
    },
  };
}
