/**
 * The statements both backends run with the same SQL (built with Kysely, so each
 * dialect compiles its own text): the plain fenced ACK, the failure, the lease service's
 * extend and release, redrive, and enqueue's lookup and insert. The backend modules
 * (`sqlite/statements.ts`, `postgres/statements.ts`) import what they share from here;
 * nothing here knows which backend runs it.
 *
 * Every move out of `leased` is fenced in its `WHERE` on state, generation and
 * `lease_until > now`, and returns the rows it changed: zero means the lease is lost.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { FailureMove } from '../machine.ts';
import type { Database } from '../schema.ts';
import type { MessageState } from '../states.ts';
import type { LeaseRef } from '../types.ts';
import type { SnapshotRow, StoredForEnqueue, StoredForRedrive } from './driver.ts';
import { type BuildContext, defineStatement, type Executor } from './prepared.ts';

/**
 * A state as an SQL literal, not a bound parameter, so the planner can match it against
 * the leading column of `messages_claim` / `messages_lease` when it prepares the
 * statement (see tests/query-plans.test.ts).
 */
export function stateLiteral(state: MessageState): RawBuilder<MessageState> {
  return sql.lit(state);
}

/**
 * The server's clock in whole Unix seconds, read by the statement itself. The time the
 * statement began (`statement_timestamp()`): one reading for every row it touches, and
 * stable, so the planner can use it in index conditions (claim's `available_at <= now`
 * on `messages_claim`). Not `now()`, the start of the transaction: a transaction held
 * open (a handler's completion written in it, a caller's transaction) would judge a
 * fence or start a lease on a reading already that old. Not `clock_timestamp()`: it
 * changes from row to row, and the planner cannot use a volatile value in an index.
 */
const SERVER_SECONDS = sql<number>`floor(extract(epoch FROM statement_timestamp()))::bigint`;

/**
 * A statement's "now". With {@link Capabilities.serverClock} (PostgreSQL) the server's
 * clock, unless the store runs on a model clock or `--now` (tests, the lab): then the
 * executor binds that reading as `modelNow`, and NULL otherwise. Without it the bound
 * `now` (SQLite: the host's clock, or the model clock).
 */
export function statementNow({ p, capabilities }: BuildContext): number {
  if (!capabilities.serverClock) return p.value<number>('now');
  return sql<number>`COALESCE(${p.value<number | null>('modelNow')}::bigint, ${SERVER_SECONDS})` as unknown as number;
}

/**
 * A time `seconds` after the statement's now: the bound `absolute` slot where the host
 * computes it, `now + seconds` in the statement where the server's clock is the time.
 */
export function statementNowPlus(context: BuildContext, absolute: string, seconds: string): number {
  if (!context.capabilities.serverClock) return context.p.value<number>(absolute);
  return sql<number>`${statementNow(context)} + ${context.p.value<number>(seconds)}::bigint` as unknown as number;
}

/** leased → done for every `(event_id, generation)` pair still validly leased at `now`. */
const ackStatement = defineStatement('ack', (context) => {
  const { db, p, n } = context;
  const ids = p.list<string>('ids', n);
  const generations = p.list<number>('generations', n);
  return db
    .updateTable('messages')
    .set({ state: stateLiteral('done'), lease_until: null, updated_at: statementNow(context) })
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', statementNow(context))
    .where('event_id', 'in', ids)
    .where((eb) =>
      eb.or(
        ids.map((id, i) =>
          eb.and([eb('event_id', '=', id), eb('generation', '=', generations[i] as number)]),
        ),
      ),
    );
});

/** The plain fenced ACK; returns the rows marked done. */
export function ack(x: Executor, leases: readonly LeaseRef[], now: number): Promise<number> {
  if (leases.length === 0) return Promise.resolve(0);
  return x.changes(
    ackStatement,
    {
      ids: leases.map((l) => l.eventId),
      generations: leases.map((l) => l.generation),
      now,
    },
    leases.length,
  );
}

/** onceq's record of a done message a user's completion handled (migration 0005). */
export const insertCompletion = defineStatement('insert-completion', (context) =>
  context.db.insertInto('completions').values({
    event_id: context.p.value<string>('id'),
    summary: context.p.value<string | null>('summary'),
    created_at: statementNow(context),
  }),
);

/** leased → ready or dead after a failure, fenced on the one lease. */
function failureUpdate(context: BuildContext) {
  const { db, p } = context;
  return db
    .updateTable('messages')
    .set({
      state: p.value<MessageState>('state'),
      available_at: statementNowPlus(context, 'availableAt', 'delay'),
      lease_until: null,
      last_error_code: p.value<string>('code'),
      last_error_detail: p.value<string>('detail'),
      updated_at: statementNow(context),
    })
    .where('event_id', '=', p.value<string>('id'))
    .where('generation', '=', p.value<number>('generation'))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', statementNow(context));
}

