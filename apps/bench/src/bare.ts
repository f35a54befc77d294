/**
 * The bare baseline: onceq's SQL protocol (docs/protocol.md §5) written directly against
 * `bun:sqlite`, without Kysely, the dialect or the protocol modules. Statements are
 * prepared once; busy waits use SQLite's own `busy_timeout`. Per claim:
 *
 *   BEGIN IMMEDIATE; recover expired; UPDATE … RETURNING (claim); COMMIT;
 *   BEGIN IMMEDIATE; SELECT fence; handler; INSERT effect; UPDATE done; COMMIT;
 *
 * With `batch > 1` the claim takes up to `batch` rows and the apply transaction
 * repeats fence/insert/update for each of them. The handler is the same v1 handler on
 * the same strict JSON parser as core, so the ratio core/bare measures the abstraction
 * only. (No outer `AND state = 'ready'` on the claim UPDATE: the subquery picked ready
 * rows under the same write lock, and the extra predicate makes SQLite scan the ready
 * index with a bloom filter instead of looking the picked ids up by primary key. And its
 * LIMIT behind a CAST: SQLite prepares a statement with a bare bound LIMIT again at every
 * run, docs/architecture.md.) Durability and fencing are the same as core's; error paths
 * (handler failures, lost leases) are counted, not recorded, since the bench payloads
 * are all valid.
 */
import { Database } from 'bun:sqlite';
import { parseJson } from '@onceq/core/internal';
import type { EffectHandler as Handler } from '@onceq/handler';

const MAX_ATTEMPTS = 3;
const LEASE_SECONDS = 30;

interface ClaimRow {
  event_id: string;
  generation: number;
  attempts: number;
  lease_until: number;
  payload: string;
}

interface FenceRow {
  payload: string;
  state: string;
  generation: number;
  attempts: number;
  lease_until: number | null;
}

export interface BareSummary {
  claimed: number;
  done: number;
  lost: number;
  failed: number;
}

export class BareQueue {
  readonly #db: Database;
  readonly #begin;
  readonly #commit;
  readonly #rollback;
  readonly #recover;
  readonly #claim;
  readonly #fence;
  readonly #insertEffect;
  readonly #done;

  constructor(path: string, synchronous: 'FULL' | 'NORMAL') {
    this.#db = new Database(path, { readwrite: true, create: false });
    this.#db.run('PRAGMA busy_timeout = 10000');
    this.#db.run('PRAGMA journal_mode = WAL');
    this.#db.run(`PRAGMA synchronous = ${synchronous}`);
    this.#db.run('PRAGMA foreign_keys = ON');
    const db = this.#db;
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#recover = db.prepare(
      `UPDATE messages SET
         state = CASE WHEN attempts < ?1 THEN 'ready' ELSE 'dead' END,
         available_at = CASE WHEN attempts < ?1 THEN lease_until ELSE available_at END,
         lease_until = NULL,
         last_error_code = 'lease_expired',
         last_error_detail = CASE WHEN attempts < ?1 THEN 'the lease expired before an ACK; retried'
                                  ELSE 'the lease expired before an ACK on the last attempt' END,
         updated_at = ?2
       WHERE state = 'leased' AND lease_until <= ?2`,
    );
    this.#claim = db.prepare<ClaimRow, [number, number, number]>(
      `UPDATE messages SET state = 'leased', attempts = attempts + 1, generation = generation + 1,
         lease_until = ?1 + ${LEASE_SECONDS}, updated_at = ?1
       WHERE event_id IN (SELECT event_id FROM messages WHERE state = 'ready' AND available_at <= ?2
                          ORDER BY available_at, event_id LIMIT CAST(?3 AS INTEGER))
       RETURNING event_id, generation, attempts, lease_until, payload`,
    );
    this.#fence = db.prepare<FenceRow, [string]>(
      'SELECT payload, state, generation, attempts, lease_until FROM messages WHERE event_id = ?',
    );
    this.#insertEffect = db.prepare(
      'INSERT INTO effects (event_id, category, amount_cents, created_at) VALUES (?, ?, ?, ?)',
    );
    this.#done = db.prepare(
      `UPDATE messages SET state = 'done', lease_until = NULL, updated_at = ?1
       WHERE event_id = ?2 AND generation = ?3 AND state = 'leased' AND lease_until > ?1`,
    );
  }

  /** One claim transaction: recovery, then up to `limit` leases. */
  claim(limit: number): ClaimRow[] {
    const now = Math.floor(Date.now() / 1000);
    this.#begin.run();
    try {
      this.#recover.run(MAX_ATTEMPTS, now);
      const rows = this.#claim.all(now, now, limit);
      this.#commit.run();
      return rows;
    } catch (error) {
      if (this.#db.inTransaction) this.#rollback.run();
      throw error;
    }
  }

  /** One apply transaction for `leases`: fence, handler, effect, ACK per lease. */
  apply(leases: readonly ClaimRow[], handler: Handler, summary: BareSummary): void {
    this.#begin.run();
    try {
      for (const lease of leases) {
        const now = Math.floor(Date.now() / 1000);
        const row = this.#fence.get(lease.event_id);
        if (
          row === null ||
          row.state !== 'leased' ||
          row.generation !== lease.generation ||
          now >= (row.lease_until as number)
        ) {
          summary.lost++;
          continue;
        }
        let effect: ReturnType<Handler>;
        try {
          const payload = parseJson(row.payload);
          effect = handler(payload as never, {
            eventId: lease.event_id,
            attempt: row.attempts,
            generation: row.generation,
          });
        } catch {
          summary.failed++;
          continue;
        }
        this.#insertEffect.run(lease.event_id, effect.category, effect.amountCents, now);
        const later = Math.floor(Date.now() / 1000);
        const { changes } = this.#done.run(later, lease.event_id, lease.generation);
        if (changes !== 1) throw new Error(`bare ACK of ${lease.event_id} matched ${changes} rows`);
        summary.done++;
      }
      this.#commit.run();
    } catch (error) {
      if (this.#db.inTransaction) this.#rollback.run();
      throw error;
    }
  }

  close(): void {
    for (const statement of [
      this.#begin,
      this.#commit,
      this.#rollback,
      this.#recover,
      this.#claim,
      this.#fence,
      this.#insertEffect,
      this.#done,
    ])
      statement.finalize();
    this.#db.close(false);
  }
}
