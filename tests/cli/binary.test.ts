/**
 * The installable `onceq`: `bun run build`'s single-file executable, built once into a
 * temporary directory and run from another directory, as a user on the PATH would.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';

import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from '../support/spawn.ts';

const ROOT = resolve(import.meta.dir, '..', '..');
let dir: string;
let bin: string;
let work: string;

function onceq(args: string[], env: Record<string, string> = {}, cwd = work) {
  const base: Record<string, string | undefined> = { ...process.env, ...env };
  delete base.ONCEQ_DB;
  delete base.CI;
  return runProcess([bin, ...args], { cwd, env: base });
}

/** A handler module written against the documented SDK: only the file, nothing installed. */
const SDK_HANDLER = `import { type Effect, type JsonObject, PermanentFailure } from '@onceq/core';
export const version = 'books-only';
export function handle(payload: JsonObject): Effect {
  if (payload.category !== 'book') {
    throw new PermanentFailure('not_a_book', \`this shop sells books, not \${String(payload.category)}\`);
  }
  return { category: 'book', amountCents: Number(payload.amount_cents) };
}
`;

/** A module that imports nothing: its failure is a plain object carrying the brand. */
const BARE_HANDLER = `export default {
  version: 'bare-1',
  handle(payload) {
    if (payload.category === 'pen') throw { [Symbol.for('onceq.failure')]: 'permanent', code: 'no_pens', message: 'pens are out' };
    return { category: String(payload.category), amountCents: payload.amount_cents };
  },
};
`;

const SHOP_EVENTS = `${[
  '{"event_id":"E0001","payload":{"category":"book","amount_cents":1200}}',
  '{"event_id":"E0002","payload":{"category":"pen","amount_cents":300}}',
].join('\n')}\n`;

interface DeadRow {
  event_id: string;
  attempts: number;
  last_error_code: string;
  last_error_detail: string;
}

