/**
 * The crash child of the demo (docs/protocol.md §6): a separate process that claims the first
 * claimable message, inserts its effect inside the apply transaction, and then exits
 * with code {@link CRASH_EXIT_CODE} **before COMMIT**: no `finally`, no rollback, no
 * close. The database must undo the insert on its own and leave the claim `leased`.
 *
 * Usage: `bun crash-child.ts [<sqlite path>] --now <s> --lease <s> [--schema <name>] [--no-crash]`.
 * Without a path the store comes from `$ONCEQ_DEMO_DB`, so a PostgreSQL URL with a
 * password never shows up in a process list. `--no-crash` (the demo's `no-crash`
 * sabotage) applies normally and exits 0: a worker that did not die.
 *
 * Before dying the child writes one JSON line to stdout, {@link CrashChildReport}.
 */
import { writeSync } from 'node:fs';
import { join } from 'node:path';
import { apply, claim, type JsonObject, modelClock, openStore, parseJson } from '@onceq/core';
import { handlers } from '@onceq/handler';

/** The exit code that proves the child died inside the transaction. */
export const CRASH_EXIT_CODE = 86;

/** Where the child script lives, for `Bun.spawn`. */
export const CRASH_CHILD_PATH = join(import.meta.dir, 'crash-child.ts');

/** What the child says on stdout just before it exits. */
export interface CrashChildReport {
  /** The message it claimed, null when nothing was claimable. */
  eventId: string | null;
  generation: number | null;
  /** The effect row was visible inside the child's open transaction. */
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
  const proc = Bun.spawn(args, { env, stdout: 'pipe', stderr: 'pipe' });
  const timer = setTimeout(() => proc.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { pid: proc.pid, exitCode, stderr: stderr.trim(), ...readReport(stdout) };
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
  if (args.includes('--no-crash')) {
    await apply(store, lease, handlers.v1);
    report({ eventId: lease.eventId, generation: lease.generation, inserted: true });
    await store.close();
    process.exit(0);
  }
  await store.writeTransaction(async (trx) => {
    // The same fence apply uses: still leased, same generation, lease not run out.
    const row = await trx
      .selectFrom('messages')
      .select(['state', 'generation', 'lease_until', 'payload', 'attempts'])
      .where('event_id', '=', lease.eventId)
      .executeTakeFirstOrThrow();
    if (
      row.state !== 'leased' ||
      Number(row.generation) !== lease.generation ||
      clock() >= Number(row.lease_until)
    ) {
      report({ eventId: lease.eventId, generation: lease.generation, inserted: false });
      process.exit(4);
    }
    const effect = handlers.v1(parseJson(row.payload) as JsonObject, {
      eventId: lease.eventId,
      generation: lease.generation,
      attempt: Number(row.attempts),
    });
    await trx
      .insertInto('effects')
      .values({
        event_id: lease.eventId,
        category: effect.category,
        amount_cents: effect.amountCents,
        created_at: clock(),
      })
      .execute();
    const seen = await trx
      .selectFrom('effects')
      .select('event_id')
      .where('event_id', '=', lease.eventId)
      .executeTakeFirst();
    report({ eventId: lease.eventId, generation: lease.generation, inserted: seen !== undefined });
    // Die with the transaction open: no COMMIT, no ROLLBACK, no finally, no close.
    process.exit(CRASH_EXIT_CODE);
  });
}

if (import.meta.main) await main(Bun.argv.slice(2));
