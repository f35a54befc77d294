/**
 * Every figure of docs/protocol.md §6, as the demo checks it. The demo exits non-zero and names
 * the failing checks when any measured figure differs.
 */
import type { DemoFigures } from './story.ts';

type Figure = number | string | boolean | null;

/** One compared figure. */
export interface Check {
  name: string;
  expected: Figure;
  actual: Figure;
  ok: boolean;
}

/** `[name, expected, how to read the actual value]`, in story order. */
const EXPECTED: readonly (readonly [string, Figure, (f: DemoFigures) => Figure])[] = [
  ['1000 enqueue: accepted', 4, (f) => f.enqueue.accepted],
  ['1000 enqueue: duplicates', 1, (f) => f.enqueue.duplicates],
  ['1000 claim order', 'E0001,E0002,E0003,E0004', (f) => f.claims_1000.join(',')],
  ['1000 E0001: state', 'done', (f) => f.after_1000.E0001?.state ?? null],
  [
    '1000 E0002: state after the temporary error',
    'ready',
    (f) => f.after_1000.E0002?.state ?? null,
  ],
  ['1000 E0002: available at', 1001, (f) => f.after_1000.E0002?.available_at ?? null],
  ['1000 crash child: claimed', 'E0003', (f) => f.crash.claimed],
  ['1000 crash child: effect inserted before exit', true, (f) => f.crash.inserted_before_exit],
  ['1000 crash child: exit code', 86, (f) => f.crash.exit_code],
  ['1000 E0003 after the crash: effect row', false, (f) => f.after_1000.E0003?.effect ?? null],
  ['1000 E0003 after the crash: state', 'leased', (f) => f.after_1000.E0003?.state ?? null],
  ['1000 E0003 after the crash: lease until', 1002, (f) => f.after_1000.E0003?.lease_until ?? null],
  ['1000 E0004: state', 'dead', (f) => f.after_1000.E0004?.state ?? null],
  ['1000 E0004: error', 'invalid_payload', (f) => f.after_1000.E0004?.last_error_code ?? null],
  ['snapshot: ready', 1, (f) => f.snapshot.messages.ready],
  ['snapshot: leased', 1, (f) => f.snapshot.messages.leased],
  ['snapshot: done', 1, (f) => f.snapshot.messages.done],
  ['snapshot: dead', 1, (f) => f.snapshot.messages.dead],
  ['snapshot: effects', 1, (f) => f.snapshot.effects],
  ['snapshot: book', 10000, (f) => f.snapshot.totals.book ?? 0],
  ['snapshot: total', 10000, (f) => f.snapshot.total],
  ['1001 claims', 'E0002', (f) => f.claims_1001.join(',')],
  ['1001 E0002: state', 'done', (f) => f.after_1001.E0002?.state ?? null],
  ['1001 E0003: lease still holds', 'leased', (f) => f.after_1001.E0003?.state ?? null],
  ['1002 claims', 'E0003', (f) => f.claims_1002.join(',')],
  ['1002 E0003: generation', 2, (f) => f.recovery.generation],
  ['1002 E0003: state', 'done', (f) => f.recovery.state],
  ['final: effects', 3, (f) => f.final.effects],
  ['final: book', 15000, (f) => f.final.totals.book ?? 0],
  ['final: pen', 2000, (f) => f.final.totals.pen ?? 0],
  ['final: total', 17000, (f) => f.final.total],
  ['final: done', 3, (f) => f.final.messages.done],
  ['final: dead', 1, (f) => f.final.messages.dead],
  ['again: accepted', 0, (f) => f.again.accepted],
  ['again: duplicates', 5, (f) => f.again.duplicates],
  ['again: total unchanged', 17000, (f) => f.again.total],
  ['redrive v1: E0004 state', 'dead', (f) => f.redrive_v1.message.state],
  ['redrive v1: E0004 error', 'invalid_payload', (f) => f.redrive_v1.message.last_error_code],
  ['redrive v1: dead', 1, (f) => f.redrive_v1.messages.dead],
  ['redrive v1: total', 17000, (f) => f.redrive_v1.total],
  ['redrive v2: E0004 state', 'done', (f) => f.redrive_v2.message.state],
  ['redrive v2: toy', 3000, (f) => f.redrive_v2.totals.toy ?? 0],
  ['redrive v2: total', 20000, (f) => f.redrive_v2.total],
  ['redrive v2: done', 4, (f) => f.redrive_v2.messages.done],
  ['redrive v2: dead', 0, (f) => f.redrive_v2.messages.dead],
];

/** Compares the measured figures with docs/protocol.md §6, one {@link Check} per figure. */
export function checkFigures(figures: DemoFigures): Check[] {
  return EXPECTED.map(([name, expected, read]) => {
    const actual = read(figures);
    return { name, expected, actual, ok: actual === expected };
  });
}
