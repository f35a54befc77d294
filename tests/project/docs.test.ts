/**
 * The docs a user reads stay short, true to the CLI and free of workshop notes:
 * README.md is at most 250 lines; no page, help text or code comment carries issue
 * numbers, branch names, commit hashes, load averages, run timestamps or remarks on who
 * ran what; every `onceq` command and flag the docs name exists in the command specs;
 * docs/cli.md is what the specs generate. Each rule is shown catching a planted case.
 */
import { describe, expect, test } from 'bun:test';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { GLOBAL_FLAGS } from '@onceq/cli/args.ts';
import type { AnyCommand } from '@onceq/cli/command.ts';
import { DOC_TOPICS } from '@onceq/cli/commands/docs.ts';
import { loadCommands } from '@onceq/cli/commands/index.ts';
import { flagWords } from '@onceq/cli/flags.ts';
import { commandHelp, globalHelp } from '@onceq/cli/help.ts';
import { cliReference } from '@onceq/cli/reference.ts';
import { DEMO_JSONL, runOnceq } from '../support/cli.ts';

const ROOT = resolve(import.meta.dir, '..', '..');
const README_MAX_LINES = 250;

const commands = await loadCommands();

/** The pages a user or a contributor reads. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...docs];
}

const SKIPPED_DIRS = ['node_modules', '.git', 'dist', 'reports', 'bench-results', '.stryker-tmp'];
/** This file plants the notes it looks for. */
const THIS_FILE = import.meta.path;

/** Source files whose comments are checked. */
function sources(dir = ROOT): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED_DIRS.includes(entry.name)) continue;
    const path = join(dir, entry.name);
    if (path === THIS_FILE) continue;
    if (entry.isDirectory()) out.push(...sources(path));
    else if (/\.(ts|sh)$/.test(entry.name) || entry.name === 'run') out.push(relative(ROOT, path));
  }
  return out;
}

