/**
 * `onceq` started in a directory that was deleted under the shell: every relative path
 * depends on the current directory, so the CLI refuses with one sentence (exit 2), not
 * with the stack of `process.cwd()`'s ENOENT.
 */
import { expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN_TS = join(import.meta.dir, '..', '..', 'apps', 'cli', 'src', 'bin.ts');

test('a deleted current directory: one onceq: sentence, exit 2, no stack', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-gone-'));
  // The shell enters the directory, removes it, then execs onceq inside it.
  const r = Bun.spawnSync(
    [
      'bash',
      '-c',
      'cd "$1" && rmdir "$1" && exec "$2" "$3" status',
      'sh',
      dir,
      process.execPath,
      BIN_TS,
    ],
    { env: { ...process.env, ONCEQ_DB: '' } },
  );
  const stderr = r.stderr.toString();
  expect({ code: r.exitCode, stderr }).toEqual({
    code: 2,
    stderr:
      'onceq: the current directory no longer exists (it was deleted); cd to another directory and run the command again\n',
  });
});
