import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One problem found by a publication check, always naming the tracked path. */
export interface Finding {
  check: 'allowlist' | 'secrets' | 'artifacts';
  path: string;
  message: string;
  line?: number;
}

/** Paths tracked by git in `repoDir` (relative, forward slashes), via `git ls-files -z`. */
export function trackedFiles(repoDir: string): string[] {
  const proc = Bun.spawnSync(['git', '-C', repoDir, 'ls-files', '-z'], {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  });
  if (proc.exitCode !== 0) {
    throw new Error(`git ls-files failed in ${repoDir}: ${proc.stderr.toString().trim()}`);
  }
  return proc.stdout
    .toString()
    .split('\0')
    .filter((p) => p.length > 0);
}

/**
 * The bytes of a tracked file as they are in the work tree, or null when the
 * file is gone from the work tree or is not a regular file (a symlink is not
 * followed: its target may lie outside the repository).
 */
export function readTracked(repoDir: string, path: string): Buffer | null {
  const full = join(repoDir, path);
  if (!existsSync(full)) return null;
  const st = lstatSync(full);
  if (!st.isFile()) return null;
  return readFileSync(full);
}
