/**
 * The onceq conformance suite: written once, run against every backend (River's
 * `riverdrivertest.Exercise` pattern). A backend change extends this suite first.
 *
 * Every test gets a fresh, empty store from the factory on a model clock at 1000; only
 * the clock is modelled. Nothing here may ask which backend it runs on: differences come
 * through the {@link BackendFactory}.
 */
import type { BackendFactory } from '../support/factories.ts';
import { applySuite } from './apply.ts';
import { applyFaultsSuite } from './apply-faults.ts';
import { batchSuite } from './batch.ts';
import { claimSuite } from './claim.ts';
import { enqueueSuite } from './enqueue.ts';
import { failuresSuite } from './failures.ts';
import { fenceSuite } from './fence.ts';
import { leaseServiceSuite } from './lease-service.ts';
import { listSuite } from './list.ts';
import { processesSuite } from './processes.ts';
import { redriveSuite } from './redrive.ts';
import { storySuite } from './story.ts';

export function exerciseBackend(name: string, factory: BackendFactory): void {
  enqueueSuite(name, factory);
  claimSuite(name, factory);
  applySuite(name, factory);
  applyFaultsSuite(name, factory);
  failuresSuite(name, factory);
  fenceSuite(name, factory);
  leaseServiceSuite(name, factory);
  redriveSuite(name, factory);
  listSuite(name, factory);
  batchSuite(name, factory);
  processesSuite(name, factory);
  storySuite(name, factory);
}
