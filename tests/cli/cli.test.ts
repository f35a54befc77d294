/**
 * CLI smoke: the story of docs/protocol.md §6 by hand through the real `onceq` process (model clock
 * via --now), the manual recovery after toy support, and one case per exit code (§7).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CliResult, type CliSandbox, cliSandbox, DEMO_JSONL, json } from '../support/cli.ts';

interface Lease {
  event_id: string;
  generation: number;
  attempt: number;
  lease_until: number;
  payload: Record<string, unknown>;
}

interface Status {
  messages: { ready: number; leased: number; done: number; dead: number };
  effects: number;
  totals: Record<string, number>;
  total: number;
}

/** No `    at foo (file:1:2)` frames: errors are one sentence unless ONCEQ_DEBUG=1. */
function expectNoStack(result: CliResult): void {
  expect(result.stderr).not.toMatch(/^\s+at .+[:(]/m);
  expect(result.stderr).not.toContain('node_modules');
}

function ok(result: CliResult): CliResult {
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
  // Notes for people (a new store, the handler in use) may go to stderr; errors may not.
  expect(result.stderr).not.toContain('onceq:');
  expectNoStack(result);
  return result;
}

describe('onceq walks the §6 story by hand', () => {
  let box: CliSandbox;
  const at = (now: number, ...args: string[]) => box.run(['--now', String(now), ...args]);
  const claimAt = async (now: number): Promise<Lease> => {
    const lease = json<Lease | null>(ok(await at(now, 'claim', '--lease', '2', '--json')));
    if (lease === null) throw new Error(`nothing to claim at ${now}`);
    return lease;
  };
  const statusAt = async (now: number): Promise<Status> =>
    json<Status>(ok(await at(now, 'status', '--json')));

  beforeAll(() => {
    box = cliSandbox();
  });
  afterAll(() => box.cleanup());

  test('1000: enqueue the demo input → 4 accepted, 1 duplicate', async () => {
    const human = ok(await at(1000, 'enqueue', DEMO_JSONL));
    expect(human.stdout).toBe('accepted 4, duplicates 1\n');
  });

  test('1000: E0001 claimed and completed', async () => {
    const lease = await claimAt(1000);
    expect(lease).toEqual({
      event_id: 'E0001',
      generation: 1,
      attempt: 1,
      lease_until: 1002,
      payload: { amount_cents: 10000, category: 'book' },
    });
    const done = ok(await at(1000, 'complete', 'E0001', '--generation', '1', '--json'));
    expect(json(done)).toEqual({
      event_id: 'E0001',
      outcome: 'done',
      category: 'book',
      amount_cents: 10000,
    });
  });

  test('1000: E0002 fails temporarily, ready again at 1001', async () => {
    const lease = await claimAt(1000);
    expect(lease.event_id).toBe('E0002');
    const failed = ok(
      await at(1000, 'fail', 'E0002', '--generation', String(lease.generation), '--temporary'),
    );
    // Local time and relative time for people (the JSON keeps epoch seconds).
    expect(failed.stdout).toMatch(/ready again at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in 1 s\)/);
  });

  test('1000: E0003 claimed and left leased (the worker "crashed")', async () => {
    const lease = await claimAt(1000);
    expect(lease).toMatchObject({ event_id: 'E0003', generation: 1, lease_until: 1002 });
  });

  test('1000: E0004 (toy) completed under v1 goes to the DLQ with exit 0', async () => {
    const lease = await claimAt(1000);
    expect(lease.event_id).toBe('E0004');
    const human = ok(await at(1000, 'complete', 'E0004', '--generation', '1', '--handler', 'v1'));
    expect(human.stdout).toContain('E0004 went to the DLQ: invalid_payload');
  });

  test('snapshot: one message in each state, only E0001 counted', async () => {
    expect(await statusAt(1000)).toMatchObject({
      messages: { ready: 1, leased: 1, done: 1, dead: 1 },
      effects: 1,
      totals: { book: 10000 },
      total: 10000,
    });
    const human = ok(await at(1000, 'status')).stdout;
    expect(human).toMatch(/^ready\s+1$/m);
    expect(human).toMatch(/^book\s+10000$/m);
  });

  test('dlq shows E0004 with its original payload and error', async () => {
    const dead = json<unknown[]>(ok(await at(1000, 'dlq', '--json')));
    expect(dead).toEqual([
      {
        event_id: 'E0004',
        attempts: 1,
        generation: 1,
        last_error_code: 'invalid_payload',
        last_error_detail: expect.any(String),
        payload: { amount_cents: 3000, category: 'toy' },
      },
    ]);
    const human = ok(await at(1000, 'dlq')).stdout;
    expect(human).toMatch(
      /^E0004\s+1\s+1\s+invalid_payload\s+\{"amount_cents":3000,"category":"toy"\}$/m,
    );
  });

  test('1001: work retries E0002 → done', async () => {
    const summary = json(ok(await at(1001, 'work', '--json')));
    expect(summary).toMatchObject({ claimed: 1, done: 1, retried: 0, dead: 0 });
  });

  test('1002: work recovers E0003 with a new generation → final total 17000, 1 dead', async () => {
    ok(await at(1002, 'work'));
    const e3 = json<{ generation: number; state: string }>(
      ok(await at(1002, 'show', 'E0003', '--json')),
    );
    expect(e3).toMatchObject({ state: 'done', generation: 2, effect: { category: 'book' } });
    const status = await statusAt(1002);
    expect(status).toMatchObject({
      messages: { ready: 0, leased: 0, done: 3, dead: 1 },
      effects: 3,
      totals: { book: 15000, pen: 2000 },
      total: 17000,
    });
  });

  test('again: re-enqueue the 5 lines → 0 accepted, 5 duplicates, same money', async () => {
    const again = ok(await at(1003, 'enqueue', DEMO_JSONL, '--json'));
    expect(again.stdout).toBe('{"accepted":0,"duplicates":5}\n');
    expect((await statusAt(1003)).total).toBe(17000);
  });

  test('redrive --dry-run: v1 still rejects E0004, v2 would accept it; nothing changes', async () => {
    const v1 = ok(await at(1004, 'redrive', 'E0004', '--dry-run', '--handler', 'v1'));
    expect(v1.stdout).toMatch(/E0004\s+rejected\s+invalid_payload/);
    const v2 = json<{ messages: { event_id: string; accepted: boolean }[] }>(
      ok(await at(1004, 'redrive', '--all', '--dry-run', '--handler', 'v2', '--json')),
    );
    expect(v2).toMatchObject({
      dry_run: true,
      handler: 'v2',
      messages: [{ event_id: 'E0004', accepted: true }],
    });
    expect((await statusAt(1004)).messages).toEqual({ ready: 0, leased: 0, done: 3, dead: 1 });
  });

  test('redrive E0004 under v1: dead again', async () => {
    expect(ok(await at(1005, 'redrive', 'E0004')).stdout).toBe('redriven 1: E0004\n');
    const summary = json(ok(await at(1005, 'work', '--handler', 'v1', '--json')));
    expect(summary).toMatchObject({ claimed: 1, done: 0, dead: 1 });
    expect((await statusAt(1005)).messages.dead).toBe(1);
  });

  test('manual recovery after toy support: redrive + work --handler v2 → 20000, done 4, dead 0', async () => {
    expect(json(ok(await at(1006, 'redrive', 'E0004', '--json')))).toEqual({
      redriven: ['E0004'],
    });
    ok(await at(1006, 'work', '--handler', 'v2'));
    expect(await statusAt(1006)).toMatchObject({
      messages: { ready: 0, leased: 0, done: 4, dead: 0 },
      effects: 4,
      totals: { book: 15000, pen: 2000, toy: 3000 },
      total: 20000,
    });
    expect(ok(await at(1006, 'dlq')).stdout).toBe('the DLQ is empty\n');
  });
});

