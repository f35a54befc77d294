/**
 * The packages as a user installs them: `bun run pack`'s tarballs added to a fresh
 * project in a temporary directory outside the repository (no workspace, no link; their
 * own dependencies come from the registry or the local bun cache). Every TypeScript
 * snippet of README.md and docs/ and the examples typecheck against the shipped
 * declarations with no `skipLibCheck` (and without prom-client unless they use
 * metrics), the library example runs to the demo's 17000 on SQLite and on PostgreSQL,
 * the service example runs and stops on SIGTERM, a library error points into the
 * package's sources, a missing optional peer is named in one sentence, and importing
 * any entry runs nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import {
  copyFileSync,
  mkdirSync,
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
import { runProcess } from '../support/spawn.ts';

const ROOT = resolve(import.meta.dir, '..', '..');
/** Installing, packing and typechecking on a loaded two-core machine: generous bounds. */
const SLOW = 600_000;

const rootManifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};
const coreManifest = JSON.parse(
  readFileSync(join(ROOT, 'packages', 'core', 'package.json'), 'utf8'),
) as { version: string; devDependencies: Record<string, string> };

let dir: string;
let project: string;

async function inProject(cmd: string[], env: Record<string, string> = {}) {
  const base: Record<string, string | undefined> = { ...process.env, ...env };
  delete base.ONCEQ_DB;
  return runProcess(cmd, { cwd: project, env: base });
}

