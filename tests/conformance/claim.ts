import { describe, expect, test } from 'bun:test';
import { apply, claim, enqueue, fail, LeaseLostError, show, status } from '@onceq/core';
import { claimMany } from '@onceq/core/internal';
import { handlers } from '@onceq/handler';
import { type BackendFactory, batch, line, paid } from '../support/factories.ts';
import { effectsOf, enqueueDemo, freshStore, mustClaim, rejection, snapshot } from './harness.ts';

export function claimSuite(name: string, factory: BackendFactory): void {
  describe(`${name}: claim and lease`, () => {
    const env = freshStore(factory);

    test('claims in (available_at, event_id) order, not in input order', async () => {
      const { store, clock } = env();
      clock.set(999);
      await enqueue(store, batch(line('E0009', paid('bag', 9))));
      clock.set(1000);
      await enqueue(
        store,
        batch(
          line('E0003', paid('book', 3)),
          line('E0001', paid('book', 1)),
          line('E0002', paid('pen', 2)),
        ),
      );
      const order: string[] = [];
      for (let lease = await claim(store); lease !== null; lease = await claim(store)) {
        order.push(lease.eventId);
      }
      expect(order).toEqual(['E0009', 'E0001', 'E0002', 'E0003']);
    });

    test('a claim sets leased, attempts+1, generation+1 and lease_until = now + lease', async () => {
      const { store } = env();
      await enqueueDemo(store);
      const lease = await mustClaim(store, { leaseSeconds: 7 });
      expect(lease).toMatchObject({
        eventId: 'E0001',
        generation: 1,
        attempt: 1,
        leaseUntil: 1007,
      });
      expect(JSON.parse(lease.payload)).toEqual({ amount_cents: 10000, category: 'book' });
      expect(Object.isFrozen(lease)).toBe(true);
      const row = await show(store, 'E0001');
      expect([row.state, row.attempts, row.generation, row.leaseUntil]).toEqual([
        'leased',
        1,
        1,
        1007,
      ]);
    });

    test('nothing claimable returns null: empty store, only future messages, everything done', async () => {
      const { store, clock } = env();
      expect(await claim(store)).toBeNull();
      await enqueue(store, batch(line('E0001', paid('book', 1))));
      await fail(store, await mustClaim(store), { kind: 'temporary', code: 'down' });
      const before = await snapshot(store);
      expect(await claim(store)).toBeNull(); // ready, but available only at 1001
      expect(await snapshot(store)).toEqual(before);
      clock.set(1001);
      await apply(store, await mustClaim(store), handlers.v1);
      expect(await claim(store)).toBeNull();
    });

    test('one second before lease_until the lease holds: no second claim, and apply succeeds', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store); // lease_until 1030
      clock.set(lease.leaseUntil - 1);
      expect(await claim(store)).toBeNull();
      expect(await apply(store, lease, handlers.v1)).toMatchObject({ outcome: 'done' });
      expect(await effectsOf(store)).toEqual([
        { eventId: 'E0001', category: 'book', amountCents: 100 },
      ]);
    });

    test('at now == lease_until the lease has expired: apply is lease lost, a new claim gets generation+1', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const first = await mustClaim(store);
      clock.set(first.leaseUntil);
      const error = await rejection(apply(store, first, handlers.v1), LeaseLostError);
      expect(error.eventId).toBe('E0001');
      expect(await effectsOf(store)).toEqual([]);
      const second = await mustClaim(store);
      expect(second).toMatchObject({ eventId: 'E0001', generation: 2, attempt: 2 });
      expect(second.leaseUntil).toBe(first.leaseUntil + 30);
      await apply(store, second, handlers.v1);
      expect((await status(store)).total).toBe(100);
    });

    test('an expired lease is recovered only by a claim: until then status still shows it leased', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      const lease = await mustClaim(store, { leaseSeconds: 2 });
      clock.set(1500);
      expect((await status(store)).messages.leased).toBe(1);
      const stored = await show(store, 'E0001');
      expect([stored.state, stored.leaseUntil, stored.generation]).toEqual(['leased', 1002, 1]);
      const next = await mustClaim(store);
      expect([next.eventId, next.generation]).toEqual(['E0001', lease.generation + 1]);
    });

    test('a recovered message becomes ready, available at its old lease_until, with lease_expired', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      await mustClaim(store, { leaseSeconds: 2 }); // E0001 leased until 1002
      clock.set(1001);
      await enqueue(store, batch(line('E0002', paid('pen', 200)))); // available at 1001
      clock.set(1005);
      // The claim recovers E0001 (available 1002) but picks E0002 (available 1001) first.
      expect((await mustClaim(store)).eventId).toBe('E0002');
      const recovered = await show(store, 'E0001');
      expect(recovered).toMatchObject({
        state: 'ready',
        availableAt: 1002,
        leaseUntil: null,
        attempts: 1,
        generation: 1,
        lastErrorCode: 'lease_expired',
      });
    });

    test('a message recovered by a claim ranks at its old lease_until: ahead of a later ready one, in the same claim', async () => {
      const { store, clock } = env();
      await enqueue(store, batch(line('E0001', paid('book', 100))));
      await mustClaim(store, { leaseSeconds: 2 }); // E0001 leased until 1002
      clock.set(1003);
      await enqueue(store, batch(line('E0002', paid('pen', 200)))); // available at 1003
      clock.set(1005);
      const leases = await claimMany(store, { limit: 2 });
      expect(leases.map((l) => [l.eventId, l.generation, l.attempt])).toEqual([
        ['E0001', 2, 2],
        ['E0002', 1, 1],
      ]);
      // What recovery wrote stays visible on the re-claimed row.
      expect(await show(store, 'E0001')).toMatchObject({
        state: 'leased',
        availableAt: 1002,
        leaseUntil: 1035,
        lastErrorCode: 'lease_expired',
        lastErrorDetail: 'the lease expired before an ACK; retried',
      });
    });

    test('a claim of one recovers every expired lease: the rest go back to ready, or dead on their last attempt', async () => {
      const { store, clock } = env();
      // E0003 spends two attempts first (ready again at 1001, then at 1003).
      await enqueue(store, batch(line('E0003', paid('bag', 300))));
      for (const at of [1000, 1001]) {
        clock.set(at);
        await fail(store, await mustClaim(store), { kind: 'temporary', code: 'busy' });
      }
      clock.set(1003);
      await enqueue(
        store,
        batch(line('E0001', paid('book', 100)), line('E0002', paid('pen', 200))),
      );
      const all = await claimMany(store, { limit: 3, leaseSeconds: 5 }); // leased until 1008
      expect(all.map((l) => [l.eventId, l.attempt])).toEqual([
        ['E0001', 1],
        ['E0002', 1],
        ['E0003', 3],
      ]);
      clock.set(1010);
      const leases = await claimMany(store, { limit: 1 });
      expect(leases.map((l) => [l.eventId, l.generation])).toEqual([['E0001', 2]]);
      const rows = await Promise.all(['E0001', 'E0002', 'E0003'].map((id) => show(store, id)));
      expect(
        rows.map((m) => [m.eventId, m.state, m.attempts, m.availableAt, m.lastErrorCode]),
      ).toEqual([
        ['E0001', 'leased', 2, 1008, 'lease_expired'],
        ['E0002', 'ready', 1, 1008, 'lease_expired'],
        ['E0003', 'dead', 3, 1003, 'lease_expired'],
      ]);
      expect(rows[2]?.lastErrorDetail).toBe('the lease expired before an ACK on the last attempt');
    });
  });
}
