/**
 * The doctor's invariant queries and its stale-lease count: plain SQL the two backends
 * run word for word, so a row written around the protocol (direct SQL, a restored file,
 * a dropped CHECK) is caught the same way on both. Numbers are inlined as integer
 * literals (checked), so the text needs no placeholders; the tables are named as the
 * store's dialect names them.
 */
import type { Executor } from '../executor.ts';
import { keyPositions, type SqlDialect } from '../sql-text.ts';

/** An integer as an SQL literal; anything else is a programming error. */
function integer(value: number): string {
  if (!Number.isSafeInteger(value)) throw new TypeError(`not an integer: ${value}`);
  return String(value);
}

/** The tables the checks read, as the store's dialect names them. */
export interface Tables {
  readonly messages: string;
  readonly messageKeys: string;
  readonly effects: string;
  readonly completions: string;
}

export function tablesOf(d: SqlDialect): Tables {
  return {
    messages: d.table('messages'),
    messageKeys: keyPositions(d),
    effects: d.table('effects'),
    completions: d.table('completions'),
  };
}

/** The checks, each as "select event_id of every row that breaks it". */
export const INVARIANT_ROWS = {
  done_without_outcome: (t: Tables) => `select m.event_id from ${t.messages} m
    left join ${t.effects} e on e.event_id = m.event_id
    left join ${t.completions} c on c.event_id = m.event_id
    where m.state = 'done' and e.event_id is null and c.event_id is null`,
  two_outcomes: (t: Tables) => `select e.event_id from ${t.effects} e
    join ${t.completions} c on c.event_id = e.event_id`,
  outcome_without_done: (t: Tables) => `select m.event_id from ${t.messages} m
    where m.state <> 'done' and (
      exists (select 1 from ${t.effects} e where e.event_id = m.event_id)
      or exists (select 1 from ${t.completions} c where c.event_id = m.event_id))`,
  effect_without_message: (t: Tables) => `select e.event_id from ${t.effects} e
    left join ${t.messages} m on m.event_id = e.event_id where m.event_id is null`,
  completion_without_message: (t: Tables) => `select c.event_id from ${t.completions} c
    left join ${t.messages} m on m.event_id = c.event_id where m.event_id is null`,
  lease_mismatch: (t: Tables) => `select event_id from ${t.messages}
    where (state = 'leased' and lease_until is null)
       or (state <> 'leased' and lease_until is not null)`,
  // Bounded by the attempts the message's last claim allowed (`max_attempts`, stamped from
  // the claiming worker's policy), not by any one policy: stores worked with several agree.
  attempts_out_of_bounds: (t: Tables) => `select event_id from ${t.messages}
    where attempts < 0 or attempts > max_attempts or generation < attempts
       or (state = 'ready' and attempts >= max_attempts)`,
  // A 64-character lowercase hex digest: ltrim removes every hex digit, leaving ''.
  tombstone_inconsistent: (t: Tables) => `select event_id from ${t.messages}
    where (pruned_at is not null and (payload is not null or payload_sha256 is null
        or state not in ('done', 'dead', 'skipped') or length(payload_sha256) <> 64
        or ltrim(payload_sha256, '0123456789abcdef') <> ''))
      or (pruned_at is null and (payload is null or payload_sha256 is not null))`,
  // A key's head: ready, leased, or dead and holding its key (`on_dead = 'block'`). A
  // key's messages are found through its positions (`keyPositions`).
  key_two_heads: (t: Tables) => `select m.event_id from ${t.messages} m
    where m.ordering_key is not null
      and (m.state in ('ready', 'leased') or (m.state = 'dead' and m.on_dead = 'block'))
      and exists (select 1 from ${t.messageKeys} k join ${t.messages} o on o.event_id = k.event_id
        where k.queue = m.queue and k.ordering_key = m.ordering_key and o.event_id <> m.event_id
        and (o.state in ('ready', 'leased') or (o.state = 'dead' and o.on_dead = 'block')))`,
  key_stuck: (t: Tables) => `select w.event_id from ${t.messages} w
    where w.state = 'waiting' and not exists (select 1 from ${t.messageKeys} k
      join ${t.messages} h on h.event_id = k.event_id
      where k.queue = w.queue and k.ordering_key = w.ordering_key and k.seq < w.seq
        and (h.state in ('ready', 'leased', 'waiting') or (h.state = 'dead' and h.on_dead = 'block')))`,
  key_position_mismatch: (t: Tables) => `select m.event_id from ${t.messages} m
    where m.ordering_key is not null and not exists (select 1 from ${t.messageKeys} k
      where k.queue = m.queue and k.ordering_key = m.ordering_key and k.seq = m.seq
        and k.event_id = m.event_id)`,
  // A position whose message is gone (deleted by hand): a release reaching it finds
  // nothing to hand out, and the key's later messages wait for ever.
  key_position_orphan: (t: Tables) => `select k.event_id from ${t.messageKeys} k
    where k.ordering_key is not null and not exists (select 1 from ${t.messages} m
      where m.event_id = k.event_id and m.queue = k.queue and m.ordering_key = k.ordering_key
        and m.seq = k.seq)`,
} as const;

export type InvariantCheck = keyof typeof INVARIANT_ROWS;

/** How many rows `rows` selects, and the first `limit` of their ids in order. */
export async function violations(
  x: Executor,
  rows: string,
  limit: number,
): Promise<{ n: number; ids: string[] }> {
  const counted = await x.query<{ n: unknown }>(`select count(*) as n from (${rows}) v`);
  const n = Number(counted.rows[0]?.n ?? 0);
  if (n === 0) return { n, ids: [] };
  const examples = await x.query<{ event_id: string }>(
    `select event_id from (${rows}) v order by event_id limit ${integer(limit)}`,
  );
  return { n, ids: examples.rows.map((r) => r.event_id) };
}

/** Leases that ran out before `cutoff`: how many, and the oldest `lease_until`. */
export async function expiredLeases(
  x: Executor,
  cutoff: number,
): Promise<{ n: number; oldest: number }> {
  const { rows } = await x.query<{ n: unknown; oldest: unknown }>(
    `select count(*) as n, min(lease_until) as oldest from ${x.dialect.table('messages')}
     where state = 'leased' and lease_until < ${integer(cutoff)}`,
  );
  return { n: Number(rows[0]?.n ?? 0), oldest: Number(rows[0]?.oldest ?? 0) };
}
