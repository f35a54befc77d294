import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import type { BackendKind } from '../driver/backend.ts';
import { StoreUnavailableError } from '../errors.ts';
import { initialSchema } from './0001_initial.ts';
import { leaseIndexPartial } from './0002_lease_index_partial.ts';
import { streamsSchema } from './0003_streams.ts';
import { countersSchema } from './0004_counters.ts';
import { completionsSchema } from './0005_completions.ts';
import { countsInStatements } from './0006_counts_in_statements.ts';
import { eventIdCheckByLength } from './0007_event_id_check_by_length.ts';
import { orderingKeysSchema } from './0008_ordering_keys.ts';
import { deliveriesSchema } from './0009_deliveries.ts';
import { queuesSchema } from './0010_queues.ts';
import { dedupWindowSchema } from './0011_dedup_window.ts';
import { queueCountsAndClaimAttemptsSchema } from './0012_queue_counts_and_claim_attempts.ts';
import { releaseInStatementSchema } from './0013_release_in_statement.ts';
import { checksWithoutListsSchema } from './0014_checks_without_lists.ts';
import { oneStateIndexPerMessageSchema } from './0015_one_state_index_per_message.ts';
import { keyLocksInOneStatementSchema } from './0016_key_locks_in_one_statement.ts';
import { livePayloadsCountedSchema } from './0017_live_payloads_counted.ts';
import { effectsWithoutCategoryIndexSchema } from './0018_effects_without_category_index.ts';
import { keyHistorySchema } from './0019_key_history.ts';
import { releaseIntoClaimSchema } from './0020_release_into_claim.ts';
import { waitingOutsideStateIndexSchema } from './0021_waiting_outside_state_index.ts';
import { keyedByEventIdSchema } from './0022_keyed_by_event_id.ts';

/**
 * Migrations live in code (no filesystem reads at run time), numbered, one SQL list
 * per backend. Append new ones; never edit a released one.
 */
export const MIGRATIONS: readonly {
  name: string;
  statements: Record<BackendKind, readonly string[]>;
}[] = [
  { name: '0001_initial', statements: initialSchema },
  { name: '0002_lease_index_partial', statements: leaseIndexPartial },
  { name: '0003_streams', statements: streamsSchema },
  { name: '0004_counters', statements: countersSchema },
  { name: '0005_completions', statements: completionsSchema },
  { name: '0006_counts_in_statements', statements: countsInStatements },
  { name: '0007_event_id_check_by_length', statements: eventIdCheckByLength },
  { name: '0008_ordering_keys', statements: orderingKeysSchema },
  { name: '0009_deliveries', statements: deliveriesSchema },
  { name: '0010_queues', statements: queuesSchema },
  { name: '0011_dedup_window', statements: dedupWindowSchema },
  {
    name: '0012_queue_counts_and_claim_attempts',
    statements: queueCountsAndClaimAttemptsSchema,
  },
  { name: '0013_release_in_statement', statements: releaseInStatementSchema },
  { name: '0014_checks_without_lists', statements: checksWithoutListsSchema },
  { name: '0015_one_state_index_per_message', statements: oneStateIndexPerMessageSchema },
  { name: '0016_key_locks_in_one_statement', statements: keyLocksInOneStatementSchema },
  { name: '0017_live_payloads_counted', statements: livePayloadsCountedSchema },
  {
    name: '0018_effects_without_category_index',
    statements: effectsWithoutCategoryIndexSchema,
  },
  { name: '0019_key_history', statements: keyHistorySchema },
  { name: '0020_release_into_claim', statements: releaseIntoClaimSchema },
  { name: '0021_waiting_outside_state_index', statements: waitingOutsideStateIndexSchema },
  { name: '0022_keyed_by_event_id', statements: keyedByEventIdSchema },
];

class InCodeMigrations implements MigrationProvider {
  readonly #kind: BackendKind;
  constructor(kind: BackendKind) {
    this.#kind = kind;
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    const out: Record<string, Migration> = {};
    for (const migration of MIGRATIONS) {
      const statements = migration.statements[this.#kind];
      out[migration.name] = {
        async up(db: Kysely<unknown>) {
          for (const statement of statements) await sql.raw(statement).execute(db);
        },
      };
    }
    return out;
  }
}

/**
 * Applies the migrations up to and including `name`, and no later one: a store as an
 * earlier release left it, for upgrade tests. Throws when one fails.
 */
export async function migrateTo(
  db: Kysely<unknown>,
  kind: BackendKind,
  name: string,
  schema?: string,
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: new InCodeMigrations(kind),
    migrationTableName: 'onceq_migrations',
    migrationLockTableName: 'onceq_migrations_lock',
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error } = await migrator.migrateTo(name);
  if (error !== undefined) throw error;
}

/** Applies pending migrations, each in a transaction of its own. Throws when one fails. */
export async function migrateToLatest(
  db: Kysely<unknown>,
  kind: BackendKind,
  schema?: string,
): Promise<void> {
  // The common case, every migration already applied, is answered by one read: the
  // Migrator would take a write lock (SQLite: the one write lock of the file) just to
  // find nothing to do, making every CLI command wait behind a held claim.
  if (await isUpToDate(db, schema)) return;
  const migrator = new Migrator({
    db,
    provider: new InCodeMigrations(kind),
    migrationTableName: 'onceq_migrations',
    migrationLockTableName: 'onceq_migrations_lock',
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    // Not a migration's own failure (the server refused the connection, a lock wait
    // timed out): the caller reports the error itself.
    if (failed === undefined) throw error;
    throw new StoreUnavailableError(`migration ${failed} failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

async function isUpToDate(db: Kysely<unknown>, schema?: string): Promise<boolean> {
  const table = sql.table(schema ? `${schema}.onceq_migrations` : 'onceq_migrations');
  try {
    const { rows } = await sql<{ name: string }>`select name from ${table}`.execute(db);
    const applied = new Set(rows.map((r) => r.name));
    return MIGRATIONS.every((m) => applied.has(m.name));
  } catch {
    return false; // No migrations table yet: a new store.
  }
}

/** The schema version this build of onceq brings: the number of its newest migration. */
export const SCHEMA_VERSION: number = versionOf(MIGRATIONS.map((m) => m.name));

/** `0002_lease_index_partial` → 2; the highest of the names. */
export function versionOf(names: readonly string[]): number {
  return Math.max(0, ...names.map((name) => Number.parseInt(name, 10) || 0));
}

/** True when every migration of this build is applied (one read, no lock). */
export async function isSchemaCurrent(db: Kysely<unknown>, schema?: string): Promise<boolean> {
  return isUpToDate(db, schema);
}