const settleFailure = defineStatement('settle-failure', failureUpdate);

/** The slot values of the failure statements. */
export function failValues(lease: LeaseRef, move: FailureMove, now: number) {
  // `delay`: the backoff from the statement's now, for the server's clock.
  return {
    ...move,
    delay: move.availableAt - now,
    now,
    id: lease.eventId,
    generation: lease.generation,
  };
}

/** Writes `move` for one lease, fenced; returns the rows changed. */
export function fail(x: Executor, lease: LeaseRef, move: FailureMove, now: number) {
  return x.changes(settleFailure, failValues(lease, move, now));
}

/** leased → leased with `lease_until = leaseUntil`: the worker's heartbeat. */
const extendLease = defineStatement('extend', (context) =>
  context.db
    .updateTable('messages')
    .set({
      lease_until: statementNowPlus(context, 'leaseUntil', 'leaseSeconds'),
      updated_at: statementNow(context),
    })
    .where('event_id', '=', context.p.value<string>('id'))
    .where('generation', '=', context.p.value<number>('generation'))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', statementNow(context)),
);

export function extend(x: Executor, lease: LeaseRef, now: number, leaseUntil: number) {
  return x.changes(extendLease, {
    id: lease.eventId,
    generation: lease.generation,
    now,
    leaseUntil,
    leaseSeconds: leaseUntil - now,
  });
}

/**
 * leased → ready, available now, the claim's attempt given back (`attempts - 1`, never
 * below 0). `generation` stays where the claim put it: the releasing holder (or anyone
 * with its token) can never ACK, and the next claim issues a newer generation.
 */
const releaseLease = defineStatement('release', (context) => {
  const { db, p } = context;
  const now = statementNow(context);
  return db
    .updateTable('messages')
    .set((eb) => ({
      state: stateLiteral('ready'),
      available_at: now,
      lease_until: null,
      attempts: eb
        .case()
        .when('attempts', '>', 0)
        .then(eb('attempts', '-', 1))
        .else(0)
        .end(),
      updated_at: now,
    }))
    .where('event_id', '=', p.value<string>('id'))
    .where('generation', '=', p.value<number>('generation'))
    .where('state', '=', stateLiteral('leased'))
    .where('lease_until', '>', now);
});

export function release(x: Executor, lease: LeaseRef, now: number) {
  return x.changes(releaseLease, { id: lease.eventId, generation: lease.generation, now });
}

/** The named messages as redrive checks them (SQLite: the write lock is already held). */
export const redriveCheck = defineStatement<StoredForRedrive>('redrive-check', ({ db, p, n }) =>
  db
    .selectFrom('messages')
    .select(['event_id', 'state', 'pruned_at'])
    .where('event_id', 'in', p.list<string>('ids', n)),
);

/** {@link redriveCheck} locking the rows until COMMIT (`FOR UPDATE`). */
export const redriveCheckLocked = defineStatement<StoredForRedrive>(
  'redrive-check-locked',
  ({ db, p, n }) =>
    db
      .selectFrom('messages')
      .select(['event_id', 'state', 'pruned_at'])
      .where('event_id', 'in', p.list<string>('ids', n))
      .forUpdate(),
);

/** dead → ready of the named dead messages (a pruned one never moves). */
const redriveSome = defineStatement<{ event_id: string }>('redrive', (context) =>
  redriveUpdate(context.db, statementNow(context)).where(
    'event_id',
    'in',
    context.p.list<string>('ids', context.n),
  ),
);

/** dead → ready of every dead message (a pruned one never moves). */
const redriveAll = defineStatement<{ event_id: string }>('redrive-all', (context) =>
  redriveUpdate(context.db, statementNow(context)),
);

function redriveUpdate(db: Kysely<Database>, now: number) {
  return db
    .updateTable('messages')
    .set({ state: 'ready', attempts: 0, available_at: now, lease_until: null, updated_at: now })
    .where('state', '=', stateLiteral('dead'))
    .where('pruned_at', 'is', null)
    .returning('event_id');
}

export async function redrive(
  x: Executor,
  ids: readonly string[] | 'all',
  now: number,
): Promise<string[]> {
  if (ids !== 'all' && ids.length === 0) return [];
  const rows =
    ids === 'all'
      ? await x.rows(redriveAll, { now })
      : await x.rows(redriveSome, { ids, now }, ids.length);
  return rows.map((r) => r.event_id).sort();
}

