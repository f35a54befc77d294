// scripts/junit-failures.ts: the end of `bun run test` names each failed test with its
// message, read from bun's own junit report.
import { expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failures, unescapeXml } from '../../scripts/junit-failures.ts';

const ROOT = join(import.meta.dir, '../..');

test('a report of a real run: only the failed test, with its decoded message', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-junit-'));
  try {
    writeFileSync(
      join(dir, 'two.test.ts'),
      `import { expect, test } from 'bun:test';
test('passes', () => expect(1).toBe(1));
test('fails <here> & there', () => expect(2, 'samples: [1, 2]\\nsecond line').toBe(3));
test('passes too', () => expect(1).toBe(1));
`,
    );
    const report = join(dir, 'report.xml');
    const run = Bun.spawnSync(
      ['bun', 'test', '--reporter=junit', `--reporter-outfile=${report}`, './two.test.ts'],
      { cwd: dir, stdout: 'ignore', stderr: 'ignore' },
    );
    expect(run.exitCode).toBe(1);
    const printed = Bun.spawnSync(['bun', join(ROOT, 'scripts/junit-failures.ts'), report]);
    const text = printed.stdout.toString();
    expect(printed.exitCode).toBe(0);
    expect(text).toContain('== failed: fails <here> & there (two.test.ts:3)');
    expect(text).toContain('samples: [1, 2]\nsecond line');
    expect(text).toContain('Received: 2');
    expect(text).not.toContain('passes');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('self-closing passed cases are never read as failed', () => {
  const xml = `<testsuite>
<testcase name="ok" file="a.ts" line="1" />
<testcase name="bad" file="a.ts" line="2"><failure type="Error" message="m">boom&#10;x</failure></testcase>
</testsuite>`;
  expect(failures(xml)).toEqual([{ where: 'a.ts:2', name: 'bad', message: 'boom\nx' }]);
});

test('entities decode, unknown ones stay as written', () => {
  expect(unescapeXml('&lt;a&gt; &amp; &quot;b&quot; &#10;&#x41; &nope;')).toBe(
    '<a> & "b" \nA &nope;',
  );
});