async function mustRun(cmd: string[]): Promise<string> {
  const r = await inProject(cmd);
  if (r.code !== 0) throw new Error(`${cmd.join(' ')} exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** What the library example prints when the demo's events were processed once. */
const DEMO_STATUS = {
  messages: { ready: 0, leased: 0, done: 3, dead: 1 },
  effects: 3,
  totals: { book: 15000, pen: 2000 },
  total: 17000,
};

/**
 * Every ```ts block of README.md and docs/*.md that imports a package of onceq: a whole
 * module a user may copy (blocks without such an import are fragments of one).
 */
function snippets(): { name: string; code: string }[] {
  const pages = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f)),
  ];
  return pages.flatMap((page) =>
    [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```/gm)]
      .map((m, i) => ({
        name: `${page.replace(/\W+/g, '-')}-${i + 1}.ts`,
        code: m[1] as string,
      }))
      .filter(({ code }) => /from '@onceq\//.test(code)),
  );
}

/** The project's tsconfig: strict, and no `skipLibCheck`, so the shipped `.d.ts` are checked too. */
function writeTsconfig(include: string[]): void {
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
      include,
    }),
  );
}

async function tscErrors(): Promise<string[]> {
  const tsc = await inProject([join(ROOT, 'node_modules', '.bin', 'tsc'), '-p', '.']);
  return tsc.stdout.split('\n').filter((l) => l.includes('error TS'));
}

/** A user's file against the shipped types; `bad.ts` holds the one mistake tsc must report. */
const CHECK_TS = `import {
  type Handler,
  type Effect,
  enqueue,
  isHandlerFailure,
  type JsonObject,
  openStore,
  PermanentFailure,
  status,
  Worker,
  type HandlerContext,
  type IdPolicy,
  type MessageView,
  show,
  type StatusReport,
  type StopResult,
} from '@onceq/core';
import { type DoctorReport, doctor, listMessages, type MessagePage, prune, type QueueSnapshot, queueSnapshot } from '@onceq/core/admin';
import { redactUrl } from '@onceq/core/postgres';
import { createLog, stopOnSignals } from '@onceq/core/service';
import { FAULT_POINTS } from '@onceq/core/testing';
import { v2 } from '@onceq/handler';

export const handle: Handler = async (
  payload: JsonObject,
  context: HandlerContext,
): Promise<Effect> => {
  if (payload.category === 'hat') throw new PermanentFailure('no_hats', context.eventId);
  return v2(payload, context);
};
const store = await openStore('./typed.db');
const added: { accepted: number; duplicates: number } = await enqueue(store, new Uint8Array());
const total: number = (await status(store)).total;
const worker = new Worker(store, handle, { concurrency: 2, log: createLog('json') });
const stopped: StopResult = await stopOnSignals(worker, { timeoutMs: 1000, log: createLog('human') });
const shown: MessageView = await show(store, 'E0001');
const report: StatusReport = await status(store);
const policy: IdPolicy = { kind: 'general' };
const health: DoctorReport = await doctor(store);
const page: MessagePage = await listMessages(store, { state: 'dead', limit: 10 });
const snapshot: QueueSnapshot = await queueSnapshot(store);
const pruned: number = (await prune(store, { doneOlderThanSeconds: 30 * 86_400 })).done;
console.log(added, total, stopped, shown, report, policy, health.findings, page.messages, snapshot.now, pruned, isHandlerFailure(null), redactUrl('postgres://h/d'), FAULT_POINTS);
`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'onceq-installed-'));
  const tarballs = await packedTarballs();
  project = join(dir, 'shop');
  await runProcess(['mkdir', '-p', project]);
  writeFileSync(
    join(project, 'package.json'),
    '{ "name": "shop", "private": true, "type": "module" }\n',
  );
  await mustRun(['bun', 'add', tarballs.core, tarballs.handler]);
  copyFileSync(join(ROOT, 'examples', 'library.ts'), join(project, 'library.ts'));
  copyFileSync(join(ROOT, 'examples', 'service.ts'), join(project, 'service.ts'));
  copyFileSync(join(ROOT, 'examples', 'demo.jsonl'), join(project, 'demo.jsonl'));
  mkdirSync(join(project, 'handler'));
  copyFileSync(join(ROOT, 'examples', 'handler', 'tips.ts'), join(project, 'handler', 'tips.ts'));
  const written = join(project, 'snippets');
  mkdirSync(written);
  for (const { name, code } of snippets()) writeFileSync(join(written, name), code);
}, SLOW);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the installed packages, in a fresh project outside the repository', () => {
  test('installed from the tarballs alone: no workspace, no link, no sources', () => {
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['@onceq/core', '@onceq/handler']);
    for (const spec of Object.values(manifest.dependencies)) expect(spec).toEndWith('.tgz');
    const core = JSON.parse(
      readFileSync(join(project, 'node_modules', '@onceq', 'core', 'package.json'), 'utf8'),
    ) as { exports: Record<string, { default: string }>; license: string };
    expect(Object.keys(core.exports)).toEqual([
      '.',
      './postgres',
      './metrics',
      './service',
      './admin',
      './testing',
      './webhooks',
    ]);
    expect(core.exports['.']?.default).toBe('./dist/index.js');
    expect(core.license).toBe('MIT');
  });

  test('importing every entry runs nothing, even with a mistyped ONCEQ_FAULT; the root entry is small', async () => {
    const r = await inProject(
      [
        'bun',
        '-e',
        `const entries = await Promise.all(['@onceq/core', '@onceq/core/postgres', '@onceq/core/metrics', '@onceq/core/service', '@onceq/core/admin', '@onceq/core/testing', '@onceq/core/webhooks', '@onceq/handler'].map((e) => import(e)));
         console.log(Object.keys(entries[0]).length);`,
      ],
      { ONCEQ_FAULT: 'after-lunch' },
    );
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(Number(r.stdout.trim())).toBeLessThanOrEqual(30);
  });

  test('a missing optional peer (pg, prom-client) is one sentence naming it', async () => {
    const r = await inProject([
      'bun',
      '-e',
      `import { openStore } from '@onceq/core';
       import { WorkerMetrics } from '@onceq/core/metrics';
       try { await openStore('postgres://nobody@127.0.0.1:1/none'); } catch (e) { console.log(e.message); }
       const store = await openStore('./peers.db');
       try { new WorkerMetrics(store); } catch (e) { console.log(e.message); }
       await store.close();`,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'a postgres:// store needs the package pg, which is not installed; add it with: bun add pg',
        "the worker's Prometheus metrics needs the package prom-client, which is not installed; add it with: bun add prom-client",
        '',
      ].join('\n'),
    );
  });

  test('a library error points at its line in the package sources (source maps), under its own name', async () => {
    const r = await inProject([
      'bun',
      '-e',
      `import { openStore, show } from '@onceq/core';
       const store = await openStore('./errors.db');
       try { await show(store, 'E9999'); } catch (e) { console.log(e.name); console.log(e.stack); }
       await store.close();`,
    ]);
    expect(r.code).toBe(0);
    const [name, , frame] = r.stdout.split('\n');
    expect(name).toBe('NotFoundError');
    expect(frame).toMatch(/node_modules\/@onceq\/core\/src\/queue\/inspect\.ts:\d+:\d+\)$/);
  });

  test(
    'every snippet of the docs, and a file of our own, typecheck without skipLibCheck or prom-client; a wrong call does not',
    async () => {
      await mustRun([
        'bun',
        'add',
        '--dev',
        `@types/bun@${rootManifest.devDependencies['@types/bun']}`,
      ]);
      const plain = snippets().filter(({ code }) => !code.includes("'@onceq/core/metrics'"));
      expect(plain.length).toBeGreaterThanOrEqual(4);
      writeFileSync(join(project, 'check.ts'), CHECK_TS);
      writeFileSync(
        join(project, 'bad.ts'),
        "import { claim } from '@onceq/core';\nexport const lease = claim('not a store');\n",
      );
      writeTsconfig(['check.ts', 'bad.ts', ...plain.map(({ name }) => `snippets/${name}`)]);
      // Exactly one error, in bad.ts: the rest is clean, and the types do catch a mistake.
      const errors = await tscErrors();
      expect(errors).toHaveLength(1);
      expect(errors[0]).toStartWith('bad.ts(2,');
    },
    SLOW,
  );

  test(
    'with prom-client added: the metrics snippets and examples/service.ts typecheck, and the service runs and stops on SIGTERM',
    async () => {
      await mustRun(['bun', 'add', `prom-client@${coreManifest.devDependencies['prom-client']}`]);
      const metrics = snippets().filter(({ code }) => code.includes("'@onceq/core/metrics'"));
      expect(metrics.length).toBeGreaterThanOrEqual(1);
      writeTsconfig(['service.ts', ...metrics.map(({ name }) => `snippets/${name}`)]);
      expect(await tscErrors()).toEqual([]);

      const service = Bun.spawn(['bun', 'service.ts', './service.db', '0'], {
        cwd: project,
        stdout: 'pipe',
        stderr: 'pipe',
      });
      // Bounded wait for the event: the metrics line says the worker is up.
      const reader = service.stderr.getReader();
      let log = '';
      const deadline = Date.now() + 60_000;
      while (!/\bmetrics\b.*http:\/\/127\.0\.0\.1:\d+\/metrics/.test(log)) {
        if (Date.now() > deadline) break;
        const { value, done } = await reader.read();
        if (done) break;
        log += new TextDecoder().decode(value);
      }
      const url = /http:\/\/127\.0\.0\.1:\d+\/metrics/.exec(log)?.[0];
      expect(url).toBeDefined();
      const scrape = await fetch(url as string);
      expect(scrape.status).toBe(200);
      expect(await scrape.text()).toContain('onceq_messages{state="ready"}');
      service.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(JSON.parse(await new Response(service.stdout).text())).toMatchObject({
        graceful: true,
      });
    },
    SLOW,
  );

  test('the library example runs to 17000 on SQLite', async () => {
    const out = await mustRun(['bun', 'library.ts', './shop.db']);
    expect(JSON.parse(out)).toEqual(DEMO_STATUS);
  });

  onPostgres('the library example from the installed packages', () => {
    test(
      'the library example runs to 17000 on PostgreSQL, with pg added',
      async () => {
        await mustRun(['bun', 'add', `pg@${coreManifest.devDependencies.pg}`]);
        const database = scratchDatabase('onceq_installed');
        await database.create();
        try {
          const out = await mustRun(['bun', 'library.ts', database.url]);
          expect(JSON.parse(out)).toEqual(DEMO_STATUS);
        } finally {
          await database.drop();
        }
      },
      SLOW,
    );
  });
});