/** A fresh directory outside the repository holding the events and the given files. */
function project(name: string, files: Record<string, string>): string {
  const cwd = join(dir, name);
  for (const [file, text] of Object.entries({ 'events.jsonl': SHOP_EVENTS, ...files })) {
    mkdirSync(join(cwd, file, '..'), { recursive: true });
    writeFileSync(join(cwd, file), text);
  }
  return cwd;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'onceq-bin-'));
  bin = join(dir, 'bin', 'onceq');
  const built = await runProcess(['bash', join(ROOT, 'scripts', 'build.sh'), bin], { cwd: ROOT });
  if (built.code !== 0) throw new Error(`build failed: ${built.stderr}`);
  work = join(dir, 'elsewhere');
  await runProcess(['mkdir', '-p', join(work, 'data')]);
  copyFileSync(join(ROOT, 'examples', 'demo.jsonl'), join(work, 'data', 'demo.jsonl'));
}, 120_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the compiled onceq binary, run from a directory outside the repository', () => {
  test('--version says "no store" and creates none', async () => {
    const r = await onceq(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^onceq \d+\.\d+\.\d+ \(schema version \d+\)\nstore: no store at /);
    expect(existsSync(join(work, 'onceq.db'))).toBe(false);
  });

  test('enqueue with a relative path, then status --json, -v with the store schema', async () => {
    const enq = await onceq(['enqueue', 'data/demo.jsonl', '--json']);
    expect(enq.code).toBe(0);
    expect(JSON.parse(enq.stdout)).toEqual({ accepted: 4, duplicates: 1 });
    expect(enq.stderr).toBe(`creating a new store at ${join(work, 'onceq.db')}\n`);
    expect(existsSync(join(work, 'onceq.db'))).toBe(true);
    expect((await onceq(['work', '--json'])).code).toBe(0);
    const status = await onceq(['status', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      messages: { ready: 0, leased: 0, done: 3, dead: 1 },
      total: 17000,
    });
    const v = await onceq(['-v']);
    expect(v.stdout).toMatch(/\nstore: schema version \d+\n$/);
  });

  test('a failure is one onceq: line with its exit code, no script echo or extra line', async () => {
    const r = await onceq(['status', '--db', 'missing.db']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `onceq: no store at ${join(work, 'missing.db')} (from --db); check the path, or create one with onceq setup or onceq enqueue\n`,
    );
    expect(existsSync(join(work, 'missing.db'))).toBe(false);
  });

  test('the demo runs inside the binary, crash child included (no repository files)', async () => {
    const r = await onceq(['demo', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as {
      ok: boolean;
      figures: { crash: { exit_code: number } };
    };
    expect(report.ok).toBe(true);
    expect(report.figures.crash.exit_code).toBe(86);
  });

  test('setup --yes loads the sample events from inside the binary', async () => {
    const r = await onceq(['setup', '--yes', '--db', 'setup.db', '--no-run', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ sample: { accepted: 4, duplicates: 1 } });
  });

  test('onceq docs prints the guides embedded in the binary, not read from disk', async () => {
    const list = await onceq(['docs']);
    expect(list.code).toBe(0);
    for (const topic of [
      'protocol',
      'tutorial',
      'handlers',
      'worker',
      'operations',
      'console',
      'cli',
    ]) {
      expect(list.stdout).toContain(`  ${topic} `);
    }
    const protocol = await onceq(['docs', 'protocol']);
    expect(protocol.code).toBe(0);
    expect(protocol.stdout).toBe(`${readFileSync(join(ROOT, 'docs', 'protocol.md'), 'utf8')}\n`);
    const unknown = await onceq(['docs', 'protocl']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('did you mean protocol');
  });

  test('--help names no repository file: a binary user has none', async () => {
    const names = (await onceq(['--help'])).stdout;
    const commands = [...names.matchAll(/^ {2}([a-z-]+) {2,}/gm)].map((m) => m[1] as string);
    expect(commands.length).toBeGreaterThan(15);
    for (const args of [['--help'], ...commands.map((c) => [c, '--help'])]) {
      const r = await onceq(args);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toMatch(/docs\/|examples\/|\.md\b|README/);
    }
  });

  test('your handler module, importing @onceq/core: its permanent failure is dead at once with its code and detail', async () => {
    const cwd = project('shop', { 'handlers/books.ts': SDK_HANDLER });
    expect((await onceq(['enqueue', 'events.jsonl', '--now', '1000'], {}, cwd)).code).toBe(0);
    const r = await onceq(
      ['work', '--handler', './handlers/books.ts', '--now', '1000', '--json'],
      {},
      cwd,
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      handler: 'books-only',
      done: 1,
      dead: 1,
      retried: 0,
    });
    const dead = JSON.parse((await onceq(['dlq', '--json'], {}, cwd)).stdout) as DeadRow[];
    expect(
      dead.map((d) => [d.event_id, d.attempts, d.last_error_code, d.last_error_detail]),
    ).toEqual([['E0002', 1, 'not_a_book', 'this shop sells books, not pen']]);
  });

  test('onceq.config.json names the module (relative to the config file); a module with no imports at all', async () => {
    const cwd = project('bare', {
      'lib/bare.mjs': BARE_HANDLER,
      'onceq.config.json': '{"handler": "./lib/bare.mjs"}\n',
    });
    expect((await onceq(['enqueue', 'events.jsonl', '--now', '1000'], {}, cwd)).code).toBe(0);
    const r = await onceq(['work', '--now', '1000'], {}, cwd);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('handler bare-1 (from ./lib/bare.mjs in onceq.config.json)');
    expect(r.stdout).toContain('1 done, 0 retried, 1 dead');
    const dead = JSON.parse((await onceq(['dlq', '--json'], {}, cwd)).stdout) as DeadRow[];
    expect(dead.map((d) => [d.event_id, d.last_error_code, d.last_error_detail])).toEqual([
      ['E0002', 'no_pens', 'pens are out'],
    ]);
  });
});
