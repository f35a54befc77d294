/**
 * The crash child (docs/protocol.md §6): claims the next message, begins the apply transaction,
 * inserts the effect, and dies with exit code 86 **before COMMIT**: no finally, no
 * rollback, no close. The transaction is written with Kysely directly so the process
 * dies between two statements of it, exactly where a real worker could.
 *
 * Exit codes: 86 died as planned · 3 claimed nothing or not `--expect` · 5 fence failed.
 */
import { claim, parseJson } from '../../packages/core/src/index.ts';
import { handlers } from '../../packages/handler/src/index.ts';
import { childOptions, die, openChildStore } from './child-common.ts';

const options = childOptions();
const store = await openChildStore(options);
const lease = await claim(
  store,
  options.lease === undefined ? {} : { leaseSeconds: options.lease },
);
if (lease === null) die('crash child: nothing to claim', 3);
if (options.expect !== undefined && lease.eventId !== options.expect) {
  die(`crash child: claimed ${lease.eventId}, expected ${options.expect}`, 3);
}

await store.writeTransaction(async (trx) => {
  const now = store.clock();
  const row = await trx
    .selectFrom('messages')
    .select(['payload', 'state', 'generation', 'lease_until'])
    .where('event_id', '=', lease.eventId)
    .executeTakeFirst();
  if (
    row === undefined ||
    row.state !== 'leased' ||
    Number(row.generation) !== lease.generation ||
    now >= Number(row.lease_until)
  ) {
    die(`crash child: the lease on ${lease.eventId} does not hold`, 5);
  }
  const effect = handlers.v1(parseJson(row.payload) as never, {
    eventId: lease.eventId,
    attempt: lease.attempt,
    generation: lease.generation,
  });
  await trx
    .insertInto('effects')
    .values({
      event_id: lease.eventId,
      category: effect.category,
      amount_cents: effect.amountCents,
      created_at: now,
    })
    .execute();
  // The worker dies here: the effect is inserted, the ACK and the COMMIT never happen.
  process.exit(86);
});
