/**
 * `status()` (what `onceq status` runs) and a claim on a large store, with the query
 * plans of the status, claim and recovery queries as core issues them.
 *
 * Event ids are `E0000`–`E9999` (docs/protocol.md §2, pinned by a CHECK), so a real store never
 * holds more than 10,000 messages. To measure 100,000 the rows are inserted directly
 * with 7-character ids (SQLite: `PRAGMA ignore_check_constraints`; PostgreSQL: the
 * event-id CHECK is dropped in the throwaway schema); everything else (schema,
 * indexes, row shape) is the real store's. States: 80 % done (with effects),
 * 10 % ready, 5 % leased (lease in the future), 5 % dead.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { openStore, type Store, status } from '@onceq/core';
import { claimMany } from '@onceq/core/internal';
import { CompiledQuery, sql } from 'kysely';
import { dropIdChecks, dropSchema, sqliteRows, withPostgres } from '../raw-db.ts';
import { removeDb, type Spread, spread } from '../util.ts';

export interface StatusResult {
  backend: 'sqlite' | 'pg';
  messages: number;
  statusMs: Spread;
  claimMs: Spread;
  plans: { query: string; sql: string; plan: string[] }[];
}

const STATES_SQL = `CASE WHEN i % 20 < 16 THEN 'done' WHEN i % 20 < 18 THEN 'ready' WHEN i % 20 < 19 THEN 'leased' ELSE 'dead' END`;

export async function runSqliteStatus(
  path: string,
  messages: number,
  repeats: number,
): Promise<StatusResult> {
  removeDb(path);
  await (await openStore(path)).close();
  const raw = new BunDatabase(path);
  raw.run('PRAGMA journal_mode = WAL');
  raw.run('PRAGMA ignore_check_constraints = ON');
  const now = nowSeconds();
  const fill = raw.prepare(
    fillMessagesSql(
      'WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?1) ',
      `printf('E%06d', i)`,
    ),
  );
  fill.run(messages, now);
  fill.finalize();
  const effects = raw.prepare(fillEffectsSql());
  effects.run(now);
  effects.finalize();
  raw.run('ANALYZE');
  raw.close(false);
  const store = await openStore(path, { onQuery: recordQuery });
  try {
    const explain: Explain = async (text, parameters) =>
      sqliteRows(path, `EXPLAIN QUERY PLAN ${text}`, parameters);
    return await measure(store, 'sqlite', explain, messages, repeats);
  } finally {
    await store.close();
    removeDb(path);
  }
}

export async function runPgStatus(
  url: string,
  messages: number,
  repeats: number,
): Promise<StatusResult> {
  const schema = `onceq_bench_status_${process.pid}`;
  const store = await openStore(url, { schema, onQuery: recordQuery });
  try {
    await withPostgres(url, schema, async (db) => {
      await dropIdChecks(db);
      const now = nowSeconds();
      await db.executeQuery(
        CompiledQuery.raw(
          fillMessagesSql(
            'WITH s(i) AS (SELECT generate_series(0, $1::int - 1)) ',
            `'E' || lpad(i::text, 6, '0')`,
          ).replaceAll('?2', '$2::bigint'),
          [messages, now],
        ),
      );
      await db.executeQuery(
        CompiledQuery.raw(fillEffectsSql().replaceAll('?1', '$1::bigint'), [now]),
      );
      await sql`ANALYZE`.execute(db);
    });
    const explain: Explain = (text, parameters) =>
      withPostgres(url, schema, async (db) => {
        const { rows } = await db.executeQuery<Record<string, unknown>>(
          CompiledQuery.raw(`EXPLAIN ${text}`, [...parameters]),
        );
        return rows;
      });
    return await measure(store, 'pg', explain, messages, repeats);
  } finally {
    await store.close();
    await dropSchema(url, schema);
  }
}

/** Where `onQuery` (core's statement hook) reports to while {@link plans} listens. */
let listener: ((query: CompiledQuery) => void) | null = null;

function recordQuery(sqlText: string, parameters: readonly unknown[]): void {
  listener?.(CompiledQuery.raw(sqlText, [...parameters]));
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000) - 3600;
}

/** `book`, `pen` or `bag` by `n % 3`, as SQL both backends read. */
function category3(n: string): string {
  return `CASE ${n} % 3 WHEN 0 THEN 'book' WHEN 1 THEN 'pen' ELSE 'bag' END`;
}

