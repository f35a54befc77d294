import { type Finding, trackedFiles } from './git.ts';

/**
 * Check 1: every tracked file matches one of these patterns. The list is kept
 * tight on purpose: a file type that is not here (a database, a log, a build
 * output, an env file, a binary) needs a deliberate change to this list.
 */
export const ALLOWED_PATTERNS: readonly string[] = [
  // top level
  'package.json',
  'turbo.json',
  'bunfig.toml',
  'bun.lock',
  'biome.json',
  'tsconfig.json',
  'tsconfig.*.json',
  'README.md',
  'LICENSE',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  'stryker.config.json',
  '.gitignore',
  '.ci/run',
  // workspaces
  '{packages,apps}/*/package.json',
  '{packages,apps}/*/tsconfig.json',
  '{packages,apps}/*/README.md',
  'packages/*/LICENSE',
  '{packages,apps}/*/src/**/*.ts',
  // tests, fixtures, scripts, examples
  'tests/**/*.ts',
  'tests/fixtures/**/*.{jsonl,json}',
  'scripts/**/*.{ts,sh}',
  'examples/*.jsonl',
  'examples/package.json',
  'examples/**/*.ts',
  // the project's own reference, its screenshots and the bench's charts
  'docs/*.md',
  'docs/*.png',
  'docs/*.svg',
];

/** Never allowed, whatever pattern they match (belt and braces). */
const DENIED_SEGMENTS = new Set(['node_modules', '.turbo', 'dist', 'build', 'coverage']);
const DENIED_NAME = /^\.env(\..*)?$|\.(db|sqlite|sqlite3|log)$|-(wal|shm|journal)$/;

const globs = ALLOWED_PATTERNS.map((p) => new Bun.Glob(p));

export function isAllowedPath(path: string): boolean {
  const segments = path.split('/');
  if (segments.some((s) => DENIED_SEGMENTS.has(s))) return false;
  if (DENIED_NAME.test(segments[segments.length - 1] ?? '')) return false;
  return globs.some((g) => g.match(path));
}

export function checkAllowlist(repoDir: string): Finding[] {
  return trackedFiles(repoDir)
    .filter((path) => !isAllowedPath(path))
    .map((path) => ({
      check: 'allowlist' as const,
      path,
      message:
        'tracked file is outside the publication allowlist (scripts/publication/allowlist.ts)',
    }));
}
