/**
 * Everyday use of the real `onceq` process: each test
 * shows the friendly behaviour and, where it is a guard, the bad case it catches.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { splitOutcome } from '@onceq/cli/commands/enqueue.ts';
import { writeConfig } from '@onceq/cli/config.ts';
import { BIN, type CliSandbox, cliSandbox, DEMO_JSONL, json } from '../support/cli.ts';
import { runProcess } from '../support/spawn.ts';

let box: CliSandbox;
beforeEach(() => {
  box = cliSandbox();
});
afterEach(() => box.cleanup());

const line = (id: number, body = '{"category":"book","amount_cents":100}') =>
  `{"event_id":"E${String(id).padStart(4, '0')}","payload":${body}}`;

/** Runs `command` in a pseudo-terminal (util-linux `script`), `input` typed into it. */
/**
 * Runs `onceq args` in the sandbox (stdin a pipe held open), sends SIGINT as soon as its
 * stderr shows `marker`, and returns its exit code and whole stderr (killed after 60 s).
 */
async function interruptOnceLogged(
  box: CliSandbox,
  args: readonly string[],
  marker: string,
): Promise<{ code: number; stderr: string }> {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.ONCEQ_DB;
  const proc = Bun.spawn(['bun', BIN, ...args], {
    cwd: box.cwd,
    env,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  const reader = proc.stderr.getReader();
  const decoder = new TextDecoder();
  let stderr = '';
  let interrupted = false;
  for (;;) {
    if (!interrupted && stderr.includes(marker)) {
      proc.kill('SIGINT');
      interrupted = true;
    }
    const { value, done } = await reader.read();
    if (done) break;
    stderr += decoder.decode(value, { stream: true });
  }
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, stderr };
}

async function inTerminal(command: string, input: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn(['script', '-qec', command, '/dev/null'], {
    cwd: box.cwd,
    env: { ...process.env, ONCEQ_DB: '', ...env },
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  proc.stdin.write(input);
  proc.stdin.flush();
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  // Ctrl-D ends the terminal input once the child is reading (sent until it exits).
  const eof = setInterval(() => {
    try {
      proc.stdin.write('\x04');
      proc.stdin.flush();
    } catch {}
  }, 500);
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  clearTimeout(timer);
  clearInterval(eof);
  return { code, stdout };
}

describe('work says which handler it uses and where that came from', () => {
  test('default, config, flag', async () => {
    await box.run(['enqueue', DEMO_JSONL]);
    const byDefault = await box.run(['work', '--max', '1']);
    expect(byDefault.stderr).toContain('handler v1 (from the default)');
    writeFileSync(join(box.cwd, 'onceq.config.json'), '{"handler":"v2"}');
    const fromConfig = await box.run(['work', '--max', '1', '--json']);
    expect(json(fromConfig)).toMatchObject({ handler: 'v2', handler_source: 'config' });
    const human = await box.run(['work', '--max', '1']);
    expect(human.stderr).toContain('handler v2 (from onceq.config.json)');
    const flag = await box.run(['work', '--handler', 'v1']);
    expect(flag.stderr).toContain('handler v1 (from --handler)');
  });
});

describe('read-only commands refuse a missing store and never write', () => {
  test('status, show, dlq, list on a mistyped --db: exit 2 naming the path, no file', async () => {
    for (const args of [['status'], ['show', 'E0001'], ['dlq'], ['list']]) {
      const r = await box.run([...args, '--db', 'typo.db']);
      expect(r.code).toBe(2);
      expect(r.stderr).toStartWith(`onceq: no store at ${join(box.cwd, 'typo.db')} (from --db)`);
      expect(existsSync(join(box.cwd, 'typo.db'))).toBe(false);
    }
  });

  test('a command that creates a store says so; a read leaves the file byte for byte', async () => {
    const created = await box.run(['enqueue', DEMO_JSONL]);
    expect(created.stderr).toBe(`creating a new store at ${join(box.cwd, 'onceq.db')}\n`);
    const again = await box.run(['enqueue', DEMO_JSONL]);
    expect(again.stderr).toBe('');
    const db = join(box.cwd, 'onceq.db');
    const before = readFileSync(db);
    const mtime = statSync(db).mtimeMs;
    for (const args of [['status'], ['dlq'], ['list'], ['show', 'E0001']]) {
      expect((await box.run(args)).code).toBe(0);
    }
    expect(readFileSync(db).equals(before)).toBe(true);
    expect(statSync(db).mtimeMs).toBe(mtime);
  });
});

/** `chattr +i` works here (root on ext4 and the like): the closest thing to read-only media. */
const canFreeze = (() => {
  const probe = join(tmpdir(), `onceq-chattr-${process.pid}`);
  writeFileSync(probe, '');
  const ok = Bun.spawnSync(['chattr', '+i', probe]).exitCode === 0;
  if (ok) Bun.spawnSync(['chattr', '-i', probe]);
  rmSync(probe, { force: true });
  return ok;
})();

describe('read-only commands on read-only media', () => {
  test.skipIf(!canFreeze)(
    'status and list read an immutable store in an immutable directory',
    async () => {
      expect((await box.run(['enqueue', DEMO_JSONL])).code).toBe(0);
      const db = join(box.cwd, 'onceq.db');
      expect(Bun.spawnSync(['chattr', '+i', db, box.cwd]).exitCode).toBe(0);
      try {
        const s = await box.run(['status', '--json']);
        expect(s.code).toBe(0);
        expect(json<{ messages: { ready: number } }>(s).messages.ready).toBe(4);
        expect((await box.run(['list'])).code).toBe(0);
        // A writer is refused with a cause, not SQLite's words.
        const w = await box.run(['work']);
        expect(w.code).toBe(2);
        expect(w.stderr).toContain('permission denied');
      } finally {
        Bun.spawnSync(['chattr', '-i', db, box.cwd]);
      }
    },
  );
});

describe('store paths that cannot work get a cause', () => {
  test('a missing directory, a directory as the store', async () => {
    const r = await box.run(['enqueue', DEMO_JSONL, '--db', 'no/such/dir/q.db']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the directory ${join(box.cwd, 'no/such/dir')} does not exist`);
    const d = await box.run(['work', '--db', '.']);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain('is a directory, not a store file');
  });
});

describe('a rejected batch counts every problem; --json prints them on stdout', () => {
  test('30 bad lines: (30 problems), 20 listed, one JSON document, exit 3', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => line(i + 1, '[]'));
    writeFileSync(join(box.cwd, 'bad.jsonl'), `${lines.join('\n')}\n`);
    const r = await box.run(['enqueue', 'bad.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toStartWith('onceq: batch rejected, nothing was written (30 problems):');
    expect(r.stderr).toContain('… and 10 more problems');
    const j = await box.run(['enqueue', 'bad.jsonl', '--json']);
    expect(j.code).toBe(3);
    const doc = json<{ error: { code: string; problems: number; issues: unknown[] } }>(j);
    expect(doc.error).toMatchObject({ code: 'batch_rejected', problems: 30, exit_code: 3 });
    expect(doc.error.issues).toHaveLength(21);
    expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
  });

  test('any --json failure is one JSON document on stdout', async () => {
    const r = await box.run(['show', 'E0001', '--json', '--db', 'nope.db']);
    expect(r.code).toBe(2);
    expect(json(r)).toMatchObject({ error: { code: 'usage', exit_code: 2 } });
  });
});

describe('large batches: a hint, and enqueue --split', () => {
  const big = (n: number, conflictAt?: number) =>
    `${Array.from({ length: n }, (_, i) =>
      line(i + 1, i + 1 === conflictAt ? '{"category":"pen","amount_cents":1}' : undefined),
    ).join('\n')}\n`;

  test('1,001 lines: thousands separators and the split hint', async () => {
    writeFileSync(join(box.cwd, 'big.jsonl'), big(1001));
    const r = await box.run(['enqueue', 'big.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('the batch has 1,001 non-empty lines, the limit is 1,000');
    expect(r.stderr).toContain('split -l 1000');
    expect(r.stderr).toContain('--split');
  });

  test('--split: 2,500 lines as three batches, each reported', async () => {
    writeFileSync(join(box.cwd, 'big.jsonl'), big(2500));
    const r = await box.run(['enqueue', '--split', 'big.jsonl']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'batch 1 of 3 (lines 1-1000): accepted 1000, duplicates 0',
        'batch 2 of 3 (lines 1001-2000): accepted 1000, duplicates 0',
        'batch 3 of 3 (lines 2001-2500): accepted 500, duplicates 0',
        'total: accepted 2500, duplicates 0',
        '',
      ].join('\n'),
    );
  });

  test('--split: batch 2 conflicts with the store: batch 1 stays, batch 3 is not tried', async () => {
    writeFileSync(
      join(box.cwd, 'one.jsonl'),
      `${line(1500, '{"category":"bag","amount_cents":5}')}\n`,
    );
    expect((await box.run(['enqueue', 'one.jsonl'])).code).toBe(0);
    writeFileSync(join(box.cwd, 'big.jsonl'), big(2500));
    const r = await box.run(['enqueue', '--split', 'big.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      'onceq: batch 2 of 3 (lines 1001-2000) rejected; batch 1 stays enqueued (1000 accepted); batch 3 was not attempted\n',
    );
    const s = json<{ messages: { ready: number } }>(await box.run(['status', '--json']));
    expect(s.messages.ready).toBe(1001);
  });

  test('--split: the first batch conflicts: nothing was enqueued, the next batch not attempted', async () => {
    writeFileSync(
      join(box.cwd, 'one.jsonl'),
      `${line(5, '{"category":"bag","amount_cents":5}')}\n`,
    );
    expect((await box.run(['enqueue', 'one.jsonl'])).code).toBe(0);
    writeFileSync(join(box.cwd, 'big.jsonl'), big(1500));
    const r = await box.run(['enqueue', '--split', 'big.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toStartWith(
      'onceq: batch 1 of 2 (lines 1-1000) rejected; nothing was enqueued; batch 2 was not attempted\n',
    );
  });

  test('what stays after a rejected batch of --split, in words for every position', () => {
    expect(splitOutcome(0, 1, 0)).toBe('nothing was enqueued');
    expect(splitOutcome(0, 3, 0)).toBe('nothing was enqueued; batches 2-3 were not attempted');
    expect(splitOutcome(1, 2, 1000)).toBe('batch 1 stays enqueued (1000 accepted)');
    expect(splitOutcome(2, 5, 2000)).toBe(
      'batches 1-2 stay enqueued (2000 accepted); batches 4-5 were not attempted',
    );
  });

  test('--split: a bad line anywhere rejects the file before anything is written', async () => {
    writeFileSync(
      join(box.cwd, 'big.jsonl'),
      big(2500, 2200).replace(
        line(2200, '{"category":"pen","amount_cents":1}'),
        '{"event_id":"bad"}',
      ),
    );
    const r = await box.run(['enqueue', '--split', 'big.jsonl']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('line 2200:');
    expect(existsSync(join(box.cwd, 'onceq.db'))).toBe(false);
  });
});

describe('times for people, epoch seconds for machines', () => {
  test('claim prints local and relative time; --json keeps seconds', async () => {
    await box.run(['enqueue', DEMO_JSONL, '--now', '1796022332']);
    const env = { env: { TZ: 'UTC' } };
    const r = await box.run(['claim', '--now', '1796022332', '--lease', '30'], env);
    expect(r.stdout).toContain('lease until 2026-11-30 07:06:02 (in 30 s)');
    const j = await box.run(['claim', '--now', '1796022332', '--json'], env);
    expect(json<{ lease_until: number }>(j).lease_until).toBe(1796022362);
    const shown = await box.run(['show', 'E0001', '--now', '1796022392'], env);
    expect(shown.stdout).toMatch(/lease_until +2026-11-30 07:06:02 \(30 s ago\)/);
  });
});

describe('inspection that scales', () => {
  test('list pages by id with --state, --limit, --after; dlq --limit; payloads truncated', async () => {
    const long = `{"category":"toy","amount_cents":1,"note":"${'x'.repeat(200)}"}`;
    const lines = [1, 2, 3, 4, 5].map((i) => line(i, i > 3 ? long : undefined));
    writeFileSync(join(box.cwd, 'b.jsonl'), `${lines.join('\n')}\n`);
    await box.run(['enqueue', 'b.jsonl']);
    await box.run(['work']);
    const page = await box.run(['list', '--limit', '2']);
    expect(page.stdout).toContain('E0001');
    expect(page.stdout).toContain('more: onceq list --limit 2 --after E0002');
    const next = json<{ messages: { event_id: string }[]; next: string | null }>(
      await box.run(['list', '--limit', '2', '--after', 'E0002', '--json']),
    );
    expect(next.messages.map((m) => m.event_id)).toEqual(['E0003', 'E0004']);
    const dead = json<{ messages: { event_id: string }[] }>(
      await box.run(['list', '--state', 'dead', '--json']),
    );
    expect(dead.messages.map((m) => m.event_id)).toEqual(['E0004', 'E0005']);
    const bad = await box.run(['list', '--state', 'gone']);
    expect(bad.code).toBe(2);
    const dlq = await box.run(['dlq', '--limit', '1']);
    expect(dlq.stdout).toStartWith('2 dead messages, the first 1 (--limit):');
    expect(dlq.stdout).not.toContain('x'.repeat(100));
    expect(dlq.stdout).toContain('…');
    const full = await box.run(['show', 'E0004']);
    expect(full.stdout).toContain('x'.repeat(200));
  });
});

describe('terminal hints and Ctrl-C', () => {
  test('enqueue - in a terminal says how to end the input', async () => {
    const lines = readFileSync(DEMO_JSONL, 'utf8');
    const r = await inTerminal(`bun ${BIN} enqueue -`, lines);
    expect(r.stdout).toContain('press Ctrl-D on an empty line');
    expect(r.stdout).toContain('accepted 4, duplicates 1');
  });

  test('Ctrl-C during claim --hold says the claim was rolled back, and it was', async () => {
    await box.run(['enqueue', DEMO_JSONL]);
    const { code, stderr } = await interruptOnceLogged(
      box,
      ['claim', '--hold'],
      'press Enter to commit',
    );
    expect(code).toBe(130);
    expect(stderr).toContain('onceq: interrupted: the claim of E0001 was rolled back');
    const shown = json<{ state: string; attempts: number }>(
      await box.run(['show', 'E0001', '--json']),
    );
    expect(shown).toMatchObject({ state: 'ready', attempts: 0 });
  });
});

describe('Ctrl-C during work', () => {
  test('prints what was done so far and exits 130; nothing half-applied', async () => {
    // 3,000 messages one transaction each, answered between chunks of 500: the interrupt
    // sent as soon as work has started lands before the last chunk.
    const lines = Array.from({ length: 3000 }, (_, i) => line(i));
    writeFileSync(join(box.cwd, 'many.jsonl'), `${lines.join('\n')}\n`);
    expect((await box.run(['enqueue', '--split', 'many.jsonl'])).code).toBe(0);
    const { code, stderr } = await interruptOnceLogged(
      box,
      ['work', '--batch', '1'],
      '(from the default)',
    );
    expect(code).toBe(130);
    expect(stderr).toContain('onceq: interrupted: ');
    expect(stderr).toContain('stopped between transactions, nothing is half done');
    const s = json<{ messages: { done: number; ready: number; leased: number }; effects: number }>(
      await box.run(['status', '--json']),
    );
    // Every done message has its effect; the interrupted one did not half-apply.
    expect(s.effects).toBe(s.messages.done);
    expect(s.messages.done).toBeLessThan(3000);
  });
});

describe('consistency', () => {
  test('complete of an unknown id, --now out of range, near-miss names, demo and ONCEQ_DB', async () => {
    await box.run(['enqueue', DEMO_JSONL]);
    const unknown = await box.run(['complete', 'E9999', '--generation', '1']);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toBe('onceq: no message with event id E9999\n');
    const now = await box.run(['status', '--now', '99999999999999']);
    expect(now.code).toBe(2);
    expect(now.stderr).toContain('--now is out of range');
    const cmd = await box.run(['stauts']);
    expect(cmd.stderr).toContain('did you mean status?');
    const flag = await box.run(['work', '--hander', 'v2']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('did you mean --handler?');
    const demo = await box.run(['demo', '--db', 'onceq.db']);
    expect(demo.code).toBe(2);
    expect(demo.stderr).toStartWith('onceq: ');
    const withEnv = await box.run(['demo', '--json'], { env: { ONCEQ_DB: 'elsewhere.db' } });
    expect(withEnv.code).toBe(0);
    expect(withEnv.stderr).toContain('ONCEQ_DB is not used by the demo');
    expect(existsSync(join(box.cwd, 'elsewhere.db'))).toBe(false);
  });

  test('setup --no-run prints no status; setup --help says what --yes reuses', async () => {
    const r = await box.run(['setup', '--yes', '--no-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('Status');
    const help = await box.run(['setup', '--help']);
    expect(help.stdout).toContain('reuse the store and handler of the current onceq.config.json');
  });
});

describe('config secrets and CI mode', () => {
  test('a config holding a password is written 0600, one without 0644', async () => {
    const url = ['postgres://u', 'pw@127.0.0.1:9/x'].join(':');
    const secret = await writeConfig(box.cwd, { db: url });
    expect(statSync(secret).mode & 0o777).toBe(0o600);
    const plain = await writeConfig(box.cwd, { db: './onceq.db' });
    expect(statSync(plain).mode & 0o777).toBe(0o644);
  });

  test('CI=1 in a real terminal: setup explains that CI mode disables prompts', async () => {
    const r = await inTerminal(`bun ${BIN} setup`, '', { CI: '1' });
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('CI mode disables prompts even in a terminal');
  });
});

describe('shell completion', () => {
  test('bash completes commands and flags; zsh and fish scripts name every command', async () => {
    const bash = await box.run(['completion', 'bash']);
    const script = join(box.cwd, 'c.bash');
    writeFileSync(script, bash.stdout);
    const probe = (words: string) =>
      runProcess([
        'bash',
        '-c',
        `source ${script}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _onceq; echo "\${COMPREPLY[*]}"`,
      ]);
    expect((await probe('onceq st')).stdout.trim()).toBe('status');
    expect((await probe('onceq work --han')).stdout.trim()).toBe('--handler --handler-timeout');
    for (const shell of ['zsh', 'fish']) {
      const r = await box.run(['completion', shell]);
      for (const name of ['list', 'enqueue', 'completion']) expect(r.stdout).toContain(name);
    }
    expect((await box.run(['completion', 'tcsh'])).code).toBe(2);
  });
});