/** Ids per lookup statement. */
const LOOKUP_CHUNK = 250;
/**
 * Rows per INSERT: the largest chunk; a remainder goes in power-of-two chunks. 500 (was
 * 128): a full 1000-line batch is two statements instead of eight (on PostgreSQL two
 * round trips); on SQLite a row binds two values (backend/placeholders.ts), so 500 rows
 * are 1001 parameters, far below the 32,766 limit.
 */
const INSERT_CHUNK = 500;

const lookup = defineStatement<StoredForEnqueue>('enqueue-lookup', ({ db, p, n }) =>
  db
    .selectFrom('messages')
    .select(['event_id', 'payload', 'payload_sha256', 'pruned_at'])
    .where('event_id', 'in', p.list<string>('ids', n)),
);

/** The stored rows of `ids`, in fixed-arity chunks (one compiled statement for any batch). */
export async function lookupForEnqueue(
  x: Executor,
  ids: readonly string[],
): Promise<StoredForEnqueue[]> {
  const found: StoredForEnqueue[] = [];
  for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
    const chunk = ids.slice(i, i + LOOKUP_CHUNK);
    // Pad to the fixed arity (a repeated id in IN is harmless): one compiled lookup.
    while (chunk.length < LOOKUP_CHUNK) chunk.push(chunk[0] as string);
    found.push(...(await x.rows(lookup, { ids: chunk }, LOOKUP_CHUNK)));
  }
  return found;
}

/**
 * The multi-row INSERT of new messages. `ON CONFLICT (event_id) DO NOTHING`: an id
 * already stored is skipped, not an error, and the statement's change count says how
 * many rows were new, so enqueue reads stored rows only when some were skipped. Only the
 * `event_id` key is named: a failed CHECK still aborts the statement.
 */
const insert = defineStatement('enqueue-insert', (context) => {
  const { db, p, n } = context;
  const payloads = p.list<string>('payloads', n);
  const now = statementNow(context);
  return db
    .insertInto('messages')
    .values(
      p.list<string>('ids', n).map((id, i) => ({
        event_id: id,
        payload: payloads[i] as string,
        state: stateLiteral('ready'),
        attempts: 0,
        generation: 0,
        available_at: now,
        lease_until: null,
        enqueued_at: now,
        updated_at: now,
      })),
    )
    .onConflict((oc) => oc.column('event_id').doNothing());
});

/** The next insert's row count: the full chunk, else the largest power of two that fits. */
function insertSize(remaining: number): number {
  if (remaining >= INSERT_CHUNK) return INSERT_CHUNK;
  return 2 ** Math.floor(Math.log2(remaining));
}

/**
 * New `ready` messages in multi-row INSERTs of a few fixed sizes; ids already stored are
 * skipped. Returns the rows inserted.
 */
export async function insertMessages(
  x: Executor,
  rows: readonly { eventId: string; payload: string }[],
  now: number,
): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < rows.length; ) {
    const size = insertSize(rows.length - i);
    const ids = new Array<string>(size);
    const payloads = new Array<string>(size);
    for (let k = 0; k < size; k++) {
      const row = rows[i + k] as { eventId: string; payload: string };
      ids[k] = row.eventId;
      payloads[k] = row.payload;
    }
    inserted += await x.changes(insert, { ids, payloads, now }, size);
    i += size;
  }
  return inserted;
}

/**
 * The status snapshot as one statement (see `Driver.snapshot`), `now` its one slot.
 * `deadIndex` is the backend's way to reach the partial `messages_dead` index for the
 * dead head: SQLite's planner, without statistics (no ANALYZE is ever run), would rather
 * walk every dead row of `messages_claim`, so SQLite pins it with `INDEXED BY`;
 * PostgreSQL's planner finds it.
 */
export function snapshotStatement(name: string, deadIndex: RawBuilder<unknown>) {
  return defineStatement<SnapshotRow>(name, ({ p }) => {
    const now = p.value<number>('now');
    const counts = sql.table('onceq_counts');
    const messages = sql.table('messages');
    return sql<SnapshotRow>`
      SELECT 'state' AS kind, key AS k, sum(n) AS n, NULL AS v FROM ${counts}
        WHERE kind = 'state' GROUP BY key
      UNION ALL
      SELECT 'effect', key, sum(n), sum(total) FROM ${counts}
        WHERE kind = 'effect' GROUP BY key HAVING sum(n) <> 0
      UNION ALL
      SELECT 'ready', NULL, 0, min(available_at) FROM ${messages}
        WHERE state = ${stateLiteral('ready')} AND available_at <= ${now}
      UNION ALL
      SELECT 'due', NULL, 0, min(available_at) FROM ${messages}
        WHERE state = ${stateLiteral('ready')} AND available_at > ${now}
      UNION ALL
      SELECT 'dead', NULL, 0, min(updated_at) FROM ${messages} ${deadIndex}
        WHERE state = ${stateLiteral('dead')}`;
  });
}