/** Workshop notes: what a page, a help text or a comment must never say. */
const WORKSHOP: readonly [string, RegExp][] = [
  ['an issue number', /\bissues?\s+#?\d+|\bPR\s*#\d+/i],
  ['a branch name', /\bh\/[a-z][\w-]*|\bbranch\s+`[^`]+`/],
  [
    'a commit hash',
    /\b(?:commit|at|since|after|before|on)\s+`?(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}`?\b/,
  ],
  ['a load average', /\bload average|\bloadavg\b|\bload \d+(?:\.\d+)?\b/i],
  [
    'a remark on who ran what',
    /other (?:engineers|sessions)|shared (?:by|with) (?:[\w']+ ){0,4}(?:engineers|helpers|sessions|test runs)|heavily loaded|this session|when we (?:did|ran)/i,
  ],
  ['a run timestamp', /\b\d\d:\d\d(?:–\d\d:\d\d)? UTC\b|\bUTC on 20\d\d-/],
  [
    'a pointer into a retired page',
    /\b(?:VALIDATION|START_HERE|EXERCISES)\.md\b|docs\/(?:testing|mutation)\.md|README, "/,
  ],
];

function workshopNotes(text: string): string[] {
  return WORKSHOP.filter(([, re]) => re.test(text)).map(([what]) => what);
}

/** The comment lines of a source file (`//`, `/* … *\/` and `#` in shell). */
function comments(path: string, text: string): string[] {
  const shell = path.endsWith('.sh') || path.endsWith('/run');
  return text
    .split('\n')
    .map((line, i) => ({ line, n: i + 1 }))
    .filter(({ line }) => (shell ? /^\s*#/.test(line) : /^\s*(?:\/\/|\/\*|\*)|\s\/\/\s/.test(line)))
    .map(({ line, n }) => `${path}:${n}: ${line.trim()}`);
}

/**
 * A measured figure: a rate (`1,479 msg/s`, `86,274 lines/s`), a ratio of two runs
 * (`1.5×`, `3x faster`, `33 % slower`), a CPU cost (`640 ms of server CPU`, `220 ms per
 * 1000`) or a tail latency (`p99 … 9 ms`). Figures live in docs/benchmarks.md, which only
 * the bench writes, and in commit messages; a page or a comment says what was decided
 * and why, not the run it was decided on.
 */
const FIGURE =
  /\d[\d,.]*(?:–[\d,.]+)?\s*(?:k\s*)?(?:msg|messages|lines|events|rows|jobs|statements)\/s\b|\d[\d,.]*\s+(?:msg|messages|lines|events)\s+(?:per|a)\s+second|\b\d+(?:\.\d+)?(?:–\d+(?:\.\d+)?)?\s?×|\b\d+(?:\.\d+)?x (?:faster|slower)|\d+(?:–\d+)?\s?% (?:faster|slower)|\d[\d,.]*(?:–[\d,.]+)?\s*ms (?:of (?:server |worker |client )?CPU|per 1,?000)|\bp99\b[^.]*\d+\s?ms/i;

/** Where figures may stand: the page the bench writes, and the bench's own code. */
function figuresAllowed(path: string): boolean {
  return path === 'docs/benchmarks.md' || path.startsWith('apps/bench/');
}

function figuresIn(path: string, lines: readonly string[]): string[] {
  if (figuresAllowed(path)) return [];
  return lines.filter((line) => FIGURE.test(line)).map((line) => `${path}: ${line.trim()}`);
}

/** Lines of generated pages that must carry run facts: the bench writes them. */
const RUN_FACTS = /^- (?:date|commit): /;

function notesIn(path: string, text: string): string[] {
  return text
    .split('\n')
    .map((line, i) => ({ line, n: i + 1 }))
    .filter(({ line }) => !(path === 'docs/benchmarks.md' && RUN_FACTS.test(line)))
    .flatMap(({ line, n }) =>
      workshopNotes(line).map((what) => `${path}:${n}: ${what}: ${line.trim()}`),
    );
}

/** Text in backticks and in fenced blocks: where the docs name commands and flags. */
function codeOf(markdown: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (fenced) out.push(line);
    else for (const m of line.matchAll(/`([^`]+)`/g)) out.push(m[1] as string);
  }
  return out;
}

/**
 * The `onceq …` invocations of a line of code: each shell segment (split at `|`, `;`,
 * `&&`, `$(`) that starts with `onceq`, after environment assignments and `time`. Prose
 * in a code block ("the onceq command") is not an invocation.
 */
function invocations(code: string): string[] {
  return code
    .split(/\|\|?|;|&&|\$\(|\)|#/)
    .map((part) =>
      part.trim().replace(/^(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:time\s+|exec\s+)?/, ''),
    )
    .filter((part) => /^onceq\s/.test(part));
}

/**
 * Flags named on their own in the text (`` `--max N` ``) that no command takes. Only where
 * the page is about onceq's CLI: CONTRIBUTING.md names bun's and the bench's flags too.
 */
function unknownLoneFlags(markdown: string, known: readonly AnyCommand[]): string[] {
  const all = new Set([...flagWords(GLOBAL_FLAGS), ...known.flatMap((c) => flagWords(c.flags))]);
  const problems: string[] = [];
  for (const line of markdown.split('\n')) {
    for (const m of line.matchAll(/`(--[a-z][a-z0-9-]*)(?:[ =][^`]*)?`/g)) {
      if (!all.has(m[1] as string)) problems.push(`${m[1]}: no command takes this flag`);
    }
  }
  return problems;
}

/** `onceq <command> …` names that do not exist, and flags a command does not take. */
function unknownNames(markdown: string, known: readonly AnyCommand[]): string[] {
  const byName = new Map(known.map((c) => [c.name, c]));
  const globals = flagWords(GLOBAL_FLAGS);
  const problems: string[] = [];
  for (const code of codeOf(markdown)) {
    for (const m of invocations(code)) {
      const [, name = '', rest = ''] = /^onceq\s+([a-z][a-z-]*)(.*)$/.exec(m) ?? [];
      if (name === '') continue;
      const command = byName.get(name);
      if (command === undefined) {
        problems.push(`onceq ${name}: no such command`);
        continue;
      }
      if (name === 'docs') {
        const topic = /^\s+([a-z]+)/.exec(rest)?.[1];
        if (topic !== undefined && !(topic in DOC_TOPICS))
          problems.push(`onceq docs ${topic}: no such topic`);
      }
      const allowed = new Set([...globals, ...flagWords(command.flags), '-h', '-v', '-y']);
      for (const f of rest.matchAll(/(?<![\w-])(--?[a-z][a-z0-9-]*)/g)) {
        if (!allowed.has(f[1] as string)) problems.push(`onceq ${name} ${f[1]}: no such flag`);
      }
    }
  }
  return problems;
}

describe('README.md', () => {
  test('its own-handler example runs: the demo batch, 4 done, total 20000', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Your own handler'));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code).toContain('export function handle');
    const dir = mkdtempSync(join(tmpdir(), 'onceq-readme-'));
    try {
      // Resolves `@onceq/handler` as a file in the clone's examples/ does.
      symlinkSync(join(ROOT, 'examples', 'node_modules'), join(dir, 'node_modules'));
      writeFileSync(join(dir, 'my-handler.ts'), code as string);
      const db = join(dir, 'shop.db');
      expect((await runOnceq(['enqueue', DEMO_JSONL, '--db', db], dir)).code).toBe(0);
      const work = await runOnceq(['work', '--handler', './my-handler.ts', '--db', db], dir);
      expect(work.stdout).toContain('claimed 4 messages: 4 done');
      const status = await runOnceq(['status', '--json', '--db', db], dir);
      expect(JSON.parse(status.stdout)).toMatchObject({ total: 20000, effects: 4 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test(`is at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});

describe('no workshop notes', () => {
  test('in README, CONTRIBUTING, CHANGELOG and docs/', () => {
    const found = pages().flatMap((p) => notesIn(p, readFileSync(join(ROOT, p), 'utf8')));
    expect(found).toEqual([]);
  });

  test('in --help and every command help', async () => {
    const texts = [
      (await globalHelp('0.0.0')).join('\n'),
      ...commands.map((c) => commandHelp(c).join('\n')),
    ];
    expect(texts.flatMap((t) => notesIn('help', t))).toEqual([]);
  });

  test('in code comments', () => {
    const found = sources().flatMap((path) =>
      comments(path, readFileSync(join(ROOT, path), 'utf8')).flatMap((line) =>
        workshopNotes(line).map((what) => `${what}: ${line}`),
      ),
    );
    expect(found).toEqual([]);
  });

  test('no measured figure in a page, a help text or a code comment (only docs/benchmarks.md)', async () => {
    const found = [
      ...pages().flatMap((p) => figuresIn(p, readFileSync(join(ROOT, p), 'utf8').split('\n'))),
      ...sources().flatMap((path) =>
        figuresIn(path, comments(path, readFileSync(join(ROOT, path), 'utf8'))),
      ),
      ...figuresIn('help', (await globalHelp('0.0.0')).concat(...commands.map(commandHelp))),
    ];
    expect(found).toEqual([]);
  });

  test('catches a measured figure when planted, and not a setting', () => {
    for (const planted of [
      'on SQLite with synchronous=FULL it gave ~22,500 msg/s',
      'from 979 to 1,479 msg/s at FULL',
      'awaiting every step cost 1.5× its CPU',
      '200 added 9-33 % but p99 went to ~35 ms',
      'enqueue went from 79,818 to 86,274–92,396 lines/s',
      'the server spent 640 ms of server CPU',
      'about 200 ms per 1,000 messages',
      'it ran 3x faster',
    ]) {
      expect({ planted, found: FIGURE.test(planted) }).toEqual({ planted, found: true });
    }
    for (const setting of [
      'polling backs off to 5 s',
      'the lease is 30 s by default',
      'batch 100, at most 1000 lines',
      '--handler-timeout 60000',
    ]) {
      expect({ setting, found: FIGURE.test(setting) }).toEqual({ setting, found: false });
    }
    expect(figuresIn('docs/benchmarks.md', ['1,479 msg/s'])).toEqual([]);
  });

  test('catches each kind of note when planted', () => {
    for (const planted of [
      'see issue 13 for the targets',
      'measured on h/pgbatch',
      'fixed at 6051c12',
      'load average 12.9 at the time',
      'the machine was heavily loaded by five other engineers',
      'one run at 08:45 UTC',
      'the figures are in VALIDATION.md',
      'see README, "Fair sharing"',
    ]) {
      expect({ planted, found: workshopNotes(planted).length > 0 }).toEqual({
        planted,
        found: true,
      });
    }
    expect(workshopNotes('the fence lives in the SQL WHERE; sha256 73521a88061ee7a5')).toEqual([]);
    expect(comments('x.ts', 'const a = 1; // see issue 9\nconst b = "issue 9";')).toEqual([
      'x.ts:1: const a = 1; // see issue 9',
    ]);
  });
});

/** Repository paths a page names in backticks (`tests/x.test.ts`) that do not exist. */
function missingPaths(markdown: string): string[] {
  const paths = [
    ...markdown.matchAll(
      /`((?:packages|apps|tests|scripts|examples|docs)\/[\w./-]+\.(?:ts|sh|md|json|jsonl))(?::[\d-]+)?`/g,
    ),
  ].map((m) => m[1] as string);
  return [...new Set(paths)].filter((path) => !existsSync(join(ROOT, path)));
}

describe('every file the docs name exists', () => {
  test('in README, CONTRIBUTING and docs/', () => {
    const found = pages().flatMap((p) =>
      missingPaths(readFileSync(join(ROOT, p), 'utf8')).map((x) => `${p}: ${x}`),
    );
    expect(found).toEqual([]);
  });

  test('catches a path that is gone', () => {
    expect(
      missingPaths('see `tests/queue-edges.test.ts` and `tests/project/docs.test.ts`'),
    ).toEqual(['tests/queue-edges.test.ts']);
  });
});

describe('every command and flag the docs name exists', () => {
  test('in README, CONTRIBUTING and docs/', () => {
    const found = pages().flatMap((p) =>
      unknownNames(readFileSync(join(ROOT, p), 'utf8'), commands).map((x) => `${p}: ${x}`),
    );
    expect(found).toEqual([]);
  });

  test('flags named on their own in README and docs/ exist', () => {
    const found = pages()
      .filter((p) => p !== 'CONTRIBUTING.md' && p !== 'docs/benchmarks.md')
      .flatMap((p) =>
        unknownLoneFlags(readFileSync(join(ROOT, p), 'utf8'), commands).map((x) => `${p}: ${x}`),
      );
    expect(found).toEqual([]);
    expect(unknownLoneFlags('with `--lease-forever 5` or `--lease S`', commands)).toEqual([
      '--lease-forever: no command takes this flag',
    ]);
  });

  test('catches a command, a flag and a docs topic that do not exist', () => {
    const page = [
      'Run `onceq drain --fast`, then:',
      '```sh',
      'onceq worker --lease-forever 5 --batch 10',
      'onceq docs handlerz',
      'onceq status --json | jq .total',
      'ONCEQ_DB=x.db onceq fail E0001 --generation 1 --temporay',
      'apps/cli   the onceq command, parsing and printing only',
      '```',
    ].join('\n');
    expect(unknownNames(page, commands)).toEqual([
      'onceq drain: no such command',
      'onceq worker --lease-forever: no such flag',
      'onceq docs handlerz: no such topic',
      'onceq fail --temporay: no such flag',
    ]);
  });

  test('docs/cli.md is what the command specs generate (bun scripts/cli-docs.ts)', () => {
    expect(readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8')).toBe(cliReference(commands));
  });
});
