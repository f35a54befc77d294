/**
 * The doctor's data checks: the protocol's invariants, read with plain SQL so a row
 * written around the protocol (direct SQL, a restored file, a dropped CHECK) is caught.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Store } from '../driver/backend.ts';
import type { Finding } from './doctor-types.ts';
import { formatIdPolicy, parseIdPolicy } from './id-policy.ts';
import { findOffenders, ID_POLICY_KEY } from './meta.ts';

/** Example ids named per finding. */
const EXAMPLES = 5;

interface Invariant {
  check: string;
  /** What the rows are. */
  noun: 'message' | 'effect' | 'completion';
  /** What is wrong with each row found, completing "N messages …". */
  what: string;
  /** Selects `event_id` of every violating row. */
  rows: (store: Store) => RawBuilder<{ event_id: string }>;
}

const hexMismatch = (store: Store) =>
  store.kind === 'sqlite'
    ? sql`(length(payload_sha256) <> 64 OR payload_sha256 GLOB '*[^0-9a-f]*')`
    : sql`payload_sha256 !~ '^[0-9a-f]{64}$'`;

/** Every invariant the protocol keeps, as "rows that break it". */
export const INVARIANTS: readonly Invariant[] = [
  {
    check: 'done_without_outcome',
    noun: 'message',
    what: 'done without a recorded outcome (every done message has exactly one: an effect or a completion)',
    rows: () => sql`select m.event_id from messages m
      left join effects e on e.event_id = m.event_id
      left join completions c on c.event_id = m.event_id
      where m.state = 'done' and e.event_id is null and c.event_id is null`,
  },
  {
    check: 'two_outcomes',
    noun: 'message',
    what: 'with both an effect and a completion (a done message has exactly one outcome)',
    rows: () => sql`select e.event_id from effects e join completions c on c.event_id = e.event_id`,
  },
  {
    check: 'outcome_without_done',
    noun: 'message',
    what: 'with a recorded outcome but not done (only done messages have one)',
    rows: () => sql`select m.event_id from messages m
      where m.state <> 'done' and (
        exists (select 1 from effects e where e.event_id = m.event_id)
        or exists (select 1 from completions c where c.event_id = m.event_id))`,
  },
  {
    check: 'effect_without_message',
    noun: 'effect',
    what: 'without a message',
    rows: () => sql`select e.event_id from effects e left join messages m on m.event_id = e.event_id
      where m.event_id is null`,
  },
  {
    check: 'completion_without_message',
    noun: 'completion',
    what: 'without a message',
    rows: () => sql`select c.event_id from completions c left join messages m on m.event_id = c.event_id
      where m.event_id is null`,
  },
  {
    check: 'lease_mismatch',
    noun: 'message',
    what: "breaking leased ⇔ lease_until (a lease_until exactly when state = 'leased')",
    rows: () => sql`select event_id from messages
      where (state = 'leased' and lease_until is null) or (state <> 'leased' and lease_until is not null)`,
  },
  {
    check: 'attempts_out_of_bounds',
    noun: 'message',
    what: 'with attempts out of bounds (0 ≤ attempts ≤ max attempts and ≤ generation; ready below max)',
    rows: (store) => {
      const max = store.protocol.maxAttempts;
      return sql`select event_id from messages
        where attempts < 0 or attempts > ${max} or generation < attempts
          or (state = 'ready' and attempts >= ${max})`;
    },
  },
  {
    check: 'tombstone_inconsistent',
    noun: 'message',
    what: 'with an inconsistent tombstone (pruned: no payload, a 64-hex SHA-256, done or dead; else a payload, no hash)',
    rows: (store) => sql`select event_id from messages
      where (pruned_at is not null and (payload is not null or payload_sha256 is null
          or state not in ('done', 'dead') or ${hexMismatch(store)}))
        or (pruned_at is null and (payload is null or payload_sha256 is not null))`,
  },
];

/** Runs every invariant; one finding per broken one, with its count and examples. */
export async function checkInvariants(store: Store): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const invariant of INVARIANTS) {
    const query = invariant.rows(store);
    const { rows } = await sql<{ n: number | string; examples: string | null }>`
      select count(*) as n from (${query}) v`.execute(store.db);
    const n = Number(rows[0]?.n ?? 0);
    if (n === 0) continue;
    const examples = await sql<{ event_id: string }>`
      select event_id from (${query}) v order by event_id limit ${EXAMPLES}`.execute(store.db);
    const ids = examples.rows.map((r) => r.event_id);
    findings.push({
      check: invariant.check,
      severity: 'problem',
      message: `${n} ${invariant.noun}${n === 1 ? '' : 's'} ${invariant.what}: ${ids.join(', ')}${n > ids.length ? ', …' : ''}`,
    });
  }
  return findings;
}

/** The recorded id policy is readable, and every stored id fits it. */
export async function checkIdPolicy(store: Store): Promise<Finding[]> {
  const row = await store.db
    .selectFrom('onceq_meta')
    .select('value')
    .where('key', '=', ID_POLICY_KEY)
    .executeTakeFirst();
  const finding = (message: string): Finding[] => [
    { check: 'id_policy', severity: 'problem', message },
  ];
  if (row === undefined) return finding('the store records no id policy (onceq_meta.id_policy)');
  let policy: ReturnType<typeof parseIdPolicy>;
  try {
    policy = parseIdPolicy(row.value);
  } catch (error) {
    return finding(`the recorded id policy is unreadable: ${(error as Error).message}`);
  }
  const { refused, offenders } = await findOffenders(store.db, policy);
  if (refused === 0) return [];
  return finding(
    `${refused} stored event id${refused === 1 ? '' : 's'} do not fit the store's id policy ${formatIdPolicy(policy)}: ${offenders.map((id) => JSON.stringify(id)).join(', ')}${refused > offenders.length ? ', …' : ''}`,
  );
}

/**
 * Leases that ran out long ago: lazy recovery only happens on a claim, so a lease
 * expired for `staleSeconds` means nothing has claimed for that long. A warning.
 */
export async function checkStaleLeases(store: Store, staleSeconds: number): Promise<Finding[]> {
  const cutoff = store.clock() - staleSeconds;
  const row = await store.db
    .selectFrom('messages')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('lease_until').as('oldest')])
    .where('state', '=', 'leased')
    .where('lease_until', '<', cutoff)
    .executeTakeFirstOrThrow();
  const n = Number(row.n);
  if (n === 0) return [];
  const age = store.clock() - Number(row.oldest);
  return [
    {
      check: 'stale_leases',
      severity: 'warning',
      message: `${n} lease${n === 1 ? '' : 's'} expired more than ${staleSeconds} s ago (oldest ${age} s): no claims running? A claim (onceq work) recovers them`,
    },
  ];
}