/** INSERT … SELECT of `messages` rows numbered by `i` (SQLite and PostgreSQL spelling). */
function fillMessagesSql(series: string, id: string): string {
  const category = category3('i');
  return `${series}
    INSERT INTO messages (event_id, payload, state, attempts, generation, available_at, lease_until,
      last_error_code, last_error_detail, enqueued_at, updated_at)
    SELECT ${id},
      '{"amount_cents":' || (1 + (i * 7919) % 99999) || ',"category":"' || ${category} || '"}',
      ${STATES_SQL},
      CASE WHEN i % 20 BETWEEN 16 AND 17 THEN 0 ELSE 1 END,
      CASE WHEN i % 20 BETWEEN 16 AND 17 THEN 0 ELSE 1 END,
      ?2,
      CASE WHEN i % 20 = 18 THEN ?2 + 7 * 86400 ELSE NULL END,
      CASE WHEN i % 20 = 19 THEN 'invalid_payload' ELSE NULL END,
      CASE WHEN i % 20 = 19 THEN 'rejected' ELSE NULL END,
      ?2, ?2
    FROM s`;
}

/** One effect per done message. */
function fillEffectsSql(): string {
  const category = category3('event_id_num');
  return `INSERT INTO effects (event_id, category, amount_cents, created_at)
    SELECT event_id, ${category}, 1 + (event_id_num * 7919) % 99999, ?1
    FROM (SELECT event_id, CAST(substr(event_id, 2) AS INTEGER) AS event_id_num
          FROM messages WHERE state = 'done') d`;
}

/** The backend's plan of one statement, read on a connection of the bench's own. */
type Explain = (text: string, parameters: readonly unknown[]) => Promise<Record<string, unknown>[]>;

async function measure(
  store: Store,
  backend: 'sqlite' | 'pg',
  explain: Explain,
  messages: number,
  repeats: number,
): Promise<StatusResult> {
  const statusTimes: number[] = [];
  await status(store); // warm-up: statement preparation, page cache
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    const report = await status(store);
    statusTimes.push(performance.now() - t0);
    const counted =
      report.messages.done + report.messages.ready + report.messages.leased + report.messages.dead;
    if (counted !== messages) throw new Error(`status counted ${counted} of ${messages} messages`);
  }
  const claimTimes: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await claimMany(store, { limit: 1 });
    claimTimes.push(performance.now() - t0);
  }
  return {
    backend,
    messages,
    statusMs: spread(statusTimes),
    claimMs: spread(claimTimes),
    plans: await plans(store, backend, explain),
  };
}

/**
 * Runs status and a claim through core with every statement captured (core's `onQuery`
 * hook), then EXPLAINs them.
 */
async function plans(
  store: Store,
  backend: 'sqlite' | 'pg',
  explain: Explain,
): Promise<StatusResult['plans']> {
  const captured: CompiledQuery[] = [];
  const seen = new Set<string>();
  const keep = (query: CompiledQuery) => {
    const key = `${query.sql}\u0000${JSON.stringify(query.parameters, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`;
    if (seen.has(key)) return;
    seen.add(key);
    captured.push(query);
  };
  const isStatement = (q: CompiledQuery) =>
    !/^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/i.test(q.sql);
  listener = keep;
  let statusQueries: CompiledQuery[];
  let claimQueries: CompiledQuery[];
  try {
    await status(store);
    statusQueries = captured.splice(0).filter(isStatement);
    await claimMany(store, { limit: 10 });
    claimQueries = captured.splice(0).filter(isStatement);
  } finally {
    listener = null;
  }
  const named = [
    ...statusQueries.map((q, i) => ({ query: `status #${i + 1}`, q })),
    ...claimQueries.map((q, i) => ({
      query:
        i === 0 && claimQueries.length > 1
          ? 'claim: recovery'
          : `claim: ${q.sql.trim().split(/\s/)[0]} (step ${i + 1})`,
      q,
    })),
  ];
  const out: StatusResult['plans'] = [];
  for (const { query, q } of named) {
    const rows = await explain(q.sql, q.parameters);
    let plan: string[];
    if (backend === 'sqlite') {
      const depth = new Map<number, number>();
      plan = rows.map((r) => {
        const d = (depth.get(Number(r.parent)) ?? -1) + 1;
        depth.set(Number(r.id), d);
        return `${'  '.repeat(d)}${String(r.detail)}`;
      });
    } else {
      plan = rows.map((r) => String(r['QUERY PLAN']));
    }
    out.push({ query, sql: q.sql, plan });
  }
  return out;
}
