/**
 * Two edges the mutation run (`bun run mutation`) found untested, on both backends:
 * redriving some dead messages leaves the other dead ones dead, and a lease naming an
 * event id the store does not have is refused (lease lost) with nothing written.
 */
import { describe, expect, test } from 'bun:test';
import {
  apply,
  dlq,
  enqueue,
  fail,
  LeaseLostError,
  redrive,
  show,
  work,
} from '../packages/core/src/index.ts';
import { handlers } from '../packages/handler/src/index.ts';
import { enqueueDemo, freshStore, rejection, snapshot } from './conformance/harness.ts';
import {
  type BackendFactory,
  batch,
  line,
  paid,
  postgresFactory,
  sqliteFactory,
} from './support/factories.ts';

const REQUIRED = process.env.ONCEQ_REQUIRE_POSTGRES === '1';

function edges(factory: BackendFactory): void {
  const available = factory.available();
  const skip = available !== true && !REQUIRED;
  if (skip) console.warn(`protocol-edges.test.ts: ${factory.name} skipped: ${available}`);
  describe.skipIf(skip)(`${factory.name}: protocol edges`, () => {
    const env = freshStore(factory);

    test('redriving one dead message leaves the other dead messages dead', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('toy', 100)), line('E0002', paid('toy', 200))));
      await work(store, handlers.v1);
      expect((await dlq(store)).map((m) => m.eventId)).toEqual(['E0001', 'E0002']);
      expect(await redrive(store, ['E0002'])).toEqual(['E0002']);
      expect((await show(store, 'E0001')).state).toBe('dead');
      expect((await show(store, 'E0002')).state).toBe('ready');
    });

    test('a lease for an event id the store does not have: lease lost, nothing written', async () => {
      const { store } = env();
      await enqueueDemo(store);
      const before = await snapshot(store);
      const ghost = { eventId: 'E0999', generation: 1 };
      const applied = await rejection(apply(store, ghost, handlers.v1), LeaseLostError);
      expect(applied.message).toContain('no such message');
      await rejection(fail(store, ghost, { kind: 'permanent', code: 'x' }), LeaseLostError);
      expect(await snapshot(store)).toEqual(before);
    });
  });
}

edges(sqliteFactory);
edges(postgresFactory);
