/**
 * The steps of the model-based test, as fast-check arbitraries. Each step names what to
 * do in terms both sides understand (indices into the ids, payloads and the leases
 * handed out so far), so one generated sequence runs on the real store and on the model.
 */
import fc from 'fast-check';
import { type HandlerChoice, KEYS, PAYLOADS } from './reference.ts';

/** A small id space, so duplicates, conflicts and re-claims happen often. */
export const IDS = ['E0001', 'E0002', 'E0003', 'E0004', 'E0005', 'E0006'] as const;

/**
 * How an apply ends: normally; with a crash before COMMIT (a throw inside the
 * transaction: everything rolls back); or with a crash after COMMIT (the reply is lost:
 * the caller never learns the outcome, the store keeps it).
 */
export type Crash = 'none' | 'before-commit' | 'reply-lost';

export type Step =
  | { t: 'enqueue'; lines: [number, number][]; key: number }
  | { t: 'claim'; limit: number; lease: number }
  | { t: 'apply'; lease: number; handler: HandlerChoice; crash: Crash }
  | { t: 'completeMany'; leases: number[]; handlers: HandlerChoice[]; crash: Crash }
  | { t: 'fail'; lease: number; kind: 'temporary' | 'permanent' }
  | {
      t: 'advance';
      to: 'plus1' | 'plus2' | 'lease-boundary' | 'lease-boundary-1' | 'available';
      pick: number;
    }
  | { t: 'redrive'; ids: number[] | 'all' }
  | { t: 'skip'; ids: number[] };

const handler = fc.constantFrom<HandlerChoice>('v1', 'v2', 'temporary', 'permanent', 'throw');
const crash = fc.constantFrom<Crash>('none', 'none', 'before-commit', 'reply-lost');
const id = fc.nat({ max: IDS.length - 1 });
const lease = fc.nat({ max: 30 });

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('enqueue' as const),
      lines: fc.array(fc.tuple(id, fc.nat({ max: PAYLOADS.length - 1 })), {
        minLength: 1,
        maxLength: 3,
      }),
      key: fc.nat({ max: KEYS.length - 1 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      limit: fc.integer({ min: 1, max: 3 }),
      lease: fc.constantFrom(2, 5),
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('apply' as const), lease, handler, crash }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('completeMany' as const),
      leases: fc.array(lease, { minLength: 1, maxLength: 3 }),
      handlers: fc.array(handler, { minLength: 3, maxLength: 3 }),
      crash,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('fail' as const),
      lease,
      kind: fc.constantFrom('temporary' as const, 'permanent' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('advance' as const),
      to: fc.constantFrom(
        'plus1' as const,
        'plus2' as const,
        'lease-boundary' as const,
        'lease-boundary-1' as const,
        'available' as const,
      ),
      pick: fc.nat({ max: 10 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('redrive' as const),
      ids: fc.oneof(
        fc.constant('all' as const),
        fc.uniqueArray(id, { minLength: 1, maxLength: 2 }),
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('skip' as const),
      ids: fc.uniqueArray(id, { minLength: 1, maxLength: 2 }),
    }),
  },
);
