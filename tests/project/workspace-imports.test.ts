/**
 * Tests and scripts import the workspace's packages by their names (`@onceq/core`, its
 * subpaths, `@onceq/core/internal`, `@onceq/cli/<module>.ts`, …) and their dependencies
 * from the root package.json, never by a relative path into a package's `src` and never
 * from a `node_modules` folder: what a test imports is then what the package exports.
 */
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(import.meta.dir, '..', '..');

/** Every specifier of a static import or export, or of an `import('…')`, in `text`. */
function specifiers(text: string): string[] {
  const found = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s+(['"])([^'"]+)\1/gm),
    ...text.matchAll(/^\s*import\s+(['"])([^'"]+)\1/gm),
    ...text.matchAll(/\bimport\(\s*(['"])([^'"]+)\1\s*\)/g),
  ];
  return found.map((m) => m[2] as string);
}

/** The imports of `file` (path relative to the root) that reach into a package's `src` or a `node_modules`. */
function deepImports(file: string, text: string): string[] {
  return specifiers(text).filter((spec) => {
    if (spec.split(/[\\/]/).includes('node_modules')) return true;
    if (!spec.startsWith('.')) return false;
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec)).split(sep);
    return (target[0] === 'packages' || target[0] === 'apps') && target[2] === 'src';
  });
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules') return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('imports of tests and scripts', () => {
  test('name workspace packages, never a path into packages/*/src, apps/*/src or node_modules', () => {
    const files = [...sources('tests'), ...sources('scripts')];
    expect(files.length).toBeGreaterThan(100);
    const offenders = files.flatMap((file) =>
      deepImports(file, readFileSync(join(ROOT, file), 'utf8')).map((spec) => `${file}: ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  test('control: the check names each kind of import it forbids, and lets the right ones through', () => {
    // Spelled with placeholders so that this file does not hold the imports it plants.
    const up = '../..';
    const nm = 'node_modules';
    const planted = [
      `import { claim } from '${up}/packages/core/src/index.ts';`,
      `import type { Database } from '${up}/packages/core/src/schema.ts';`,
      `export { parseJson } from '${up}/packages/core/src/input/parse-json.ts';`,
      `import { sql } from '${up}/packages/core/${nm}/kysely';`,
      `const { humanTime } = await import('${up}/apps/cli/src/output.ts');`,
      `const pg = (await import('${up}/packages/core/${nm}/pg')).default;`,
      `import '${up}/apps/demo/src/index.ts';`,
    ].join('\n');
    expect(deepImports('tests/cli/x.test.ts', planted)).toEqual([
      `${up}/packages/core/src/index.ts`,
      `${up}/packages/core/src/schema.ts`,
      `${up}/packages/core/src/input/parse-json.ts`,
      `${up}/packages/core/${nm}/kysely`,
      `${up}/apps/demo/src/index.ts`,
      `${up}/apps/cli/src/output.ts`,
      `${up}/packages/core/${nm}/pg`,
    ]);
    const allowed = [
      "import { claim } from '@onceq/core';",
      "import { parseJson } from '@onceq/core/internal';",
      "import { humanTime } from '@onceq/cli/output.ts';",
      "import { sql } from 'kysely';",
      "import { rawDb } from '../support/raw-db.ts';",
      "const BIN = resolve(import.meta.dir, '../../apps/cli/src/bin.ts');",
    ].join('\n');
    expect(deepImports('tests/cli/x.test.ts', allowed)).toEqual([]);
  });
});
