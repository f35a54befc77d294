/**
 * `onceq setup`: the steps with a fake prompter (in process), and the real process
 * without a terminal (it must never hang: exit 2 with a hint, or run with --yes).
 */
import { afterEach, describe, expect, test } from 'bun:test';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '@onceq/cli/cli.ts';
import type { Context } from '@onceq/cli/context.ts';
import { CancelledError } from '@onceq/cli/errors.ts';
import type { Prompter } from '@onceq/cli/setup/prompter.ts';
import { getIdPolicy, openStore } from '@onceq/core';
import { formatIdPolicy } from '@onceq/core/internal';
import { cliSandbox, json } from '../support/cli.ts';

type Answer = string | boolean | typeof CANCEL;
const CANCEL = Symbol('cancel');

/** A prompter that answers from a script, in order, and records every question. */
function fakePrompter(script: Answer[]) {
  const asked: string[] = [];
  const shown: string[] = [];
  const next = (message: string): Answer => {
    asked.push(message);
    if (script.length === 0) throw new Error(`unexpected prompt: ${message}`);
    const answer = script.shift() as Answer;
    if (answer === CANCEL) throw new CancelledError();
    return answer;
  };
  const prompter: Prompter = {
    intro: (t) => shown.push(`intro ${t}`),
    text: async (o) => {
      const a = next(o.message);
      return a === '' ? (o.defaultValue ?? '') : String(a);
    },
    select: async (o) => next(o.message) as never,
    confirm: async (o) => next(o.message) as boolean,
    spinner: () => ({
      start: () => {},
      stop: (m) => shown.push(`step ${m}`),
      error: (m) => shown.push(`error ${m}`),
    }),
    note: (m, t) => shown.push(`note ${t}\n${m}`),
    info: (m) => shown.push(`info ${m}`),
    warn: (m) => shown.push(`warn ${m}`),
    outro: (m) => shown.push(`outro ${m}`),
    cancel: (m) => shown.push(`cancel ${m}`),
  };
  return { prompter, asked, shown };
}

/** A terminal-like context around a fake prompter; stdout/stderr captured. */
function terminal(cwd: string, prompter: Prompter) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: Context = {
    cwd,
    env: {},
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    readStdin: async () => new Uint8Array(),
    waitForLine: async () => {},
    progress: null,
    interactive: true,
    prompter: async () => prompter,
  };
  return { ctx, out, err };
}

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-setup-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The id policy recorded in a SQLite store. */
async function storePolicy(path: string): Promise<string> {
  const store = await openStore(path);
  try {
    return formatIdPolicy(await getIdPolicy(store));
  } finally {
    await store.close();
  }
}

/** A handler module of the user's own: every valid event is one cent of `book`. No import. */
const FLAT_HANDLER = `export const version = 'flat-1';
export function handle() {
  return { category: 'book', amountCents: 1 };
}
`;

const readConfig = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'onceq.config.json'), 'utf8'));

