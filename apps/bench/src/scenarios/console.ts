/**
 * The web console on 100,000 messages: time to answer the overview and a page of 50
 * messages over real HTTP (Bun.serve on 127.0.0.1, fetch from the same process).
 *
 * Like scenarios/status.ts, rows are inserted directly with 7-character ids (the store's
 * event-id CHECK allows only E0000–E9999); schema and indexes are the real store's.
 * States: 80 % done (with effects), 10 % ready, 5 % leased, 5 % dead.
 * The overview is cached for one second by the console, so each overview sample waits
 * that second out first: every figure is a real read of the store.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { startConsole } from '@onceq/console';
import { openStore, type Store } from '@onceq/core';
import { CompiledQuery, sql } from 'kysely';
import { dropIdChecks, dropSchema, withPostgres } from '../raw-db.ts';
import { msCell, section, table } from '../report.ts';
import { removeDb, type Spread, spread } from '../util.ts';

/** The pages measured, and how. */
const PAGES: [string, string][] = [
  ['overview (/)', '/'],
  ['overview live fragment', '/overview/live'],
  ['messages, first page of 50 (+ count)', '/messages'],
  ['messages, a later page of 50', '/messages?after=E050000'],
  ['dead letters, page of 50', '/dlq'],
  ['messages by error code', '/messages?code=invalid_payload'],
  ['messages, newest change first', '/messages?order=newest'],
  ['messages, id prefix E0999', '/messages?prefix=E0999'],
  ['one message', '/messages/E012345'],
];

/** The console's figures: the overview and a page of 50 answer under this, ms. */
export const CONSOLE_TARGET_MS = 100;

export interface ConsoleBench {
  backend: 'sqlite' | 'pg';
  messages: number;
  pages: { what: string; path: string; ms: Spread }[];
}

const STATES = `CASE WHEN i % 20 < 16 THEN 'done' WHEN i % 20 < 18 THEN 'ready' WHEN i % 20 < 19 THEN 'leased' ELSE 'dead' END`;

function fillSql(series: string, id: string, now: string): string {
  return `${series}
    INSERT INTO messages (event_id, payload, state, attempts, generation, available_at, lease_until,
      last_error_code, last_error_detail, enqueued_at, updated_at)
    SELECT ${id}, '{"amount_cents":' || (1 + (i * 7919) % 99999) || ',"category":"book"}', ${STATES},
      1, 1, ${now} - (i % 3600), CASE WHEN i % 20 = 18 THEN ${now} + 86400 ELSE NULL END,
      CASE WHEN i % 20 = 19 THEN 'invalid_payload' ELSE NULL END,
      CASE WHEN i % 20 = 19 THEN 'rejected' ELSE NULL END, ${now} - 7200, ${now} - (i % 7200)
    FROM s`;
}

function effectsSql(now: string): string {
  return `INSERT INTO effects (event_id, category, amount_cents, created_at)
    SELECT event_id, 'book', 100, ${now} FROM messages WHERE state = 'done'`;
}

async function measure(
  store: Store,
  backend: 'sqlite' | 'pg',
  messages: number,
  repeats: number,
): Promise<ConsoleBench> {
  const running = startConsole({ store, port: 0, log: () => {} });
  try {
    const pages: ConsoleBench['pages'] = [];
    for (const [what, path] of PAGES) {
      const times: number[] = [];
      await (await fetch(running.url + path)).text(); // warm-up
      for (let i = 0; i < repeats; i++) {
        if (path === '/' || path === '/overview/live') await Bun.sleep(1050); // past the 1 s cache
        const t0 = performance.now();
        const res = await fetch(running.url + path);
        await res.text();
        times.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      }
      pages.push({ what, path, ms: spread(times) });
    }
    return { backend, messages, pages };
  } finally {
    await running.stop();
  }
}

export async function runSqliteConsole(
  path: string,
  messages: number,
  repeats: number,
): Promise<ConsoleBench> {
  removeDb(path);
  await (await openStore(path)).close();
  const raw = new BunDatabase(path);
  raw.run('PRAGMA ignore_check_constraints = ON');
  const now = String(Math.floor(Date.now() / 1000));
  raw.run(
    fillSql(
      'WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?1) ',
      `printf('E%06d', i)`,
      now,
    ),
    [messages],
  );
  raw.run(effectsSql(now));
  raw.run('ANALYZE');
  raw.close(false);
  const store = await openStore(path);
  try {
    return await measure(store, 'sqlite', messages, repeats);
  } finally {
    await store.close();
    removeDb(path);
  }
}

export async function runPgConsole(
  url: string,
  messages: number,
  repeats: number,
): Promise<ConsoleBench> {
  const schema = `onceq_bench_console_${process.pid}`;
  const store = await openStore(url, { schema });
  try {
    await withPostgres(url, schema, async (db) => {
      await dropIdChecks(db);
      const now = String(Math.floor(Date.now() / 1000));
      await db.executeQuery(
        CompiledQuery.raw(
          fillSql(
            'WITH s(i) AS (SELECT generate_series(0, $1::int - 1)) ',
            `'E' || lpad(i::text, 6, '0')`,
            now,
          ),
          [messages],
        ),
      );
      await db.executeQuery(CompiledQuery.raw(effectsSql(now), []));
      await sql`ANALYZE`.execute(db);
    });
    return await measure(store, 'pg', messages, repeats);
  } finally {
    await store.close();
    await dropSchema(url, schema);
  }
}

/** The report section and target rows of one run. */
export function consoleReport(bench: ConsoleBench): {
  text: string[];
  targets: { target: string; measured: string; met: boolean | null }[];
} {
  const text = [
    section(
      `web console on ${bench.messages.toLocaleString('en')} messages (${bench.backend}, HTTP round trip, synthetic ids, see scenarios/console.ts)`,
    ),
    table(
      ['page', 'ms median (min–max)'],
      bench.pages.map((p) => [`${p.what}  ${p.path}`, msCell(p.ms)]),
    ),
  ];
  const targets = bench.pages
    .filter((p) => p.path === '/' || p.path === '/messages')
    .map((p) => ({
      target: `console ${p.what} < ${CONSOLE_TARGET_MS} ms (${bench.backend})`,
      measured: `${msCell(p.ms)} ms`,
      met: p.ms.median < CONSOLE_TARGET_MS,
    }));
  return { text, targets };
}
