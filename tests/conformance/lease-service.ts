import { describe, expect, test } from 'bun:test';
import { apply, claim, enqueue, extend, fail, LeaseLostError, show } from '@onceq/core';
import { queueSnapshot } from '@onceq/core/admin';
import { extendMany, release, releaseMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { effectsOf, freshStore, mustClaim, rejection, snapshot } from './harness.ts';

/** extend (the heartbeat) and release (a graceful shutdown's give-back), both fenced. */
export function leaseServiceSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: extend`, () => {
    const env = freshStore(factory);

    test('extends a held lease to now + seconds, and the holder can still ACK after the old lease_until', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store, { leaseSeconds: 2 }); // lease_until 1002
      clock.set(1001);
      expect(await extend(store, lease, 5)).toEqual({
        eventId: 'E0001',
        generation: lease.generation,
        leaseUntil: 1006,
      });
      clock.set(1004); // past the original lease_until
      expect(await claim(store)).toBeNull(); // not recovered: the lease still holds
      expect((await apply(store, lease, handlers.v1)).outcome).toBe('done');
    });

    test('refuses a stale generation, an expired lease and a message that is not leased, changing nothing', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(store, { leaseSeconds: 2 });
      clock.set(1002); // expired: the boundary itself (now == lease_until) is refused
      let before = await snapshot(store);
      const expired = await rejection(extend(store, old, 30), LeaseLostError);
      expect(expired.message).toContain('expired');
      expect(await snapshot(store)).toEqual(before);

      const current = await mustClaim(store); // E0001 again, generation 2
      expect(current.generation).toBe(old.generation + 1);
      before = await snapshot(store);
      const stale = await rejection(extend(store, old, 30), LeaseLostError);
      expect([stale.code, stale.exitCode]).toEqual(['lease_lost', 4]);
      expect(stale.message).toContain('a newer claim owns it');
      expect(await snapshot(store)).toEqual(before);

      await apply(store, current, handlers.v1);
      before = await snapshot(store);
      const done = await rejection(extend(store, current, 30), LeaseLostError);
      expect(done.message).toContain('is done, not leased');
      expect(await snapshot(store)).toEqual(before);
    });

    test('extendMany extends the held leases of a batch and reports the lost ones', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 1)), line('E0002', paid('pen', 2))));
      const a = await mustClaim(store, { leaseSeconds: 10 });
      const b = await mustClaim(store, { leaseSeconds: 10 });
      await apply(store, b, handlers.v1);
      clock.set(1005);
      const { extended, lost } = await extendMany(store, [a, b], 10);
      expect(extended).toEqual([
        { eventId: a.eventId, generation: a.generation, leaseUntil: 1015 },
      ]);
      expect(lost.map((l) => l.eventId)).toEqual([b.eventId]);
      expect((await show(store, a.eventId)).leaseUntil).toBe(1015);
    });
  });

  describe(`${name}: release`, () => {
    const env = freshStore(factory);

    test('gives the message back ready now with its attempt returned, generation kept bumped', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store);
      expect(lease.attempt).toBe(1);
      await release(store, lease);
      const stored = await show(store, 'E0001');
      expect([stored.state, stored.attempts, stored.generation, stored.leaseUntil]).toEqual([
        'ready',
        0,
        lease.generation,
        null,
      ]);
      expect(stored.availableAt).toBe(1000);
      // The releasing holder can no longer ACK, not even before anyone claims again.
      await rejection(apply(store, lease, handlers.v1), LeaseLostError);
      const next = await mustClaim(store);
      expect([next.eventId, next.attempt, next.generation]).toEqual([
        'E0001',
        1,
        lease.generation + 1,
      ]);
      await rejection(apply(store, lease, handlers.v1), LeaseLostError);
      await apply(store, next, handlers.v1);
      expect(await effectsOf(store)).toHaveLength(1);
    });

    test('refuses a stale generation, an expired lease and a released lease, changing nothing', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const old = await mustClaim(store, { leaseSeconds: 2 });
      clock.set(1002);
      let before = await snapshot(store);
      await rejection(release(store, old), LeaseLostError); // expired at the boundary
      expect(await snapshot(store)).toEqual(before);

      const current = await mustClaim(store);
      before = await snapshot(store);
      await rejection(release(store, old), LeaseLostError); // stale generation
      expect(await snapshot(store)).toEqual(before);

      await release(store, current);
      before = await snapshot(store);
      const again = await rejection(release(store, current), LeaseLostError); // now ready
      expect(again.message).toContain('is ready, not leased');
      expect(await snapshot(store)).toEqual(before);
    });

    test('releaseMany releases the held leases and reports the lost ones', async () => {
      const { store } = env();
      await enqueue(store, batch(line('E0001', paid('book', 1)), line('E0002', paid('pen', 2))));
      const a = await mustClaim(store);
      const b = await mustClaim(store);
      await apply(store, a, handlers.v1);
      const { released, lost } = await releaseMany(store, [a, b]);
      expect(released).toEqual([b.eventId]);
      expect(lost.map((l) => l.eventId)).toEqual([a.eventId]);
      expect((await show(store, b.eventId)).state).toBe('ready');
    });
  });

  describe(`${name}: queue snapshot`, () => {
    const env = freshStore(factory);

    test('reports counts, money and the oldest ready and dead times in one consistent read', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 5))));
      clock.set(1003);
      await enqueue(store, batch(line('E0003', paid('bag', 7))));
      let snap = await queueSnapshot(store);
      expect([snap.oldestReadyAt, snap.oldestDeadAt, snap.now]).toEqual([1000, null, 1003]);
      const a = await mustClaim(store); // E0001
      await apply(store, a, handlers.v1);
      const b = await mustClaim(store); // E0002
      clock.set(1004);
      await fail(store, b, { kind: 'permanent', code: 'manual' });
      clock.set(1010);
      snap = await queueSnapshot(store);
      expect(snap.report).toEqual({
        messages: { ready: 1, leased: 0, done: 1, dead: 1 },
        effects: 1,
        totals: { book: 100 },
        total: 100,
      });
      expect([snap.oldestReadyAt, snap.oldestDeadAt]).toEqual([1003, 1004]);
      // A ready message still in backoff is not "waiting": it is not claimable yet.
      const c = await mustClaim(store); // E0003
      await fail(store, c, { kind: 'temporary', code: 'down' }); // ready at 1011
      expect((await queueSnapshot(store)).oldestReadyAt).toBeNull();
    });
  });
}
