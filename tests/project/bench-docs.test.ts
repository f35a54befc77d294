// `bun run bench --only … --write-docs`: the sections a run measured replace theirs in
// docs/benchmarks.md, each naming its run; its measured targets replace their rows; the
// rest of the page stays as the run named at its top wrote it.
import { describe, expect, test } from 'bun:test';
import { benchmarksPage } from '@onceq/bench/docs.ts';
import { mergeBenchmarksPage } from '@onceq/bench/docs-merge.ts';
import { section, table } from '@onceq/bench/report.ts';

const whole = benchmarksPage(
  { command: 'bun run bench --write-docs', machine: 'm1', date: '2026-11-01' },
  [
    section('Enqueue'),
    table(['store', 'lines/s'], [['sqlite', '150,000']]),
    section('Ordering keys: 1,000 keys'),
    table(['backend', 'ratio'], [['PostgreSQL', '0.64×']]),
    section('Targets, each next to its reference from this run'),
    table(
      ['target', 'onceq', 'reference', 'ratio', 'met'],
      [['bare ≥ 0.9×', '30,000 msg/s', '33,000 msg/s', '0.91×', 'yes']],
    ),
    section('Targets'),
    table(
      ['target', 'measured', 'met'],
      [
        ['enqueue ≥ 150,000 lines/s', '150,000 lines/s', 'yes'],
        ['ordered ≥ 0.8× unordered (1,000 keys × 100)', '0.64×', 'NO'],
        ['claim behind blocked keys < 5 ms', '0.52 ms', 'yes'],
        ['status < 100 ms', '0.3 ms', 'yes'],
      ],
    ),
  ],
  [{ target: 'ordered ≥ 0.8× unordered (1,000 keys × 100)', measured: '0.64×' }],
);

const ordering = benchmarksPage(
  { command: 'bun run bench --only ordering --write-docs', machine: 'm2', date: '2026-12-03' },
  [
    section('Ordering keys: 1,000 keys, two kinds of ids'),
    table(['backend', 'ratio'], [['PostgreSQL', '0.84×']]),
    section('Targets, each next to its reference from this run'),
    table(
      ['target', 'onceq', 'reference', 'ratio', 'met'],
      [['bare ≥ 0.9×', '–', '–', '–', 'n/a']],
    ),
    section('Targets'),
    table(
      ['target', 'measured', 'met'],
      [
        ['ordered ≥ 0.8× unordered (1,000 keys × 100, UUIDv4 ids)', '0.84×', 'yes'],
        ['ordered ≥ 0.8× unordered (1,000 keys × 100, UUIDv7 ids)', '0.86×', 'yes'],
        ['claim behind blocked keys < 5 ms', '9.1 ms', 'NO'],
        ['status < 100 ms', 'not measured', 'n/a'],
      ],
    ),
  ],
  [{ target: 'claim behind blocked keys < 5 ms', measured: '9.1 ms' }],
);

describe('bench --only … --write-docs', () => {
  const merged = mergeBenchmarksPage(whole, ordering, 'Measured by the ordering run.');

  test("the run's sections replace theirs, marked with the run; the others stay", () => {
    // The same section under the words before its colon, whatever follows.
    expect(merged).toContain(
      '## Ordering keys: 1,000 keys, two kinds of ids\n\nMeasured by the ordering run.\n\n```text',
    );
    expect(merged).not.toContain('## Ordering keys: 1,000 keys\n');
    expect(merged).toContain('PostgreSQL  0.84×');
    expect(merged).not.toContain('0.64×');
    expect(merged).toContain('## Enqueue\n\n```text\nstore   lines/s');
    // The head keeps the facts of the run that wrote the page whole.
    expect(merged).toContain('- command: `bun run bench --write-docs`\n- machine: m1');
    expect(merged).not.toContain('machine: m2');
    expect(merged.indexOf('## Ordering keys')).toBeLessThan(merged.indexOf('## Targets'));
  });

  test('measured targets replace their rows; a target not measured keeps its row', () => {
    const targets = merged.slice(merged.indexOf('## Targets\n'));
    // The one row before ids gives way to a row per kind of id, where it stood.
    expect(targets).toMatch(
      /\nenqueue[^\n]+\nordered[^\n]+UUIDv4 ids\) +0\.84× +yes\nordered[^\n]+UUIDv7 ids\) +0\.86× +yes\nclaim/,
    );
    expect(targets).not.toContain('0.64×');
    expect(targets).toMatch(/\nstatus < 100 ms +0\.3 ms +yes\n/);
    expect(targets).toMatch(/\nclaim behind blocked keys < 5 ms +9\.1 ms +NO\n/);
    expect(targets).toMatch(/\nenqueue ≥ 150,000 lines\/s +150,000 lines\/s +yes\n/);
    const reference = merged.slice(
      merged.indexOf('## Targets, each'),
      merged.indexOf('## Targets\n'),
    );
    expect(reference).toContain('30,000 msg/s');
  });

  test('the missed targets are drawn again from the merged tables', () => {
    const missed = merged.slice(merged.indexOf('## Targets missed in this run'));
    expect(missed).toBe(
      '## Targets missed in this run\n\n- claim behind blocked keys < 5 ms: 9.1 ms\n',
    );
  });

  test('merging the same run again changes nothing', () => {
    expect(mergeBenchmarksPage(merged, ordering, 'Measured by the ordering run.')).toBe(merged);
  });
});

test("a measured reference target's line of explanation replaces the one of its old row", () => {
  const reference = (onceq: string, met: string, why: string) =>
    benchmarksPage(
      { command: 'c', machine: 'm', date: 'd' },
      [
        section('Targets, each next to its reference from this run'),
        `${table(
          ['target', 'onceq', 'reference', 'ratio', 'met'],
          [
            ['2 workers ≥ 1.0× one', onceq, '30,000 msg/s', '0.7×', met],
            ['bare ≥ 0.9×', '30,000 msg/s', '33,000 msg/s', '0.91×', 'yes'],
          ],
        )}\n\nwhy, and what would close it:\n- 2 workers ≥ 1.0× one: ${why}`,
        section('Targets'),
        table(['target', 'measured', 'met'], [['status < 100 ms', '0.3 ms', 'yes']]),
      ],
      [],
    );
  const merged = mergeBenchmarksPage(
    reference('21,000 msg/s', 'NO', 'one write lock'),
    reference('22,000 msg/s', 'NO', 'one write lock, measured again'),
    'Measured again.',
  );
  expect(merged).toContain('- 2 workers ≥ 1.0× one: one write lock, measured again\n');
  expect(merged).not.toContain('- 2 workers ≥ 1.0× one: one write lock\n');
  expect(merged).toContain('22,000 msg/s');
  expect(merged).toContain('- 2 workers ≥ 1.0× one: 22,000 msg/s against 30,000 msg/s\n');
});
