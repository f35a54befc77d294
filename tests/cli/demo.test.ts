import { describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkFigures, type DemoFigures, type DemoReport, runDemo } from '@onceq/demo';
import { describePostgres } from '../support/backends.ts';
import { type ProcessResult, runProcess } from '../support/spawn.ts';

const MAIN = join(import.meta.dir, '..', '..', 'apps', 'demo', 'src', 'main.ts');

function runMain(args: string[]): Promise<ProcessResult> {
  return runProcess([process.execPath, MAIN, ...args]);
}

/** The §6 figures every backend must reproduce. */
function expectSpecFigures(report: DemoReport): void {
  expect(report.ok).toBe(true);
  expect(report.checks.every((c) => c.ok)).toBe(true);
  expect(report.figures.enqueue).toEqual({ accepted: 4, duplicates: 1 });
  expect(report.figures.crash).toMatchObject({
    exit_code: 86,
    claimed: 'E0003',
    inserted_before_exit: true,
  });
  expect(report.figures.after_1000.E0003).toMatchObject({ state: 'leased', effect: false });
  expect(report.snapshot).toEqual({
    messages: { ready: 1, leased: 1, done: 1, dead: 1 },
    effects: 1,
    totals: { book: 10000 },
    total: 10000,
  });
  expect(report.figures.recovery).toMatchObject({ state: 'done', generation: 2 });
  expect(report.final).toEqual({
    messages: { ready: 0, leased: 0, done: 3, dead: 1 },
    effects: 3,
    totals: { book: 15000, pen: 2000 },
    total: 17000,
  });
  expect(report.again).toEqual({ accepted: 0, duplicates: 5, total: 17000 });
  expect(report.redrive_v1.message.state).toBe('dead');
  expect(report.redrive_v1.message.last_error_code).toBe('invalid_payload');
  expect(report.redrive_v1.total).toBe(17000);
  expect(report.redrive_v2.messages).toEqual({ ready: 0, leased: 0, done: 4, dead: 0 });
  expect(report.redrive_v2.totals).toEqual({ book: 15000, pen: 2000, toy: 3000 });
  expect(report.redrive_v2.total).toBe(20000);
}

describe('demo (SQLite)', () => {
  test('the demo process with --json exits 0 and reports the figures of docs/protocol.md §6', async () => {
    const { code, stdout, stderr } = await runMain(['--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as DemoReport;
    expect(report.store).toBe('sqlite');
    expectSpecFigures(report);
    // The temporary store is gone, -wal and -shm included.
    expect(existsSync(report.location)).toBe(false);
    expect(existsSync(join(report.location, '..'))).toBe(false);
  });

  test('runDemo prints each step with its model second, the snapshots, and passes', async () => {
    const lines: string[] = [];
    const errors: string[] = [];
    const code = await runDemo({ out: (l) => lines.push(l), err: (l) => errors.push(l) });
    expect(errors).toEqual([]);
    expect(code).toBe(0);
    const text = lines.join('\n');
    expect(text).toContain('[1000] enqueue 5 lines: 4 accepted, 1 duplicate');
    expect(text).toMatch(/\[1000\] crash child \(pid \d+\) claimed E0003 .*exited with code 86/);
    expect(text).toContain('[1000] after the crash: E0003 has no effect, state leased until 1002');
    expect(text).toContain('[1001] E0002 claimed (generation 2, attempt 2) → done: pen 2000');
    expect(text).toContain('[1002] E0003 claimed (generation 2, attempt 2) → done: book 5000');
    expect(text).toMatch(/total \(3 effects\) +17000/);
    expect(text).toMatch(/total \(4 effects\) +20000/);
    expect(lines.at(-1)).toBe('all 45 figures of the demo story (docs/protocol.md §6) match.');
  });

  test('a sabotaged story (the child does not crash) exits non-zero and names the failing checks', async () => {
    const lines: string[] = [];
    const errors: string[] = [];
    const code = await runDemo({
      json: true,
      sabotage: 'no-crash',
      out: (l) => lines.push(l),
      err: (l) => errors.push(l),
    });
    expect(code).toBe(1);
    const report = JSON.parse(lines.join('\n')) as DemoReport;
    expect(report.ok).toBe(false);
    const failed = report.checks.filter((c) => !c.ok).map((c) => c.name);
    expect(failed).toContain('1000 crash child: exit code');
    expect(failed).toContain('1002 E0003: generation');
    expect(errors).toContain('demo check failed: 1000 crash child: exit code: expected 86, got 0');
  });

  test('checkFigures flags one wrong figure and only that one', async () => {
    const lines: string[] = [];
    expect(await runDemo({ json: true, out: (l) => lines.push(l) })).toBe(0);
    const figures = (JSON.parse(lines.join('\n')) as DemoReport).figures;
    const wrong: DemoFigures = structuredClone(figures);
    wrong.final.total = 19000;
    const failed = checkFigures(wrong).filter((c) => !c.ok);
    expect(failed).toEqual([{ name: 'final: total', expected: 17000, actual: 19000, ok: false }]);
  });

  test('an existing --db file is refused with exit 2 and left untouched', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'onceq-demo-test-'));
    try {
      const path = join(dir, 'taken.db');
      writeFileSync(path, 'not a store');
      const { code, stdout, stderr } = await runMain(['--db', path]);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toContain('needs a fresh store');
      expect(stderr).toContain(path);
      expect(readdirSync(dir)).toEqual(['taken.db']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an unknown flag is a usage error (exit 2)', async () => {
    const { code, stderr } = await runMain(['--jsn']);
    expect(code).toBe(2);
    expect(stderr).toContain('unknown argument --jsn');
  });
});

describePostgres('demo (PostgreSQL)', (DATABASE_URL) => {
  test('--db postgres://… tells the same story in its own schema and drops it', async () => {
    const { code, stdout, stderr } = await runMain(['--json', '--db', DATABASE_URL]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as DemoReport;
    expect(report.store).toBe('postgres');
    expectSpecFigures(report);
    const schema = report.schema;
    expect(schema).toMatch(/^onceq_demo_[0-9a-f]+$/);
    const password = new URL(DATABASE_URL).password;
    if (password !== '') expect(stdout).not.toContain(password);
    const sql = new Bun.SQL(DATABASE_URL);
    try {
      const rows =
        await sql`select schema_name from information_schema.schemata where schema_name like 'onceq_demo_%'`;
      expect(rows.map((r: { schema_name: string }) => r.schema_name)).not.toContain(schema);
    } finally {
      await sql.close();
    }
  });
});
