/**
 * An application built from the docs alone, on the packed tarballs, in a fresh project
 * outside the repository (tests/project/shop-app/): a Bun.serve endpoint that writes its
 * own `orders` row and enqueues the payment in one `transaction(store, …)`; one handler
 * module for both backends (`context.store.kind`) writing `ledger` rows with `insert`
 * and upserting `balances` with `write`; a library worker. Its own check (drive.ts)
 * posts payments with repeats, SIGKILLs the worker twice, upgrades the handler,
 * redrives, and reports what the tables hold: every ledger row exactly once, on SQLite,
 * PostgreSQL and PostgreSQL behind PgBouncer in transaction mode.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import {
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { onPostgres } from '../support/backends.ts';
import { packedTarballs } from '../support/packed.ts';
import { scratchDatabase } from '../support/pg-database.ts';
import { poolerSuiteSkipped, startPooler } from '../support/pgbouncer.ts';
import { runProcess } from '../support/spawn.ts';

const ROOT = resolve(import.meta.dir, '..', '..');
const APP = join(import.meta.dir, 'shop-app');
/** Packing, installing and several processes per target on a loaded machine: generous bounds. */
const SLOW = 600_000;
const PAYMENTS = 90;
const REPEATS = 15;

const devDependencies = (file: string) =>
  (JSON.parse(readFileSync(file, 'utf8')) as { devDependencies: Record<string, string> })
    .devDependencies;

let project: string;

async function inProject(cmd: string[], env: Record<string, string> = {}) {
  const base: Record<string, string | undefined> = { ...process.env };
  delete base.ONCEQ_DB;
  const r = await runProcess(cmd, { cwd: project, env: { ...base, ...env } });
  if (r.code !== 0) throw new Error(`${cmd.join(' ')} exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

beforeAll(async () => {
  const { core, handler } = await packedTarballs();
  project = mkdtempSync(join(tmpdir(), 'onceq-shop-app-'));
  writeFileSync(
    join(project, 'package.json'),
    '{ "name": "shop", "private": true, "type": "module" }\n',
  );
  const pg = devDependencies(join(ROOT, 'packages', 'core', 'package.json')).pg;
  const types = devDependencies(join(ROOT, 'package.json'))['@types/bun'];
  await inProject(['bun', 'add', core, handler, `pg@${pg}`]);
  await inProject(['bun', 'add', '--dev', `@types/bun@${types}`]);
  for (const file of readdirSync(APP)) copyFileSync(join(APP, file), join(project, file));
}, SLOW);

afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

interface Report {
  sent: number;
  kills: number;
  v1Exit: number;
  v2Exit: number;
  deadBefore: number;
  redriven: number;
  messages: Record<string, number>;
  orders: number;
  ledger: number;
  ledgerEvents: number;
  balancesExact: boolean;
}

/** Runs the app's own check against `db` and asserts every payment counted exactly once. */
async function exactlyOnce(db: string): Promise<void> {
  const out = await inProject(['bun', 'drive.ts', String(PAYMENTS), String(REPEATS)], {
    ONCEQ_DB: db,
  });
  const report = JSON.parse(out.trim().split('\n').at(-1) as string) as Report;
  expect(report).toMatchObject({
    sent: PAYMENTS + REPEATS,
    kills: 2,
    v1Exit: 0,
    v2Exit: 0,
    // v1 settles EUR and USD; every third payment is GBP, dead until v2 and a redrive.
    deadBefore: PAYMENTS / 3,
    redriven: PAYMENTS / 3,
    messages: { ready: 0, leased: 0, done: PAYMENTS, dead: 0 },
    orders: PAYMENTS,
    ledger: PAYMENTS,
    ledgerEvents: PAYMENTS,
    balancesExact: true,
  });
}

describe('an application built from the docs, on the installed packages', () => {
  test(
    'it typechecks against the shipped types, strict, without skipLibCheck',
    async () => {
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'Preserve',
            moduleResolution: 'bundler',
            allowImportingTsExtensions: true,
            types: ['bun'],
            strict: true,
            noEmit: true,
          },
          include: ['*.ts'],
        }),
      );
      const tsc = await runProcess([join(ROOT, 'node_modules', '.bin', 'tsc'), '-p', '.'], {
        cwd: project,
      });
      expect(tsc.stdout.split('\n').filter((l) => l.includes('error TS'))).toEqual([]);
    },
    SLOW,
  );

  test(
    'SQLite: repeats, two SIGKILLs, an upgrade and a redrive; every ledger row once',
    () => exactlyOnce(join(project, 'shop.db')),
    SLOW,
  );

  onPostgres('the application on PostgreSQL', () => {
    test(
      'PostgreSQL: the same, every ledger row once',
      async () => {
        const database = scratchDatabase('onceq_shop');
        await database.create();
        try {
          await exactlyOnce(database.url);
        } finally {
          await database.drop();
        }
      },
      SLOW,
    );
  });

  describe.skipIf(poolerSuiteSkipped('shop-app.test.ts'))('behind PgBouncer', () => {
    test(
      'PgBouncer in transaction mode (LISTEN on a direct listen_url): the same, every ledger row once',
      async () => {
        const database = scratchDatabase('onceq_shop_pgb');
        await database.create();
        const pooler = await startPooler(process.env.DATABASE_URL as string);
        try {
          const url = new URL(pooler.urlFor(new URL(database.url).pathname.slice(1)));
          url.searchParams.set('listen_url', database.url);
          await exactlyOnce(url.toString());
        } finally {
          await pooler.stop();
          await database.drop();
        }
      },
      SLOW,
    );
  });
});
