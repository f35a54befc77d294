/**
 * `@onceq/demo`: the story of docs/protocol.md §6 on a fresh store, with the model clock and a
 * real crash child. Used by `bun run demo` (main.ts) and `onceq demo`.
 *
 * @module
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StatusReport } from '@onceq/core';
import { openStore, type Store } from '@onceq/core';
import { modelClock, ONCEQ_URL_PARAMETERS } from '@onceq/core/internal';
import { isPostgresUrl } from '@onceq/core/postgres';
import { SQL } from 'bun';
import { type Check, checkFigures } from './checks.ts';
import { spawnCrashChild } from './crash-child.ts';
import { snapshotLines } from './format.ts';
import { DEMO_LEASE_SECONDS, DEMO_START, type DemoFigures, runStory } from './story.ts';

export { type Check, checkFigures } from './checks.ts';
export { CRASH_CHILD_PATH, CRASH_EXIT_CODE, main as runCrashChild } from './crash-child.ts';
export { failingOnce } from './failing-once.ts';
export { DEMO_INPUT, DEMO_LEASE_SECONDS, DEMO_START, type DemoFigures } from './story.ts';

/**
 * Deliberate perturbations that prove the self-check can fail. `no-crash`: the child
 * applies normally and exits 0 instead of dying before COMMIT.
 */
export const SABOTAGES = ['no-crash'] as const;
export type Sabotage = (typeof SABOTAGES)[number];

export interface DemoOptions {
  /** Print one JSON document ({@link DemoReport}) instead of the story. Default false. */
  json?: boolean;
  /**
   * Where to tell the story. Default: a fresh SQLite file in a temporary directory,
   * removed afterwards. A `postgres://` URL: a fresh schema `onceq_demo_<random>`,
   * dropped afterwards (no other schema is touched). A path: a new SQLite file, kept;
   * refused (exit 2) when the file already exists.
   */
  db?: string;
  /** Receives stdout lines. Default `console.log`. */
  out?: (line: string) => void;
  /** Receives error sentences. Default `console.error`. */
  err?: (line: string) => void;
  /** Perturb the story on purpose (tests of the self-check). Default none. */
  sabotage?: Sabotage;
}

/**
 * The `--json` document. All keys are always present.
 *
 * - `store`: `"sqlite"` or `"postgres"`; `location`: path or URL without password;
 *   `schema`: the demo's PostgreSQL schema (dropped by the time you read it), else null.
 * - `steps`: `[{ at, text }]`, each printed step with its model second.
 * - `figures`: the measured {@link DemoFigures}, among them
 *   `enqueue {accepted, duplicates}`, `crash {exit_code, claimed, generation,
 *   inserted_before_exit}`, `after_1000` / `after_1001` (per message `{state, attempts,
 *   generation, available_at, lease_until, last_error_code, effect}`), `recovery`
 *   (E0003 after 1002).
 * - `snapshot`, `final`: status reports `{messages: {ready, leased, done, dead},
 *   effects, totals: {category: cents}, total}` (the shape of `onceq status --json`).
 * - `again`: `{accepted, duplicates, total}` after re-enqueuing the 5 lines.
 * - `redrive_v1`, `redrive_v2`: a status report plus `message` (E0004's brief).
 * - `checks`: `[{name, expected, actual, ok}]` for every figure of §6; `ok`: all passed.
 */
export interface DemoReport {
  store: 'sqlite' | 'postgres';
  location: string;
  schema: string | null;
  steps: { at: number; text: string }[];
  figures: DemoFigures;
  snapshot: StatusReport;
  final: StatusReport;
  again: DemoFigures['again'];
  redrive_v1: DemoFigures['redrive_v1'];
  redrive_v2: DemoFigures['redrive_v2'];
  checks: Check[];
  ok: boolean;
}

type Target =
  | { kind: 'temporary'; path: string; dir: string }
  | { kind: 'file'; path: string }
  | { kind: 'postgres'; url: string; schema: string };

/**
 * Runs the demo and returns the exit code: 0 when every figure matches docs/protocol.md §6,
 * 1 when a figure differs (the failing checks are named) or the story broke,
 * 2 when `db` names an existing file.
 */