describe('exit codes (§7)', () => {
  let box: CliSandbox;
  beforeAll(async () => {
    box = cliSandbox();
    ok(await box.run(['--now', '1000', 'enqueue', DEMO_JSONL]));
  });
  afterAll(() => box.cleanup());

  test('0: --help, per-command --help, and stdin enqueue', async () => {
    expect(ok(await box.run(['--help'])).stdout).toContain('usage: onceq <command>');
    expect(ok(await box.run(['redrive', '--help'])).stdout).toContain('--dry-run');
    const piped = ok(
      await box.run(['enqueue', '-', '--json'], {
        stdin: '{"event_id":"E0100","payload":{"category":"pen","amount_cents":1.0}}\n',
      }),
    );
    expect(piped.stdout).toBe('{"accepted":1,"duplicates":0}\n');
    // The canonical payload text is printed as stored: the float stays a float.
    expect(ok(await box.run(['show', 'E0100', '--json'])).stdout).toContain(
      '"payload":{"amount_cents":1.0,"category":"pen"}',
    );
  });

  test('2: an unknown flag is named', async () => {
    const r = await box.run(['status', '--frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'onceq: unknown flag --frobnicate for status (see onceq status --help)\n',
    );
  });

  test('2: a bad --now is named', async () => {
    for (const bad of ['soon', '1.5', '=-3']) {
      const r = await box.run(['status', bad.startsWith('=') ? `--now${bad}` : '--now', bad]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--now');
      expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    }
  });

  test('2: unknown command, missing --generation, a missing batch file, a malformed config', async () => {
    const unknown = await box.run(['frob']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frob"');
    const noGen = await box.run(['complete', 'E0001']);
    expect(noGen.code).toBe(2);
    expect(noGen.stderr).toContain('--generation');
    const missing = await box.run(['enqueue', 'nope.jsonl']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toStartWith('onceq: batch file nope.jsonl does not exist');

    const other = cliSandbox();
    try {
      writeFileSync(join(other.cwd, 'onceq.config.json'), '{"db": ');
      const bad = await other.run(['status']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('onceq.config.json');
      expectNoStack(bad);
    } finally {
      other.cleanup();
    }
  });

  test('3: a conflicting batch names the line and writes nothing', async () => {
    const before = ok(await box.run(['status', '--json'])).stdout;
    const file = join(box.cwd, 'conflict.jsonl');
    writeFileSync(
      file,
      [
        '{"event_id":"E0005","payload":{"category":"pen","amount_cents":100}}',
        '{"event_id":"E0006","payload":{"category":"pen","amount_cents":100}}',
        '{"event_id":"E0001","payload":{"category":"book","amount_cents":10000.0}}',
      ].join('\n'),
    );
    const r = await box.run(['enqueue', 'conflict.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('line 3: event_id E0001');
    expectNoStack(r);
    expect(ok(await box.run(['status', '--json'])).stdout).toBe(before);
    expect((await box.run(['show', 'E0005'])).code).toBe(4);
  });

  test('4: completing with an old generation is refused', async () => {
    const lease = json<Lease>(ok(await box.run(['--now', '1000', 'claim', '--json'])));
    const r = await box.run([
      '--now',
      '1000',
      'complete',
      lease.event_id,
      '--generation',
      String(lease.generation - 1),
    ]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`lease lost for ${lease.event_id}`);
    expectNoStack(r);
    ok(
      await box.run([
        '--now',
        '1000',
        'complete',
        lease.event_id,
        '--generation',
        String(lease.generation),
      ]),
    );
  });

  test('4: redrive of a message that is not dead changes nothing', async () => {
    const r = await box.run(['redrive', 'E0001']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('E0001 is done');
  });

  test('4: show of an unknown id', async () => {
    const r = await box.run(['show', 'E9999']);
    expect(r.code).toBe(4);
    expect(r.stderr).toBe('onceq: no message with event id E9999\n');
  });

  test('1: a store that cannot be opened (not a database)', async () => {
    writeFileSync(
      join(box.cwd, 'junk.db'),
      'this is not a SQLite database, just text\n'.repeat(100),
    );
    const r = await box.run(['status', '--db', 'junk.db']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('junk.db');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expectNoStack(r);
  });

  test('1: a PostgreSQL URL to a closed port never prints the password', async () => {
    // Built at run time so the repository itself holds no URL with a password.
    const secret = ['s3cr3t', 'pw'].join('-');
    const r = await box.run(['status', '--db', `postgres://onceq:${secret}@127.0.0.1:9/onceq`]);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toContain(secret);
    expectNoStack(r);
  });

  test('ONCEQ_DEBUG=1 adds the stack', async () => {
    writeFileSync(
      join(box.cwd, 'junk.db'),
      'this is not a SQLite database, just text\n'.repeat(100),
    );
    const r = await box.run(['status', '--db', 'junk.db'], { env: { ONCEQ_DEBUG: '1' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^\s+at /m);
  });
});

describe('configuration precedence: flag > ONCEQ_DB > onceq.config.json > ./onceq.db', () => {
  // One or two processes per test, each test in its own sandbox: on a loaded machine a
  // `bun` start can take seconds, and the former single test of seven processes in a row
  // ran past the 60 s test timeout about 2 runs in 9.
  let box: CliSandbox;
  beforeEach(() => {
    box = cliSandbox();
    // status only reads: it needs stores that exist (an empty file becomes one).
    for (const name of ['onceq.db', 'from-config.db', 'from-env.db', 'from-flag.db']) {
      writeFileSync(join(box.cwd, name), '');
    }
    writeFileSync(join(box.cwd, 'onceq.config.json'), '{"db":"from-config.db","handler":"v2"}');
  });
  afterEach(() => box.cleanup());
  const where = async (args: string[], env?: Record<string, string>) =>
    json<{ store: { location: string } }>(ok(await box.run(['status', '--json', ...args], { env })))
      .store.location;

  test('nothing set: ./onceq.db', async () => {
    rmSync(join(box.cwd, 'onceq.config.json'));
    expect(await where([])).toBe(join(box.cwd, 'onceq.db'));
  });

  test('onceq.config.json wins over the default', async () => {
    expect(await where([])).toBe(join(box.cwd, 'from-config.db'));
  });

  test('ONCEQ_DB wins over onceq.config.json', async () => {
    expect(await where([], { ONCEQ_DB: join(box.cwd, 'from-env.db') })).toBe(
      join(box.cwd, 'from-env.db'),
    );
  });

  test('--db wins over ONCEQ_DB', async () => {
    expect(await where(['--db', 'from-flag.db'], { ONCEQ_DB: 'x.db' })).toBe(
      join(box.cwd, 'from-flag.db'),
    );
  });

  test("the config's handler (v2) is the default for work: the toy is accepted", async () => {
    writeFileSync(
      join(box.cwd, 'toy.jsonl'),
      '{"event_id":"E0004","payload":{"category":"toy","amount_cents":3000}}\n',
    );
    ok(await box.run(['enqueue', 'toy.jsonl']));
    expect(json(ok(await box.run(['work', '--json'])))).toMatchObject({ handler: 'v2', done: 1 });
    expect(readFileSync(join(box.cwd, 'onceq.config.json'), 'utf8')).toContain('v2');
  });
});
