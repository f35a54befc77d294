/**
 * A competing client: claims one message at a time until nothing is claimable, then
 * prints the leases it got as JSON (`["E0001@1", …]`). Exits non-zero on any error.
 */
import { claim } from '@onceq/core';
import { childOptions, openChildStore, waitForStart } from './child-common.ts';

const options = childOptions();
const store = await openChildStore(options);
await waitForStart(options);
const got: string[] = [];
for (;;) {
  const lease = await claim(
    store,
    options.lease === undefined ? {} : { leaseSeconds: options.lease },
  );
  if (lease === null) break;
  got.push(`${lease.eventId}@${lease.generation}`);
}
await store.close();
console.log(JSON.stringify(got));
