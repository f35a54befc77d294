// The three publication checks over a repository:
//   bun scripts/publication/check.ts [repoDir]   (default: this repository)
// Prints each finding and exits 1 when there is any.
import { resolve } from 'node:path';
import { checkAllowlist } from './allowlist.ts';
import { checkArtifacts } from './artifacts.ts';
import type { Finding } from './git.ts';
import { checkSecrets } from './secrets.ts';

export type { Finding } from './git.ts';
export { checkAllowlist, checkArtifacts, checkSecrets };

export const CHECKS = {
  allowlist: checkAllowlist,
  secrets: checkSecrets,
  artifacts: checkArtifacts,
} as const;

export function runAllChecks(repoDir: string): Finding[] {
  return Object.values(CHECKS).flatMap((check) => check(repoDir));
}

export function formatFinding(f: Finding): string {
  return `${f.check}: ${f.path}${f.line === undefined ? '' : `:${f.line}`}: ${f.message}`;
}

if (import.meta.main) {
  const repoDir = resolve(process.argv[2] ?? resolve(import.meta.dir, '../..'));
  const findings = runAllChecks(repoDir);
  for (const f of findings) console.error(formatFinding(f));
  if (findings.length > 0) {
    console.error(`publication checks: ${findings.length} finding(s) in ${repoDir}`);
    process.exit(1);
  }
  console.log(`publication checks: allowlist, secrets, artifacts: clean (${repoDir})`);
}
