/**
 * The crash child (docs/protocol.md §6): claims the next message and runs the **real** `apply` on it
 * with the crash point `after-effect-insert` armed (packages/core/src/testing/crash-points.ts): the
 * process exits with code 86 inside the apply transaction, after the effect INSERT and
 * before the ACK and COMMIT: no finally, no rollback, no close. No second copy of the
 * protocol: the fence, the handler call and the INSERT are apply's own.
 *
 * Exit codes: 86 died as planned · 3 claimed nothing or not `--expect` · 5 apply returned
 * (the crash point was never reached).
 */

// Arm the point before @onceq/core loads: it reads ONCEQ_FAULT once, at module load.
process.env.ONCEQ_FAULT = 'after-effect-insert';
const { apply, claim } = await import('@onceq/core');
const { handlers } = await import('@onceq/handler');
const { childOptions, die, openChildStore } = await import('./child-common.ts');

const options = childOptions();
const store = await openChildStore(options);
const lease = await claim(
  store,
  options.lease === undefined ? {} : { leaseSeconds: options.lease },
);
if (lease === null) die('crash child: nothing to claim', 3);
else if (options.expect !== undefined && lease.eventId !== options.expect) {
  die(`crash child: claimed ${lease.eventId}, expected ${options.expect}`, 3);
} else {
  await apply(store, lease, handlers.v1);
  die(`crash child: apply of ${lease.eventId} returned; the crash point was never reached`, 5);
}

export {};
