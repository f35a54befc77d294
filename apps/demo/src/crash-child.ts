/**
 * The crash child of the demo (docs/protocol.md §6): a separate process that claims the first
 * claimable message and runs the **real** `apply` on it with the crash point
 * `after-effect-insert` armed (`ONCEQ_FAULT`, see @onceq/core's faults.ts): inside the
 * apply transaction, once the effect INSERT has run and before the ACK and COMMIT, the
 * process exits with code {@link CRASH_EXIT_CODE}: no `finally`, no rollback, no close.
 * The database must undo the insert on its own and leave the claim `leased`.
 *
 * Usage: `bun crash-child.ts [<sqlite path>] --now <s> --lease <s> [--schema <name>] [--no-crash]`.
 * Without a path the store comes from `$ONCEQ_DEMO_DB`, so a PostgreSQL URL with a
 * password never shows up in a process list. `--no-crash` (the demo's `no-crash`
 * sabotage) runs without the crash point armed: apply commits and the child exits 0.
 *
 * Before exiting the child writes one JSON line to stdout, {@link CrashChildReport}.
 */
import { writeSync } from 'node:fs';
import { join } from 'node:path';
import { apply, claim, openStore } from '@onceq/core';
import { modelClock } from '@onceq/core/internal';
import { FAULT_EXIT_CODE, onCrashPoint } from '@onceq/core/testing';
import { handlers } from '@onceq/handler';

/** The exit code that proves the child died inside the transaction (the crash point's). */
export const CRASH_EXIT_CODE = FAULT_EXIT_CODE;

/** The crash point the child arms: the effect inserted, the ACK and COMMIT not yet run. */
export const CRASH_POINT = 'after-effect-insert';

/** Where the child script lives, for `Bun.spawn`. */
export const CRASH_CHILD_PATH = join(import.meta.dir, 'crash-child.ts');

/** What the child says on stdout just before it exits. */
export interface CrashChildReport {
  /** The message it claimed, null when nothing was claimable. */
  eventId: string | null;
  generation: number | null;
  /** The real apply reached its `after-effect-insert` point: the effect INSERT ran in the open transaction. */
  inserted: boolean;
}

/** What the parent learns from one run of the child. */
export interface CrashChildResult extends CrashChildReport {
  pid: number;
  exitCode: number;
  /** The child's stderr, for a diagnosis when it did not exit as planned. */
  stderr: string;
}

export interface SpawnCrashChildOptions {
  /** A SQLite file path or a postgres:// URL. */
  target: string;
  /** PostgreSQL schema of the demo store. */
  schema?: string;
  now: number;
  leaseSeconds: number;
  /** Complete normally instead of crashing (sabotage, to prove the demo's checks can fail). */
  noCrash?: boolean;
  /** Kill the child if it has not exited by then. Default 30 000 ms. */
  timeoutMs?: number;
}

/**
 * Runs the crash child and waits for it. The caller must not be inside a write
 * transaction while awaiting: on SQLite the child's `BEGIN IMMEDIATE` waits for it.
 */
export async function spawnCrashChild(options: SpawnCrashChildOptions): Promise<CrashChildResult> {
  const viaEnv = /^postgres(ql)?:\/\//i.test(options.target);
  const args = [process.execPath, CRASH_CHILD_PATH];
  if (!viaEnv) args.push(options.target);
  args.push('--now', String(options.now), '--lease', String(options.leaseSeconds));
  if (options.schema !== undefined) args.push('--schema', options.schema);
  if (options.noCrash === true) args.push('--no-crash');
  const env: Record<string, string | undefined> = { ...process.env };
  if (viaEnv) env.ONCEQ_DEMO_DB = options.target;
  if (options.noCrash === true) delete env.ONCEQ_FAULT;
  else env.ONCEQ_FAULT = CRASH_POINT;
  const proc = Bun.spawn(args, { env, stdout: 'pipe', stderr: 'pipe' });
  const timer = setTimeout(() => proc.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  if (viaEnv) await untilDeadTransactionsGone(options.target);
  return { pid: proc.pid, exitCode, stderr: stderr.trim(), ...readReport(stdout) };
}

/**
 * PostgreSQL: waits (at most 30 s) until no other client of the database is inside a
 * transaction. The child died mid-transaction; until the server reads its closed socket,
 * its backend still holds the dead transaction's row locks, and the story's next claim
 * (`SKIP LOCKED`) would pass over E0003.
 */
async function untilDeadTransactionsGone(url: string): Promise<void> {
  const client = new Bun.SQL(url);
  try {
    for (let i = 0; i < 600; i++) {
      const [row] = await client`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND backend_type = 'client backend' AND xact_start IS NOT NULL`;
      if ((row as { n: number }).n === 0) return;
      await Bun.sleep(50);
    }
  } finally {
    await client.close();
  }
}

function readReport(stdout: string): CrashChildReport {
  const line = stdout.trim().split('\n').at(-1) ?? '';
  try {
    const parsed = JSON.parse(line) as CrashChildReport;
    return { eventId: parsed.eventId, generation: parsed.generation, inserted: parsed.inserted };
  } catch {
    return { eventId: null, generation: null, inserted: false };
  }
}

/** Synchronous write: `process.exit` right after must not lose it. */
function report(value: CrashChildReport): void {
  writeSync(1, `${JSON.stringify(value)}\n`);
}

function flag(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
}

/** The child's body; also run by the compiled `onceq` binary, which has no script file to spawn. */
export async function main(args: string[]): Promise<void> {
  const now = Number(flag(args, '--now'));
  const leaseSeconds = Number(flag(args, '--lease') ?? 2);
  const schema = flag(args, '--schema');
  const first = args[0];
  const target = first !== undefined && !first.startsWith('--') ? first : process.env.ONCEQ_DEMO_DB;
  if (target === undefined || !Number.isInteger(now)) {
    console.error('crash-child needs a store (argument or $ONCEQ_DEMO_DB) and --now <seconds>');
    process.exit(2);
  }
  const clock = modelClock(now);
  const store = await openStore(target, {
    clock,
    protocol: { leaseSeconds },
    ...(schema === undefined ? {} : { schema }),
  });
  const lease = await claim(store);
  if (lease === null) {
    report({ eventId: null, generation: null, inserted: false });
    process.exit(3);
  }
  const claimed = lease;
  onCrashPoint((point) =>
    report({
      eventId: claimed.eventId,
      generation: claimed.generation,
      inserted: point === CRASH_POINT,
    }),
  );
  // With the crash point armed the process ends inside this call, before COMMIT.
  await apply(store, lease, handlers.v1);
  report({ eventId: lease.eventId, generation: lease.generation, inserted: true });
  await store.close();
  process.exit(args.includes('--no-crash') ? 0 : 5);
}

if (import.meta.main) await main(Bun.argv.slice(2));