describe('setup with prompts (fake prompter)', () => {
  test('the store is checked first: a server that cannot be reached stops setup before the other questions', async () => {
    const dir = tempDir();
    // Port 9 on 127.0.0.1: nothing listens there.
    const fake = fakePrompter(['postgres://app@127.0.0.1:9/app', true, 'v1', true, 'lesson']);
    const { ctx, err } = terminal(dir, fake.prompter);
    expect(await runCli(['setup', '--now', '1000'], ctx)).toBe(1);
    expect(fake.asked).toHaveLength(1);
    expect(fake.asked[0]).toContain('store');
    expect(err.join('\n')).toContain(
      'cannot reach PostgreSQL at 127.0.0.1:9/app: connection refused',
    );
    expect(existsSync(join(dir, 'onceq.config.json'))).toBe(false);
  });

  test('answers → store created, sample loaded, worker run once, config written', async () => {
    const dir = tempDir();
    const fake = fakePrompter(['store.db', true, 'v2', true, 'general']);
    const { ctx, err } = terminal(dir, fake.prompter);
    expect(await runCli(['setup', '--now', '1000'], ctx)).toBe(0);
    expect(err).toEqual([]);
    expect(fake.asked).toHaveLength(5);
    expect(fake.asked[4]).toContain('id policy');
    expect(await storePolicy(join(dir, 'store.db'))).toBe('general');
    expect(fake.asked[0]).toContain('store');
    expect(readConfig(dir)).toEqual({ db: 'store.db', handler: 'v2' });
    expect(existsSync(join(dir, 'store.db'))).toBe(true);
    const shown = fake.shown.join('\n');
    expect(shown).toContain('Sample events: accepted 4, duplicates 1');
    expect(shown).toContain('claimed 4: 4 done, 0 retried, 0 dead');
    expect(shown).toMatch(/^total\s+20000$/m);
    // The next commands as a user of the installed onceq types them.
    expect(shown).toContain('outro Ready. Next: onceq status · onceq dlq · onceq work');
    // No stray temporary file next to the config.
    expect(readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  test('the defaults: an empty answer takes ./onceq.db; v1 sends the toy to the DLQ', async () => {
    const dir = tempDir();
    const fake = fakePrompter(['', true, 'v1', true, 'lesson']);
    const { ctx } = terminal(dir, fake.prompter);
    expect(await runCli(['setup', '--now', '1000'], ctx)).toBe(0);
    expect(readConfig(dir)).toEqual({ db: './onceq.db', handler: 'v1' });
    expect(fake.shown.join('\n')).toContain('3 done, 0 retried, 1 dead');
  });

  test('every flag answers its prompt: nothing is asked', async () => {
    const dir = tempDir();
    const fake = fakePrompter([]);
    const { ctx } = terminal(dir, fake.prompter);
    const code = await runCli(
      ['setup', '--db', 'x.db', '--handler', 'v2', '--no-sample', '--no-run'],
      ctx,
    );
    expect(code).toBe(0);
    expect(fake.asked).toEqual([]);
    expect(readConfig(dir)).toEqual({ db: 'x.db', handler: 'v2' });
    // --no-run: no status table, since no run computed anything worth showing.
    expect(fake.shown.join('\n')).not.toContain('note Status');
    expect(fake.shown.join('\n')).not.toMatch(/^total\s+0$/m);
  });

  test('some flags: only the rest is asked', async () => {
    const dir = tempDir();
    const fake = fakePrompter([false, false, 'lesson']);
    const { ctx } = terminal(dir, fake.prompter);
    expect(await runCli(['setup', '--db', 'y.db', '--handler', 'v1'], ctx)).toBe(0);
    expect(fake.asked).toHaveLength(3);
    expect(fake.asked.join(' ')).not.toContain('handler');
  });

  test('cancel (Ctrl-C) → "setup cancelled, nothing written", exit 130, no config, no store', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'onceq.config.json'), '{"db":"old.db","handler":"v1"}\n');
    const before = readFileSync(join(dir, 'onceq.config.json'), 'utf8');
    const fake = fakePrompter(['new.db', true, CANCEL]);
    const { ctx } = terminal(dir, fake.prompter);
    expect(await runCli(['setup'], ctx)).toBe(130);
    expect(fake.shown).toContain('cancel setup cancelled, nothing written');
    expect(readFileSync(join(dir, 'onceq.config.json'), 'utf8')).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['onceq.config.json']);
  });

  test('the id policy: pattern asks for the regex and records it; --id-policy answers without a prompt', async () => {
    const dir = tempDir();
    const fake = fakePrompter(['p.db', false, 'v1', false, 'pattern', 'evt_[0-9]+']);
    const { ctx } = terminal(dir, fake.prompter);
    expect(await runCli(['setup', '--now', '1000'], ctx)).toBe(0);
    expect(await storePolicy(join(dir, 'p.db'))).toBe('pattern:evt_[0-9]+');
    const flagged = tempDir();
    const quiet = fakePrompter([]);
    const args = ['setup', '--yes', '--db', 'g.db', '--id-policy', 'general', '--no-run'];
    expect(await runCli(args, terminal(flagged, quiet.prompter).ctx)).toBe(0);
    expect(quiet.asked).toEqual([]);
    expect(await storePolicy(join(flagged, 'g.db'))).toBe('general');
    const bad = terminal(tempDir(), fakePrompter([]).prompter);
    expect(await runCli(['setup', '--yes', '--id-policy', 'pattern:('], bad.ctx)).toBe(2);
    expect(bad.err.join('\n')).toContain('invalid id policy');
  });

  test('the existing config gives the defaults', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'onceq.config.json'), '{"db":"kept.db","handler":"v2"}\n');
    const { ctx } = terminal(dir, fakePrompter([]).prompter);
    expect(await runCli(['setup', '--yes', '--no-run', '--no-sample'], ctx)).toBe(0);
    expect(readConfig(dir)).toEqual({ db: 'kept.db', handler: 'v2' });
  });

  test('a handler module the config names is kept by --yes and is what the worker runs', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'handlers'));
    writeFileSync(join(dir, 'handlers', 'flat.ts'), FLAT_HANDLER);
    const config = '{"db":"kept.db","handler":"./handlers/flat.ts"}\n';
    writeFileSync(join(dir, 'onceq.config.json'), config);
    const fake = fakePrompter([]);
    const { ctx, err } = terminal(dir, fake.prompter);
    expect(await runCli(['setup', '--yes', '--now', '1000'], ctx)).toBe(0);
    expect(err).toEqual([]);
    expect(readConfig(dir)).toEqual({ db: 'kept.db', handler: './handlers/flat.ts' });
    const shown = fake.shown.join('\n');
    // The module's rule, not v1's: the toy is done too, one cent each.
    expect(shown).toContain('Worker (flat-1) claimed 4: 4 done, 0 retried, 0 dead');
    expect(shown).toMatch(/^total\s+4$/m);
  });

  test('--handler takes a module path as worker --handler does; a bad value names both forms, nothing written', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'flat.ts'), FLAT_HANDLER);
    const { ctx } = terminal(dir, fakePrompter([]).prompter);
    expect(await runCli(['setup', '--yes', '--handler', './flat.ts', '--no-run'], ctx)).toBe(0);
    expect(readConfig(dir)).toEqual({ db: './onceq.db', handler: './flat.ts' });

    const other = tempDir();
    const bad = terminal(other, fakePrompter([]).prompter);
    expect(await runCli(['setup', '--yes', '--handler', 'v3'], bad.ctx)).toBe(2);
    expect(bad.err.join('\n')).toContain(
      '--handler must be one of v1, v2 or the path of a handler module (./my-handler.ts), got "v3"',
    );
    const missing = terminal(other, fakePrompter([]).prompter);
    expect(await runCli(['setup', '--yes', '--handler', './gone.ts'], missing.ctx)).toBe(2);
    expect(missing.err.join('\n')).toContain('./gone.ts: no such file');
    expect(readdirSync(other)).toEqual([]);
  });

  test('a store path that cannot work: exit 2, as for any command, and the old config untouched', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'adir'));
    writeFileSync(join(dir, 'onceq.config.json'), '{"db":"old.db"}\n');
    const { ctx, err } = terminal(dir, fakePrompter([]).prompter);
    expect(await runCli(['setup', '--yes', '--db', 'adir'], ctx)).toBe(2);
    expect(err.join('\n')).toContain('cannot use the store adir:');
    expect(readFileSync(join(dir, 'onceq.config.json'), 'utf8')).toBe('{"db":"old.db"}\n');
  });
});