export async function runDemo(options: DemoOptions = {}): Promise<number> {
  const out = options.out ?? ((line: string) => console.log(line));
  const err = options.err ?? ((line: string) => console.error(line));
  const json = options.json === true;
  const target = chooseTarget(options.db);
  if (target === null) {
    err(
      `onceq demo needs a fresh store, but ${options.db} already exists; pass a new path or omit --db.`,
    );
    return 2;
  }

  const clock = modelClock(DEMO_START);
  const steps: DemoReport['steps'] = [];
  let store: Store | undefined;
  try {
    store = await openStore(target.kind === 'postgres' ? target.url : target.path, {
      clock,
      protocol: { leaseSeconds: DEMO_LEASE_SECONDS },
      ...(target.kind === 'postgres' ? { schema: target.schema } : {}),
    });
    const where =
      target.kind === 'postgres' ? `${store.location}, schema ${target.schema}` : store.location;
    if (!json) {
      out(
        `onceq demo: the demo story (docs/protocol.md §6) on a fresh ${store.kind} store (${where})`,
      );
      out(`model clock from ${DEMO_START}, lease ${DEMO_LEASE_SECONDS} s`);
      out('');
    }
    const figures = await runStory(store, {
      clock,
      step: (text) => {
        steps.push({ at: clock(), text });
        if (!json) out(`[${clock()}] ${text}`);
      },
      snapshot: (title, report) => {
        if (!json) for (const line of snapshotLines(title, report)) out(line);
      },
      crash: () =>
        spawnCrashChild({
          target: target.kind === 'postgres' ? target.url : target.path,
          ...(target.kind === 'postgres' ? { schema: target.schema } : {}),
          now: clock(),
          leaseSeconds: DEMO_LEASE_SECONDS,
          noCrash: options.sabotage === 'no-crash',
        }),
    });
    const checks = checkFigures(figures);
    const failed = checks.filter((c) => !c.ok);
    if (json) {
      const report: DemoReport = {
        store: store.kind,
        location: store.location,
        schema: target.kind === 'postgres' ? target.schema : null,
        steps,
        figures,
        snapshot: figures.snapshot,
        final: figures.final,
        again: figures.again,
        redrive_v1: figures.redrive_v1,
        redrive_v2: figures.redrive_v2,
        checks,
        ok: failed.length === 0,
      };
      out(JSON.stringify(report, null, 2));
    } else if (failed.length === 0) {
      out(`all ${checks.length} figures of the demo story (docs/protocol.md §6) match.`);
    }
    for (const c of failed) {
      err(
        `demo check failed: ${c.name}: expected ${JSON.stringify(c.expected)}, got ${JSON.stringify(c.actual)}`,
      );
    }
    if (failed.length > 0) {
      err(
        `${failed.length} of ${checks.length} figures of the demo story (docs/protocol.md §6) differ.`,
      );
      return 1;
    }
    return 0;
  } catch (error) {
    err(`the demo broke: ${(error as Error).message}`);
    if (process.env.ONCEQ_DEBUG === '1') err(String((error as Error).stack));
    return 1;
  } finally {
    await cleanUp(store, target, json ? () => {} : out, err);
  }
}

function chooseTarget(db: string | undefined): Target | null {
  if (db === undefined || db === '') {
    const dir = mkdtempSync(join(tmpdir(), 'onceq-demo-'));
    return { kind: 'temporary', dir, path: join(dir, 'demo.db') };
  }
  if (isPostgresUrl(db)) {
    const schema = `onceq_demo_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    return { kind: 'postgres', url: db, schema };
  }
  return existsSync(db) ? null : { kind: 'file', path: db };
}

async function cleanUp(
  store: Store | undefined,
  target: Target,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<void> {
  try {
    // The demo's own schema only, and only the one it created.
    if (store !== undefined && target.kind === 'postgres') {
      // On a connection of the demo's own (onceq's own URL parameters are not the
      // server's); the name is the demo's generated one.
      const url = new URL(target.url);
      for (const name of ONCEQ_URL_PARAMETERS) url.searchParams.delete(name);
      const admin = new SQL(url.toString());
      try {
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${target.schema}" CASCADE`);
      } finally {
        await admin.close();
      }
    }
  } catch (error) {
    err(
      `could not drop the demo schema ${target.kind === 'postgres' ? target.schema : ''}: ${(error as Error).message}`,
    );
  }
  await store?.close();
  if (target.kind === 'temporary') rmSync(target.dir, { recursive: true, force: true });
  if (target.kind === 'file') out(`the demo store is kept at ${target.path}`);
}
