/**
 * The targets table of `bun run bench`: each target next to its reference from
 * the same run, met or missed with a reason, and "not measured" when its section did not run.
 */
import { describe, expect, test } from 'bun:test';
import { referenceTargetRows } from '@onceq/bench/sections/reference-targets.ts';

const spread = (median: number) => ({ median, min: median, max: median, n: 1 });

function processing(impl: string, sync: string, workers: number, rate: number, minShare = 1) {
  return {
    config: { backend: 'sqlite', impl, synchronous: sync, workers, batch: 100 },
    rate: spread(rate),
    minShare,
    errors: [],
    busyRetries: 0,
    cpuMsPer1000: spread(50),
  };
}

describe('the bench targets table', () => {
  test('nothing measured: every target is listed as not measured, none met', () => {
    const rows = referenceTargetRows({});
    expect(rows).toHaveLength(17);
    expect(rows.every((r) => r.met === null && r.why.startsWith('not measured'))).toBe(true);
  });

  test("a handler's own-row run is not taken for the money effect's", () => {
    const ownRow = processing('core', 'FULL', 1, 1_000);
    const rows = referenceTargetRows({
      processing: [
        { ...ownRow, config: { ...ownRow.config, effect: 'own-row' } },
        processing('core', 'FULL', 1, 9_000),
        processing('bare', 'FULL', 1, 10_000),
      ],
    });
    expect(rows.find((r) => r.target.includes('FULL, 1 worker'))).toMatchObject({
      ratio: '0.90×',
      met: true,
    });
  });

  test('a ratio target is met at the threshold and missed below it, with a reason', () => {
    const rows = referenceTargetRows({
      processing: [
        processing('core', 'FULL', 1, 9_000),
        processing('bare', 'FULL', 1, 10_000),
        processing('core', 'NORMAL', 1, 8_999),
        processing('bare', 'NORMAL', 1, 10_000),
      ],
    });
    const full = rows.find((r) => r.target.includes('FULL, 1 worker'));
    const normal = rows.find((r) => r.target.includes('NORMAL, 1 worker'));
    expect(full).toMatchObject({ ratio: '0.90×', met: true, why: '' });
    expect(normal?.met).toBe(false);
    expect(normal?.onceq).toBe('8,999 msg/s');
    expect(normal?.reference).toBe('10,000 msg/s');
    expect(normal?.why).toContain('CPU per 1000 msg');
  });

  test('two workers faster than one still miss when a worker got less than 30 %', () => {
    const rows = referenceTargetRows({
      processing: [
        processing('core', 'FULL', 1, 10_000),
        processing('core', 'FULL', 2, 12_000, 0.2),
      ],
    });
    const two = rows.find((r) => r.target.includes('FULL: 2 worker'));
    expect(two?.ratio).toBe('1.20×');
    expect(two?.met).toBe(false);
    expect(two?.why).toContain('fair');
  });

  test('PostgreSQL targets compare the best onceq batch with graphile-worker batched', () => {
    const row = (key: string, rate: number) => ({ key, rate: spread(rate) });
    const rows = referenceTargetRows({
      anchors: {
        rows: [
          row('onceq/pg/w1/b500', 15_000),
          row('onceq/pg/w1/b100', 9_000),
          row('graphile/w1/c24/q500', 10_000),
          row('onceq/pg/w1/b1', 500),
          row('graphile/w1/c1/q0', 1_000),
        ],
      },
      enqueue: [{ store: 'sqlite FULL', rate: spread(210_000), parseRate: spread(600_000) }],
      status: [{ backend: 'sqlite', messages: 100_000, statusMs: spread(40), claimMs: spread(6) }],
    });
    const batch = rows.find((r) => r.target.startsWith('PostgreSQL batch mode, 1'));
    expect(batch).toMatchObject({ ratio: '1.50×', met: true });
    expect(batch?.onceq).toContain('(batch 500)');
    const one = rows.find((r) => r.target.startsWith('PostgreSQL one message per transaction, 1'));
    expect(one).toMatchObject({ ratio: '0.50×', met: false });
    expect(rows.find((r) => r.target.startsWith('enqueue'))?.met).toBe(true);
    expect(rows.find((r) => r.target.startsWith('status on 100,000 messages, SQLite'))?.met).toBe(
      true,
    );
    expect(rows.find((r) => r.target.startsWith('claim on 100,000 messages, SQLite'))?.met).toBe(
      false,
    );
  });

  test("PostgreSQL's server CPU per message is met at or below graphile-worker's, from the best batch", () => {
    const row = (key: string, rate: number, serverCpuUs?: number) => ({
      key,
      rate: spread(rate),
      serverCpuUs: serverCpuUs === undefined ? null : spread(serverCpuUs),
    });
    const rows = referenceTargetRows({
      anchors: {
        rows: [
          row('onceq/pg/w1/b500', 9_000, 80),
          row('onceq/pg/w1/b100', 15_000, 50),
          row('graphile/w1/c24/q500', 10_000, 60),
          row('onceq/pg/w1/b1', 1_600, 130),
          row('graphile/w1/c1/q0', 1_000, 100),
          row('onceq/pg/w2/b500', 9_000),
          row('graphile/w2/c24/q500', 10_000),
        ],
      },
    });
    const batched = rows.find((r) =>
      r.target.startsWith('PostgreSQL server CPU per message, batch mode, 1'),
    );
    expect(batched).toMatchObject({ onceq: '50 µs/msg (batch 100)', ratio: '0.83×', met: true });
    const one = rows.find((r) =>
      r.target.startsWith('PostgreSQL server CPU per message, one message per transaction, 1'),
    );
    expect(one).toMatchObject({ ratio: '1.30×', met: false });
    expect(one?.why).toContain('DELETE');
    expect(
      rows.find((r) => r.target.startsWith('PostgreSQL one message per transaction, 1'))?.met,
    ).toBe(true);
    const unmeasured = rows.find((r) =>
      r.target.startsWith('PostgreSQL server CPU per message, batch mode, 2'),
    );
    expect(unmeasured?.met).toBeNull();
    expect(unmeasured?.why).toContain('not measured');
  });

  test('a missed enqueue target names the floor measured in the same run: parse + a bare insert', () => {
    const [row] = referenceTargetRows({
      enqueue: [
        {
          store: 'sqlite FULL',
          rate: spread(100_000),
          parseRate: spread(400_000),
          bareRate: spread(200_000),
          bareNoTriggerRate: spread(250_000),
          floorRate: spread(133_333),
          cpuMsPer1000: spread(6.5),
          floorCpuMsPer1000: spread(6),
        },
      ],
    }).filter((r) => r.target.startsWith('enqueue'));
    expect(row?.met).toBe(false);
    expect(row?.why).toContain('parse and validation alone run at 400,000 lines/s');
    expect(row?.why).toContain(
      'runs at 200,000 lines/s (250,000 without the per-row counter trigger)',
    );
    expect(row?.why).toContain('a floor of 133,333 lines/s');
    expect(row?.why).toContain('CPU per 1000 lines: onceq 6.50 ms, floor 6.00 ms');
  });
});
