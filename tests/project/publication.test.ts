// The three publication checks (scripts/publication/), each proven able to
// fail on a planted example in a throwaway git repository, and then run over
// this repository itself. Planted secrets are assembled at run time so that
// no secret-shaped string is ever written into this file.
import { Database } from 'bun:sqlite';
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { checkAllowlist, isAllowedPath } from '../../scripts/publication/allowlist.ts';
import { checkArtifacts, MAX_FILE_BYTES } from '../../scripts/publication/artifacts.ts';
import { formatFinding, runAllChecks } from '../../scripts/publication/check.ts';
import { checkSecrets, scanText } from '../../scripts/publication/secrets.ts';

const REPO_ROOT = resolve(import.meta.dir, '..', '..');

function git(dir: string, ...args: string[]): void {
  const proc = Bun.spawnSync(['git', '-C', dir, ...args], {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  });
  if (proc.exitCode !== 0) {
    throw new Error(`git ${args.join(' ')} failed: ${proc.stderr.toString()}`);
  }
}

let repo: string;

function put(path: string, content: string | Uint8Array): void {
  const full = join(repo, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, content);
}

/** Writes the file and `git add`s it (tracked, not necessarily committed). */
function plant(path: string, content: string | Uint8Array): void {
  put(path, content);
  git(repo, 'add', '--', path);
}

beforeEach(() => {
  repo = mkdtempSync(join(tmpdir(), 'onceq-publication-'));
  git(repo, 'init', '-q');
  git(repo, 'config', 'user.name', 'onceq test');
  git(repo, 'config', 'user.email', 'test@example.invalid');
  git(repo, 'config', 'commit.gpgsign', 'false');
  // A small, clean repository in the shape of the real one.
  put('package.json', '{ "name": "x", "private": true }\n');
  put('README.md', '# x\n\nDATABASE_URL=postgres://onceq@127.0.0.1:54330/onceq_test\n');
  put('packages/core/src/index.ts', 'export const x = 1;\n');
  put('packages/core/package.json', '{}\n');
  put('tests/a.test.ts', "import { test } from 'bun:test';\n");
  put('tests/fixtures/events.jsonl', '{"id":"e1"}\n');
  put('scripts/test.sh', 'echo ok\n');
  put('.ci/run', '#!/usr/bin/env bash\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'clean');
});

afterEach(() => {
  rmSync(repo, { recursive: true, force: true });
});

describe('clean repository', () => {
  test('all three checks pass on a clean temporary repository', () => {
    expect(runAllChecks(repo)).toEqual([]);
  });
});

describe('allowlist', () => {
  test('reports a tracked file outside the allowlist, with its path', () => {
    plant('notes/todo.txt', 'remember\n');
    const findings = checkAllowlist(repo);
    expect(findings.map((f) => f.path)).toEqual(['notes/todo.txt']);
    expect(findings[0]?.check).toBe('allowlist');
  });

  test('rejects env files, databases and node_modules even under allowed folders', () => {
    for (const path of [
      '.env',
      'packages/core/.env.local',
      'onceq.db',
      'tests/fixtures/queue.db',
      'tests/node_modules/x/index.ts',
      'packages/core/dist/index.ts',
      'apps/cli/src/queue.db-wal',
      'docs/notes.txt',
      'docs/sub/deep.md',
      'docs/backup.db',
      'docs/nested/notes.md',
      'docs/shots/nested.png',
      'NOTES.md',
      'VALIDATION.md',
    ]) {
      expect({ path, allowed: isAllowedPath(path) }).toEqual({ path, allowed: false });
    }
    for (const path of [
      'tsconfig.base.json',
      'apps/cli/src/bin.ts',
      'packages/core/src/driver/sqlite/dialect.ts',
      'tests/preload.ts',
      'tests/fixtures/batch.jsonl',
      'scripts/publication/check.ts',
      'examples/orders.jsonl',
      'README.md',
      'CONTRIBUTING.md',
      'CHANGELOG.md',
      'docs/protocol.md',
      'docs/operations.md',
      'docs/console-overview.png',
    ]) {
      expect({ path, allowed: isAllowedPath(path) }).toEqual({ path, allowed: true });
    }
  });
});

describe('secrets', () => {
  // Built at run time: this file must never contain a secret-shaped string.
  const planted: Record<string, string> = {
    pem: `${'-----BEGIN '}RSA ${'PRIVATE KEY-----'}\nMIIB\n-----END RSA PRIVATE KEY-----\n`,
    aws: `const id = "${'AK'}${'IA'}${'Q'.repeat(16)}";\n`,
    github: `token=${'gh'}p_${'a1'.repeat(18)}\n`,
    githubPat: `token=${'github'}_pat_${'B2'.repeat(11)}_${'c'.repeat(40)}\n`,
    slack: `${'xo'}xb-${'1234567890'}-${'abcdefghij'}\n`,
    stripe: `${'sk'}_live_${'Z9'.repeat(12)}\n`,
    npm: `//registry/:_authToken=${'np'}m_${'k'.repeat(36)}\n`,
    pgUrl: `DATABASE_URL=${'postgres'}://app:${'hunter'}2@db.internal:5432/prod\n`,
  };

  for (const [name, content] of Object.entries(planted)) {
    test(`reports a planted ${name} secret with path and line`, () => {
      plant('packages/core/src/config.ts', `// line 1\n${content}`);
      const findings = checkSecrets(repo);
      expect(findings.length).toBeGreaterThanOrEqual(1);
      expect(findings[0]).toMatchObject({
        check: 'secrets',
        path: 'packages/core/src/config.ts',
        line: 2,
      });
      // The report names the place, never the secret itself.
      const secretCore = content.trim().slice(-8);
      for (const f of findings) expect(formatFinding(f)).not.toContain(secretCore);
    });
  }

  test('URLs without a password, or with a placeholder, are not findings', () => {
    const text = [
      'postgres://onceq@127.0.0.1:54330/onceq_test',
      'postgres://user:$PGPASSWORD@host/db',
      'postgresql://user:<password>@host/db',
      'http://user:pass@example.invalid/',
    ].join('\n');
    expect(scanText('README.md', text)).toEqual([]);
  });
});

describe('artifacts (database files and oversized files)', () => {
  test('reports a real SQLite database even under an allowed name', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'onceq-sqlite-'));
    try {
      const dbPath = join(tmp, 'queue.sqlite');
      const db = new Database(dbPath);
      db.run('CREATE TABLE t (x INTEGER)');
      db.run('INSERT INTO t VALUES (1)');
      db.close();
      plant('tests/fixtures/events.jsonl', readFileSync(dbPath));
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    const findings = checkArtifacts(repo);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ check: 'artifacts', path: 'tests/fixtures/events.jsonl' });
    expect(findings[0]?.message).toContain('SQLite');
  });

  test('reports database and journal paths', () => {
    plant('onceq.db', 'not really a database');
    plant('data/queue.db-wal', '');
    const paths = checkArtifacts(repo).map((f) => f.path);
    expect(paths).toContain('onceq.db');
    expect(paths).toContain('data/queue.db-wal');
  });

  test('reports a file over the size limit', () => {
    plant('tests/fixtures/huge.jsonl', `${'{"x":1}\n'.repeat(MAX_FILE_BYTES / 8 + 1)}`);
    const findings = checkArtifacts(repo);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ check: 'artifacts', path: 'tests/fixtures/huge.jsonl' });
  });
});

describe('this repository', () => {
  test('passes all three publication checks', () => {
    const findings = runAllChecks(REPO_ROOT);
    expect(findings.map(formatFinding)).toEqual([]);
  });
});
