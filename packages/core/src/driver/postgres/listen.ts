import pg from 'pg';
import { connectFailure } from './errors.ts';
import { WAKE_CHANNEL } from './statements.ts';
import { scrub } from './url.ts';

/**
 * A dedicated connection (outside the pool: a pooled client would go back to the pool and
 * stop hearing) that LISTENs on {@link WAKE_CHANNEL}. Enqueue and redrive NOTIFY it in
 * their transaction with the schema as payload; notifications of other schemas in the
 * same database are ignored. A dropped connection is reported once through `onError`
 * (never as an uncaught 'error' event) and the caller keeps polling.
 */
export async function listenForWake(
  config: { connectionString: string; options: string },
  schema: string,
  url: string,
  onWake: () => void,
  onError: (error: Error) => void,
): Promise<() => Promise<void>> {
  const client = new pg.Client({ ...config, application_name: 'onceq-listen' });
  let closing = false;
  client.on('error', (error) => {
    if (!closing) onError(new Error(`LISTEN connection lost: ${scrub(error.message, url)}`));
  });
  client.on('notification', (message) => {
    if (message.channel === WAKE_CHANNEL && message.payload === schema) onWake();
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${WAKE_CHANNEL}`);
  } catch (error) {
    closing = true;
    await client.end().catch(() => {});
    throw connectFailure(error, url);
  }
  return async () => {
    closing = true;
    await client.end().catch(() => {});
  };
}
