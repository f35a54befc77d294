/**
 * `bun run pack`'s tarballs, as a user gets them: packed once per test process (packing
 * builds and typechecks every package, the slow part) into a temporary directory outside
 * the repository, removed after the run (tests/preload.ts). Every test file that installs
 * the packages into a fresh project shares them.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from './spawn.ts';

const ROOT = resolve(import.meta.dir, '..', '..');

export interface Tarballs {
  /** `@onceq/core`'s tarball. */
  readonly core: string;
  /** `@onceq/handler`'s tarball. */
  readonly handler: string;
}

let packing: Promise<Tarballs> | undefined;
let packedDir: string | undefined;

/** The packed tarballs of the workspace's packages, packed on first use. */
export function packedTarballs(): Promise<Tarballs> {
  packing ??= pack();
  return packing;
}

async function pack(): Promise<Tarballs> {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-packed-'));
  packedDir = dir;
  const out = join(dir, 'packages');
  const packed = await runProcess(['bun', join(ROOT, 'scripts', 'pack.ts'), out], { cwd: ROOT });
  if (packed.code !== 0) throw new Error(`bun run pack failed:\n${packed.stdout}${packed.stderr}`);
  const { version } = JSON.parse(
    readFileSync(join(ROOT, 'packages', 'core', 'package.json'), 'utf8'),
  ) as { version: string };
  return {
    core: join(out, `onceq-core-${version}.tgz`),
    handler: join(out, `onceq-handler-${version}.tgz`),
  };
}

/** Removes the packed tarballs, if this run packed them: once, after every test file. */
export function removePackedTarballs(): void {
  if (packedDir !== undefined) rmSync(packedDir, { recursive: true, force: true });
}
