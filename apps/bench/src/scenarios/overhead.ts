/**
 * Where per-message time goes, in one process without contention (SQLite NORMAL, so
 * fsync does not drown the CPU costs):
 *
 * - `core` / `bare`: the whole per-message cycle (claim tx + handler + completion tx), µs per message;
 * - `kysely compile`: building and compiling the five statements of a per-message
 *   cycle with Kysely (mirrors queue/claim.ts, queue/complete.ts and the driver statements modules; no I/O);
 * - `empty write transaction`: `store.transact(async () => {})` versus a raw
 *   `BEGIN IMMEDIATE; COMMIT` (x2 per message);
 * - `handler`: strict `parseJson` + v1 handler (zod), paid by core and bare alike.
 */
import { Database as BunDatabase } from 'bun:sqlite';
import { openStore } from '@onceq/core';
import { claimMany, complete, type Database, parseJson, runHandler } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import {
  DummyDriver,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { BareQueue } from '../bare.ts';
import { line } from '../util.ts';
import type { StoreFactory } from './processing.ts';

export interface OverheadResult {
  /** µs per message or per operation. */
  coreCycleUs: number;
  bareCycleUs: number;
  kyselyCompileUs: number;
  storeTxUs: number;
  rawTxUs: number;
  handlerUs: number;
}

export async function runOverhead(
  factory: StoreFactory,
  messages: number,
): Promise<OverheadResult> {
  // Whole cycle, core.
  const core = await factory.prepare(messages);
  const store = await openStore(core.target, { synchronous: 'NORMAL' });
  let t0 = performance.now();
  for (;;) {
    const leases = await claimMany(store, { limit: 1 });
    if (leases.length === 0) break;
    const results = [];
    for (const lease of leases) {
      const context = {
        ...lease,
        store: { kind: store.kind, schema: store.schema },
        signal: new AbortController().signal,
      };
      results.push({ lease, result: await runHandler(handlers.v1, lease.payload, context) });
    }
    await complete(store, results);
  }
  const coreCycleUs = ((performance.now() - t0) * 1000) / messages;

  // Kysely compile cost of one cycle's statements (no execution, so no connection).
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (kysely) => new SqliteIntrospector(kysely),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
  const rounds = 5000;
  t0 = performance.now();
  for (let i = 0; i < rounds; i++) {
    const now = 1_700_000_000 + i;
    const id = `E${String(i % 10_000).padStart(4, '0')}`;
    db.updateTable('messages')
      .set((eb) => ({
        state: eb
          .case()
          .when('attempts', '<', 3)
          .then('ready' as const)
          .else('dead' as const)
          .end(),
        available_at: eb
          .case()
          .when('attempts', '<', 3)
          .then(eb.ref('lease_until').$castTo<number>())
          .else(eb.ref('available_at'))
          .end(),
        lease_until: null,
        last_error_code: 'lease_expired',
        last_error_detail: eb.case().when('attempts', '<', 3).then('a').else('b').end(),
        updated_at: now,
      }))
      .where('state', '=', 'leased')
      .where('lease_until', '<=', now)
      .compile();
    const pick = db
      .selectFrom('messages')
      .select('event_id')
      .where('state', '=', 'ready')
      .where('available_at', '<=', now)
      .orderBy('available_at')
      .orderBy('event_id')
      .limit(1);
    db.updateTable('messages')
      .set((eb) => ({
        state: 'leased',
        attempts: eb('attempts', '+', 1),
        generation: eb('generation', '+', 1),
        lease_until: now + 30,
        updated_at: now,
      }))
      .where('event_id', 'in', pick)
      .where('state', '=', 'ready')
      .returning(['event_id', 'generation', 'attempts', 'lease_until', 'payload', 'available_at'])
      .compile();
    db.selectFrom('messages')
      .select(['event_id', 'payload', 'state', 'generation', 'attempts', 'lease_until'])
      .where('event_id', 'in', [id])
      .compile();
    db.insertInto('effects')
      .values([{ event_id: id, category: 'book', amount_cents: 1, created_at: now }])
      .compile();
    db.updateTable('messages')
      .set({ state: 'done', lease_until: null, updated_at: now })
      .where('state', '=', 'leased')
      .where('lease_until', '>', now)
      .where('event_id', 'in', [id])
      .where((eb) => eb.or([eb.and([eb('event_id', '=', id), eb('generation', '=', 1)])]))
      .compile();
  }
  const kyselyCompileUs = ((performance.now() - t0) * 1000) / rounds;

  // Empty write transactions through the store's executor.
  t0 = performance.now();
  for (let i = 0; i < rounds; i++) await store.transact(async () => {});
  const storeTxUs = ((performance.now() - t0) * 1000) / rounds;
  await store.close();
  await factory.dispose(core.target);

  // Empty write transactions, raw.
  const raw = new BunDatabase(core.target, { create: true });
  raw.run('PRAGMA journal_mode = WAL');
  raw.run('PRAGMA synchronous = NORMAL');
  const begin = raw.prepare('BEGIN IMMEDIATE');
  const commit = raw.prepare('COMMIT');
  t0 = performance.now();
  for (let i = 0; i < rounds; i++) {
    begin.run();
    commit.run();
  }
  const rawTxUs = ((performance.now() - t0) * 1000) / rounds;
  begin.finalize();
  commit.finalize();
  raw.close(false);
  await factory.dispose(core.target);

  // Whole cycle, bare.
  const bare = await factory.prepare(messages);
  const queue = new BareQueue(bare.target, 'NORMAL');
  const summary = { claimed: 0, done: 0, lost: 0, failed: 0 };
  t0 = performance.now();
  for (;;) {
    const leases = queue.claim(1);
    if (leases.length === 0) break;
    queue.apply(leases, handlers.v1, summary);
  }
  const bareCycleUs = ((performance.now() - t0) * 1000) / messages;
  queue.close();
  await factory.dispose(bare.target);

  // Handler alone.
  const payloads = Array.from({ length: 1000 }, (_, i) => {
    const parsed = JSON.parse(line(i)) as { payload: unknown };
    return JSON.stringify(parsed.payload);
  });
  const context = { eventId: 'E0000', attempt: 1, generation: 1 };
  t0 = performance.now();
  for (let i = 0; i < rounds * 4; i++) {
    handlers.v1(parseJson(payloads[i % payloads.length] as string) as never, context);
  }
  const handlerUs = ((performance.now() - t0) * 1000) / (rounds * 4);

  return { coreCycleUs, bareCycleUs, kyselyCompileUs, storeTxUs, rawTxUs, handlerUs };
}