describe('setup without a terminal (the real process)', () => {
  test('without --yes: exit 2 at once with a hint listing the flags', async () => {
    const box = cliSandbox();
    try {
      for (const stdin of [undefined, '\n\n\n']) {
        const r = await box.run(['setup'], stdin === undefined ? {} : { stdin });
        // A prompt without a terminal never resolves: had setup asked, this run would
        // hang until the test's timeout instead of exiting 2 (no wall-clock assertion).
        expect(r.code).toBe(2);
        for (const flag of [
          '--yes',
          '--db',
          '--handler',
          '--sample/--no-sample',
          '--run/--no-run',
        ]) {
          expect(r.stderr).toContain(flag);
        }
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stdout).toBe('');
      }
      expect(readdirSync(box.cwd)).toEqual([]);
    } finally {
      box.cleanup();
    }
  });

  test('CI set, even with every other answer but one: exit 2 naming what is missing', async () => {
    const box = cliSandbox();
    try {
      const r = await box.run(['setup', '--db', 'a.db', '--handler', 'v1', '--no-sample'], {
        env: { CI: '1' },
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('unanswered: --run');
    } finally {
      box.cleanup();
    }
  });

  test('--yes takes the defaults, prints the steps and writes the config', async () => {
    const box = cliSandbox();
    try {
      const r = await box.run(['setup', '--yes', '--now', '1000']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Sample events: accepted 4, duplicates 1');
      expect(r.stdout).toMatch(/^\s+total\s+17000$/m);
      expect(r.stdout).not.toContain('\x1b[');
      expect(readConfig(box.cwd)).toEqual({ db: './onceq.db', handler: 'v1' });
      // The written config is what later commands use.
      const status = json<{ total: number; store: { location: string } }>(
        await box.run(['status', '--json']),
      );
      expect(status.store.location).toBe(join(box.cwd, 'onceq.db'));
      expect(status.total).toBe(17000);
    } finally {
      box.cleanup();
    }
  });

  test('--yes --json: one JSON document', async () => {
    const box = cliSandbox();
    try {
      const r = await box.run(['setup', '--yes', '--json', '--handler', 'v2', '--now', '1000']);
      expect(r.code).toBe(0);
      expect(json(r)).toMatchObject({
        handler: 'v2',
        created: true,
        sample: { accepted: 4, duplicates: 1 },
        work: { claimed: 4, done: 4 },
        status: { total: 20000 },
      });
    } finally {
      box.cleanup();
    }
  });
});
