/**
 * The packages meet through their public API only: a SQLite command
 * never loads the PostgreSQL driver, @onceq/handler reaches core only through
 * `@onceq/core`, never by a relative path into core's sources, and the public entries
 * are closed: every type their signatures name can be imported from them.
 */
import { describe, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { importCycles, importGraph } from '../support/import-graph.ts';
import { unexportedTypes } from '../support/public-types.ts';
import { runProcess } from '../support/spawn.ts';

const ROOT = resolve(import.meta.dir, '..', '..');
const CORE_SRC = join(ROOT, 'packages', 'core', 'src');
/** The entries the packed @onceq/core ships (scripts/pack.ts), root first. */
const PUBLIC_ENTRIES = ['index', 'postgres', 'metrics', 'service', 'admin', 'testing', 'webhooks'];

const CHILD = join(import.meta.dir, '..', 'support', 'child-modules.ts');

async function driverLoadedBy(mode: 'sqlite' | 'control') {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-boundaries-'));
  try {
    const args = ['bun', CHILD, join(dir, 'store.db'), ...(mode === 'control' ? ['control'] : [])];
    const run = await runProcess(args);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as { done: number; driver: string[] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('package boundaries', () => {
  test('a whole SQLite cycle through @onceq/core and @onceq/handler never loads the pg driver', async () => {
    const run = await driverLoadedBy('sqlite');
    expect(run.done).toBe(1);
    expect(run.driver).toEqual([]);
  }, 60_000);

  test('control: the same check sees the driver once the PostgreSQL backend is loaded', async () => {
    const run = await driverLoadedBy('control');
    expect(run.done).toBe(1);
    expect(run.driver.some((file) => /[\\/]pg[\\/]/.test(file))).toBe(true);
  }, 60_000);

  test('packages/handler imports core only as @onceq/core, its public root (no path into core/src, no subpath)', () => {
    const dir = join(import.meta.dir, '..', '..', 'packages', 'handler', 'src');
    const offenders = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .filter((name) =>
        /from '(\.\.\/\.\.\/core\/|@onceq\/core\/)/.test(readFileSync(join(dir, name), 'utf8')),
      );
    expect(offenders).toEqual([]);
    // The check can fail: this line is what it looks for.
    expect(/from '\.\.\/\.\.\/core\//.test("import { x } from '../../core/src/x.ts';")).toBe(true);
    expect(/from '@onceq\/core\//.test("import { x } from '@onceq/core/internal';")).toBe(true);
  });

  test('every type a public entry of @onceq/core names is importable from it or from the root', () => {
    const files = PUBLIC_ENTRIES.map((entry) => join(CORE_SRC, `${entry}.ts`));
    const open = unexportedTypes(files, CORE_SRC, ROOT);
    const missing = PUBLIC_ENTRIES.map((entry, i) => ({
      entry,
      missing: (open.get(files[i] as string) ?? []).map((t) => `${t.name} (${t.file})`),
    }));
    expect(missing).toEqual(PUBLIC_ENTRIES.map((entry) => ({ entry, missing: [] })));
  }, 300_000);

  test('control: the closure check names a type a signature uses but the entry does not export', () => {
    const dir = mkdtempSync(join(tmpdir(), 'onceq-closure-'));
    try {
      writeFileSync(
        join(dir, 'shapes.ts'),
        'export interface Hidden { size: number }\nexport interface Shown { inner: Hidden }\n',
      );
      writeFileSync(
        join(dir, 'entry.ts'),
        "import type { Shown } from './shapes.ts';\nexport type { Shown };\nexport function make(): Promise<Shown[]> { return Promise.resolve([]); }\n",
      );
      const entry = join(dir, 'entry.ts');
      expect(unexportedTypes([entry], dir, dir).get(entry)).toEqual([
        { name: 'Hidden', file: 'shapes.ts' },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  test('no import cycle among the files of packages/core/src and apps/*/src', () => {
    const core = JSON.parse(readFileSync(join(ROOT, 'packages', 'core', 'package.json'), 'utf8'))
      .exports as Record<string, string>;
    const packages: Record<string, string> = {
      '@onceq/handler': 'packages/handler/src/index.ts',
    };
    for (const [subpath, file] of Object.entries(core)) {
      packages[`@onceq/core${subpath.slice(1)}`] = join('packages', 'core', file);
    }
    const dirs = [
      'packages/core/src',
      'packages/handler/src',
      ...readdirSync(join(ROOT, 'apps')).map((app) => `apps/${app}/src`),
    ];
    const graph = importGraph(ROOT, dirs, packages);
    expect(graph.size).toBeGreaterThan(100);
    expect(importCycles(graph)).toEqual([]);
  });

  test('control: the cycle check finds a cycle of three files and a type-only one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
    ]);
    expect(importCycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    const dir = mkdtempSync(join(tmpdir(), 'onceq-cycles-'));
    try {
      writeFileSync(join(dir, 'x.ts'), "import type { Y } from './y.ts';\nexport type X = Y[];\n");
      writeFileSync(
        join(dir, 'y.ts'),
        "import type { X } from './x.ts';\nexport type Y = X | 1;\n",
      );
      writeFileSync(join(dir, 'z.ts'), "export const z = () => import('./x.ts');\n");
      expect(importCycles(importGraph(dir, ['.'], {}))).toEqual([['x.ts', 'y.ts']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('apps import from @onceq/core/internal only what no public entry exports', () => {
    const offenders = appSources().flatMap((file) =>
      internalImports(readFileSync(file, 'utf8'))
        .filter((name) => PUBLIC_NAMES.has(name))
        .map((name) => `${file.slice(ROOT.length + 1)}: ${name}`),
    );
    expect(offenders).toEqual([]);
    // The check can fail: a public name imported from internal is seen.
    expect(internalImports("import { type Store, prune } from '@onceq/core/internal';\n")).toEqual([
      'Store',
      'prune',
    ]);
    expect(PUBLIC_NAMES.has('Store') && PUBLIC_NAMES.has('stopOnSignals')).toBe(true);
  });
});

/** Every name a public entry of @onceq/core exports (values and types). */
const PUBLIC_NAMES = new Set(
  PUBLIC_ENTRIES.filter((entry) => entry !== 'testing').flatMap((entry) =>
    exportedNames(readFileSync(join(CORE_SRC, `${entry}.ts`), 'utf8')),
  ),
);

function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
}

/** The names of `{ a, type B, c as d }`: as exported (`d`), or as imported from (`c`). */
function names(list: string, side: 'exported' | 'source' = 'exported'): string[] {
  return list
    .split(',')
    .map((spec) => spec.trim().replace(/^type\s+/, ''))
    .filter((spec) => spec !== '')
    .map((spec) => spec.split(/\s+as\s+/).at(side === 'exported' ? -1 : 0) as string);
}

function exportedNames(text: string): string[] {
  const code = withoutComments(text);
  return [
    ...[...code.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap((m) =>
      names(m[1] as string),
    ),
    ...[
      ...code.matchAll(/export\s+(?:async\s+)?(?:function|const|class|interface|type)\s+(\w+)/g),
    ].map((m) => m[1] as string),
  ];
}

function internalImports(text: string): string[] {
  return [
    ...withoutComments(text).matchAll(
      /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'@onceq\/core\/internal'/g,
    ),
  ].flatMap((m) => names(m[1] as string, 'source'));
}

function appSources(dir = join(ROOT, 'apps')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules') return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return appSources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}
