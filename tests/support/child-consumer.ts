/**
 * A consumer process: runs the worker loop (`work`) with handler `--handler` (default v1)
 * until nothing is claimable now, then prints its summary as JSON.
 */
import { work } from '../../packages/core/src/index.ts';
import { handlers, isHandlerVersion } from '../../packages/handler/src/index.ts';
import { childOptions, openChildStore, waitForStart } from './child-common.ts';

const options = childOptions();
const store = await openChildStore(options);
await waitForStart(options);
const version = options.handler ?? 'v1';
if (!isHandlerVersion(version)) throw new Error(`unknown handler version ${version}`);
const summary = await work(store, handlers[version], {
  ...(options.lease === undefined ? {} : { leaseSeconds: options.lease }),
});
await store.close();
console.log(JSON.stringify(summary));
